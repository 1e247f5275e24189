"""The `filled` decode attention's slice kernel under each tiling, on a GPU: bandwidth and exactness.

    python benchmarks/probe_filled_attention.py --json benchmarks/results/probe_filled_attention_h200.json
    python benchmarks/probe_filled_attention.py --batches 64 --blocks 64 --splits 256,512 --warps 4 --stages 2,3,4 --dots 1

Qwen3-1.7B's attention shape (16 query heads on 8 KV heads of 128), bf16, a static cache of a 768-token
prompt bucket + 2,048 new tokens, every 8 rows one prompt (a GRPO group: the kernel reads a group's
prompt from its first row), prompts of 600 tokens left-padded. For each batch and filled length
(`--filled`: new tokens so far), each tiling (positions per inner step `block`, per program `split`,
`warps` per program, pipelining `stages`, the products on the tensor cores or as multiply-adds `dot`)
is timed over `--iters` calls with CUDA events, after a
warm-up that compiles it. Bandwidth counts the bytes the attention must read once: each row's own
new keys and values and each group's prompt once (what `bench_generate_gpu.py`'s bound counts for a
step is the whole prompt per row). Exactness: the largest difference to SDPA in float32 over the same
positions, per tiling. The printout ranks tilings per shape; the JSON holds every row.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

BUCKET, PROMPT, NEW, KV, GROUPS, DIM, GROUP_ROWS = 768, 600, 2048, 8, 2, 128, 8


def shape(batch: int, filled: int):
    """q, k, v, the span and SDPA's float32 answer for `batch` rows with `filled` new tokens so far."""
    import torch

    from salon.train.decode_attention import DecodeSpan

    g = torch.Generator(device="cuda").manual_seed(batch * 10_000 + filled)
    length = BUCKET + NEW
    q = torch.randn(batch, KV * GROUPS, 1, DIM, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(batch, KV, length, DIM, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(batch, KV, length, DIM, device="cuda", dtype=torch.bfloat16, generator=g)
    prompts = [[1 + r // GROUP_ROWS] * PROMPT for r in range(batch)]
    for r in range(batch):  # a group's rows hold its first row's prompt keys and values, as after prefill
        first = r - r % GROUP_ROWS
        k[r, :, :BUCKET], v[r, :, :BUCKET] = k[first, :, :BUCKET], v[first, :, :BUCKET]
    mask = torch.zeros(batch, length, dtype=torch.long, device="cuda")
    mask[:, BUCKET - PROMPT:BUCKET + filled] = 1
    span = DecodeSpan.start(mask, BUCKET, prompts)
    span.advance(BUCKET + filled)
    want = torch.nn.functional.scaled_dot_product_attention(
        q.float().reshape(batch, KV, GROUPS, DIM), k.float(), v.float(), attn_mask=mask[:, None, None].bool(),
        scale=DIM ** -0.5).reshape(batch, 1, KV * GROUPS, DIM)
    groups = -(-batch // GROUP_ROWS)
    nbytes = (batch * filled + groups * PROMPT) * KV * DIM * 2 * k.element_size()
    return q, k, v, span, want, nbytes


def time_tiling(q, k, v, span, tiling: dict, iters: int) -> tuple[float, object]:
    """Microseconds a call (CUDA events over `iters` calls after a warm-up) and the last output."""
    import torch

    from salon.train import decode_attention as da

    def call():
        return da.run_kernel(da._slice_kernel, q, k, v, span.mask, span.bounds, span.prefix_row, DIM ** -0.5,
                             **tiling)

    out = call()  # compiles this tiling
    for _ in range(3):
        call()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        out = call()
    stop.record()
    torch.cuda.synchronize()
    return 1e3 * start.elapsed_time(stop) / iters, out


def main(argv: list[str] | None = None) -> int:
    import torch
    from bench_generate_gpu import copy_bandwidth

    from salon.train import decode_attention as da

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="64,8")
    ap.add_argument("--filled", default="1024,2048", help="new tokens in the cache so far, per shape")
    ap.add_argument("--blocks", default="64,128")
    ap.add_argument("--splits", default="256,512,1024,4096", help="4096: one program a row and head")
    ap.add_argument("--warps", default="4,8")
    ap.add_argument("--stages", default="3", help="e.g. 2,3,4")
    ap.add_argument("--dots", default="1,0", help="1: products on the tensor cores; 0: multiply-adds")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available() or da.triton is None:
        print("probe_filled_attention needs a CUDA device and Triton", file=sys.stderr)
        return 2
    ints = lambda text: [int(x) for x in text.split(",") if x]  # noqa: E731
    today = {"block": da.BLOCK_N, "split": da.SPLIT, "warps": da.NUM_WARPS, "stages": da.NUM_STAGES, "dot": da.DOT}
    tilings = [dict(block=b, split=s, warps=w, stages=st, dot=bool(d))
               for b, s, w, st, d in itertools.product(ints(args.blocks), ints(args.splits), ints(args.warps),
                                                       ints(args.stages), ints(args.dots)) if s % b == 0]
    if today not in tilings:
        tilings.insert(0, today)
    bandwidth = copy_bandwidth(torch.device("cuda"))
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.2f} TB/s; {len(tilings)} tilings; "
          f"today's {today}", flush=True)
    rows = []
    for batch, filled in itertools.product(ints(args.batches), ints(args.filled)):
        q, k, v, span, want, nbytes = shape(batch, filled)
        measured = []
        for tiling in tilings:
            try:
                us, out = time_tiling(q, k, v, span, tiling, args.iters)
            except Exception as e:  # a tiling the card cannot run (shared memory, registers): say so, go on
                print(f"  batch {batch} filled {filled} {tiling}: failed: {type(e).__name__}: {str(e)[:200]}",
                      flush=True)
                continue
            row = {"batch": batch, "filled": filled, **tiling, "us_per_call": round(us, 2),
                   "tb_per_s": round(nbytes / us / 1e6, 3), "share_of_copy_bandwidth": round(nbytes / us * 1e6 / bandwidth, 4),
                   "max_abs_diff": float((out.float() - want).abs().max()), "today": tiling == today}
            measured.append(row)
            rows.append(row)
        print(f" batch {batch}, {filled} new tokens ({nbytes / 1e6:.0f} MB a call):", flush=True)
        for row in sorted(measured, key=lambda r: r["us_per_call"])[:6] + [r for r in measured if r["today"]]:
            print(f"  {'today ' if row['today'] else ''}block {row['block']} split {row['split']} warps "
                  f"{row['warps']} stages {row['stages']} {'dot' if row['dot'] else 'fma'}: {row['us_per_call']:.1f} us, "
                  f"{row['tb_per_s']:.2f} TB/s "
                  f"({row['share_of_copy_bandwidth']:.0%}), max diff {row['max_abs_diff']:.1e}", flush=True)
        if args.json:  # after every shape, so a run cut short keeps what it measured
            Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(), "copy_bandwidth_tb_per_s":
                                                   round(bandwidth / 1e12, 3), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
