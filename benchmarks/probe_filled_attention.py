"""The `filled` decode attention's tile kernel under each tiling, on a GPU: bandwidth and exactness,
against the kernel as a git revision wrote it, in one run.

    python benchmarks/probe_filled_attention.py --against 9277e0d --json benchmarks/results/probe_filled_attention_tiles_h200.json
    python benchmarks/probe_filled_attention.py --batches 64 --blocks 64 --splits 256,512 --warps 4 --stages 2,3,4
    git show REV:train/engine/decode_attention.py > against.py   # for a machine with no git history
    python benchmarks/probe_filled_attention.py --against against.py

Qwen3-1.7B's attention shape (16 query heads on 8 KV heads of 128), bf16, a static cache of a 768-token
prompt bucket + 2,048 new tokens, every 8 rows one prompt (a GRPO group), prompts of 600 tokens
left-padded. For each batch and filled length (`--filled`: new tokens so far), each tiling (positions
per inner step `block`, per program `split`, `warps` per program, pipelining `stages`) is timed as
the decode runs it: calls captured in a CUDA graph, replayed `--iters` times between CUDA events,
after a warm-up that compiles it (each call on its own copy of the cache where one copy would fit in
the L2 cache). `--against REF` times the kernel of `train/engine/decode_attention.py` at
that revision too (its own default tiling; 9277e0d: one row a program, a group's prompt read from its
first row through the L2 cache), on the same tensors, and prints the ratio. Bandwidth counts the
bytes the attention must read once: each row's own new keys and values and each group's prompt once
(what `bench_generate_gpu.py`'s bound counts for a step is the whole prompt per row). Exactness: the
largest difference to SDPA in float32 over the same positions. The printout ranks tilings per shape;
the JSON holds every row.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

BUCKET, PROMPT, NEW, KV, GROUPS, DIM, GROUP_ROWS = 768, 600, 2048, 8, 2, 128, 8
ROTATE_BYTES = 256 * 2**20  # the caches one timed graph reads in turn: five times an H200's L2
ROOT = Path(__file__).resolve().parent.parent


def shape(batch: int, filled: int):
    """q, [(k, v)], mask, prompts and SDPA's float32 answer (for the first k, v) for `batch` rows with
    `filled` new tokens so far, and the bytes the attention must read once. Several copies of the
    cache where one would fit in the L2 cache (50 MB on an H200): a timed call reads memory, not L2."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(batch * 10_000 + filled)
    length = BUCKET + NEW
    q = torch.randn(batch, KV * GROUPS, 1, DIM, device="cuda", dtype=torch.bfloat16, generator=g)
    prompts = [[1 + r // GROUP_ROWS] * PROMPT for r in range(batch)]
    copies = max(1, -(-ROTATE_BYTES // (2 * batch * KV * length * DIM * 2)))
    caches = []
    for _ in range(copies):
        k = torch.randn(batch, KV, length, DIM, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(batch, KV, length, DIM, device="cuda", dtype=torch.bfloat16, generator=g)
        for r in range(batch):  # a group's rows hold its first row's prompt keys and values, as after prefill
            first = r - r % GROUP_ROWS
            k[r, :, :BUCKET], v[r, :, :BUCKET] = k[first, :, :BUCKET], v[first, :, :BUCKET]
        caches.append((k, v))
    k, v = caches[0]
    mask = torch.zeros(batch, length, dtype=torch.long, device="cuda")
    mask[:, BUCKET - PROMPT:BUCKET + filled] = 1
    want = torch.nn.functional.scaled_dot_product_attention(
        q.float().reshape(batch, KV, GROUPS, DIM), k.float(), v.float(), attn_mask=mask[:, None, None].bool(),
        scale=DIM ** -0.5).reshape(batch, 1, KV * GROUPS, DIM)
    groups = -(-batch // GROUP_ROWS)
    nbytes = (batch * filled + groups * PROMPT) * KV * DIM * 2 * k.element_size()
    return q, caches, mask, prompts, want, nbytes


def kernel_call(module, q, k, v, mask, prompts, filled: int, tiling: dict):
    """A call of `module`'s kernel (this tree's or a revision's) on these tensors with `tiling`."""
    span = module.DecodeSpan.start(mask, BUCKET, prompts)
    span.advance(BUCKET + filled)
    if hasattr(span, "slots"):  # tiles of query rows
        args = (span.mask, span.bounds, span.slots, span.kv_row)
        launch = module._tile_kernel
    else:  # one row a program (before the tiles)
        args = (span.mask, span.bounds, span.prefix_row)
        launch = module._slice_kernel
    return lambda: module.run_kernel(launch, q, k, v, *args, DIM ** -0.5, **tiling)


def time_graph(calls, iters: int) -> tuple[float, object]:
    """Microseconds a call replayed from a captured CUDA graph (as the decode runs it: one graph of
    the calls, each on its own copy of the cache), and the first call's output."""
    import torch

    calls[0]()  # compiles the kernel
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = [call() for call in calls][0]
    for _ in range(3):
        graph.replay()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        graph.replay()
    stop.record()
    torch.cuda.synchronize()
    return 1e3 * start.elapsed_time(stop) / iters / len(calls), out


def module_at(ref: str):
    """train/engine/decode_attention.py as `ref` wrote it (train/decode_attention.py before the engine had a
    room of its own), or the file `ref` names (a copy made where git is, for a machine without the
    history), loaded apart from this tree's (its op renamed, so both register)."""
    if Path(ref).is_file():
        text = Path(ref).read_text()
    else:
        for where in ("train/engine/decode_attention.py", "train/decode_attention.py"):
            shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{where}"], capture_output=True, text=True)
            if shown.returncode == 0:
                break
        else:
            raise SystemExit(f"--against {ref}: {shown.stderr.strip()}")
        text = shown.stdout
    text = text.replace('"salon::filled_decode_attention"', '"salon_against::filled_decode_attention"')
    path = Path(tempfile.mkdtemp()) / "decode_attention_against.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("decode_attention_against", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # triton.jit reads the kernels' source through the module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    import torch
    from bench_generate_gpu import copy_bandwidth

    from salon.train.engine import decode_attention as da

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="64,8")
    ap.add_argument("--filled", default="1024,2048", help="new tokens in the cache so far, per shape")
    ap.add_argument("--blocks", default="64,128")
    ap.add_argument("--splits", default="256,512,1024,4096", help="4096: one program a tile and head")
    ap.add_argument("--warps", default="4,8")
    ap.add_argument("--stages", default="2,3")
    ap.add_argument("--against", default="", help="a git revision (or a copy of the module) whose kernel is timed "
                    "beside this tree's")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available() or da.triton is None:
        print("probe_filled_attention needs a CUDA device and Triton", file=sys.stderr)
        return 2
    ints = lambda text: [int(x) for x in text.split(",") if x]  # noqa: E731
    tilings = [dict(block=b, split=s, warps=w, stages=st) for b, s, w, st in itertools.product(
        ints(args.blocks), ints(args.splits), ints(args.warps), ints(args.stages)) if s % b == 0]
    # the tiling the decode runs at each number of rows (da.split_for)
    today = {batch: {"block": da.BLOCK_N, "split": da.split_for(batch), "warps": da.NUM_WARPS,
                     "stages": da.NUM_STAGES} for batch in ints(args.batches)}
    against = module_at(args.against) if args.against else None
    bandwidth = copy_bandwidth(torch.device("cuda"))
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.2f} TB/s; {len(tilings)} tilings; "
          f"today's by rows {today}" + (f"; against {args.against}" if against else ""), flush=True)
    rows = []
    for batch, filled in itertools.product(ints(args.batches), ints(args.filled)):
        q, caches, mask, prompts, want, nbytes = shape(batch, filled)
        runs = [("this tree", da, tiling) for tiling in tilings + [today[batch]] * (today[batch] not in tilings)]
        if against is not None:
            runs.append((args.against, against, {}))
        measured = []
        for kernel, module, tiling in runs:
            try:
                us, out = time_graph([kernel_call(module, q, k, v, mask, prompts, filled, tiling) for k, v in caches],
                                     args.iters)
            except Exception as e:  # a tiling the card cannot run (shared memory, registers): say so, go on
                print(f"  batch {batch} filled {filled} {kernel} {tiling}: failed: {type(e).__name__}: "
                      f"{str(e)[:200]}", flush=True)
                continue
            row = {"batch": batch, "filled": filled, "kernel": kernel, **tiling, "us_per_call": round(us, 2),
                   "tb_per_s": round(nbytes / us / 1e6, 3),
                   "share_of_copy_bandwidth": round(nbytes / us * 1e6 / bandwidth, 4),
                   "max_abs_diff": float((out.float() - want).abs().max()),
                   "today": module is da and tiling == today[batch]}
            measured.append(row)
            rows.append(row)
        print(f" batch {batch}, {filled} new tokens ({nbytes / 1e6:.0f} MB a call):", flush=True)
        mine = [r for r in measured if r["kernel"] == "this tree"]
        base = next((r for r in measured if r["kernel"] != "this tree"), None)
        for row in sorted(mine, key=lambda r: r["us_per_call"])[:6] + [r for r in measured if r["today"]] + [base]:
            if row is None:
                continue
            tiling = (f"block {row['block']} split {row['split']} warps {row['warps']} stages {row['stages']}"
                      if "block" in row else "its own tiling")
            ratio = f", {base['us_per_call'] / row['us_per_call']:.2f}x {args.against}'s speed" if base else ""
            print(f"  {'today ' if row['today'] else ''}{row['kernel']} {tiling}: {row['us_per_call']:.1f} us, "
                  f"{row['tb_per_s']:.2f} TB/s ({row['share_of_copy_bandwidth']:.0%}), max diff "
                  f"{row['max_abs_diff']:.1e}{ratio}", flush=True)
        if args.json:  # after every shape, so a run cut short keeps what it measured
            Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(), "copy_bandwidth_tb_per_s":
                                                   round(bandwidth / 1e12, 3), "against": args.against or None,
                                                   "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
