"""How fast can one decode token attend a static KV cache cut at a bucket? Ways side by side, on a GPU.

    python benchmarks/probe_decode_attention.py [--batches 8,64] [--lengths 1024,1792,2648] [--json FILE]

Qwen3-1.7B's attention shapes (16 query heads over 8 KV heads of 128, 28 layers), bf16, one query
token per row, left padding masked. Each way runs for 28 layers (a KV cache of its own per layer, so
the reads come from memory, not L2) inside one compiled function, captured in a CUDA graph and replayed;
ms per decode step is the replay's time. The ways:
  sdpa_grouped   SDPA with a group's query heads as query rows: (B, KV, G, D) against (B, KV, L, D)
                 (what salon's decode attention was before); B x KV programs at most
  matmul         salon.train.engine.decode.grouped_decode_attention itself: scores by a batched matmul, the
                 masked softmax in float32, a second matmul for values; cuBLAS tiles the L positions,
                 so the reads spread over the whole card
  flex           torch's flex_attention with the mask as a score_mod (its decoding kernel splits the keys)
Prints the ms per step and the bytes read per step against the copy bandwidth, and each way's largest
difference from sdpa_grouped.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F

LAYERS, KV, GROUPS, DIM = 28, 8, 2, 128


def sdpa_grouped(q, k, v, mask):
    batch = q.shape[0]
    out = F.scaled_dot_product_attention(q.reshape(batch, KV, GROUPS, DIM), k, v, attn_mask=mask[:, None, None, :])
    return out.reshape(batch, 1, KV * GROUPS, DIM)


class _Layer:
    num_key_value_groups = GROUPS  # what grouped_decode_attention reads off the attention module


def matmul(q, k, v, mask):
    from salon.train.engine.decode import grouped_decode_attention

    return grouped_decode_attention(_Layer, q, k, v, mask[:, None, None, :])[0]


def flex(q, k, v, mask):
    from torch.nn.attention.flex_attention import flex_attention

    def keep(score, b, h, q_idx, kv_idx):
        return torch.where(mask[b, kv_idx], score, -math.inf)

    out = flex_attention(q, k, v, score_mod=keep, enable_gqa=True)
    return out.transpose(1, 2)


WAYS = {"sdpa_grouped": sdpa_grouped, "matmul": matmul, "flex": flex}


def copy_bandwidth() -> float:
    x = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        y.copy_(x)
    end.record()
    torch.cuda.synchronize()
    return 2 * x.numel() * 10 / (start.elapsed_time(end) / 1e3)


def time_way(way, batch: int, length: int, filled: int) -> tuple[float, torch.Tensor]:
    gen = torch.Generator(device="cuda").manual_seed(0)
    caches = [(torch.randn(batch, KV, length, DIM, device="cuda", dtype=torch.bfloat16, generator=gen),
               torch.randn(batch, KV, length, DIM, device="cuda", dtype=torch.bfloat16, generator=gen))
              for _ in range(LAYERS)]
    q = torch.randn(batch, KV * GROUPS, 1, DIM, device="cuda", dtype=torch.bfloat16, generator=gen)
    mask = torch.zeros(batch, length, dtype=torch.bool, device="cuda")
    for b in range(batch):  # left padding of a few tokens per row, positions past `filled` empty
        mask[b, 8 * b:filled] = True

    def step(q):
        outs = [way(q, k, v, mask) for k, v in caches]
        return torch.stack(outs)

    torch._dynamo.reset()  # every (way, shape) is a new `step`: its compilations must not add up to the recompile limit
    compiled = torch.compile(step, fullgraph=True, dynamic=False)
    for _ in range(3):
        out = compiled(q)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = compiled(q)
    for _ in range(3):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 20, out.float().clone()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="8,64")
    ap.add_argument("--lengths", default="1024,1792,2648")
    ap.add_argument("--ways", default=",".join(WAYS))
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    bandwidth = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.2f} TB/s", flush=True)
    rows = []
    for batch in map(int, args.batches.split(",")):
        for length in map(int, args.lengths.split(",")):
            read = LAYERS * 2 * batch * KV * length * DIM * 2
            ref = None
            for name in args.ways.split(","):
                try:
                    ms, out = time_way(WAYS[name], batch, length, length)
                except Exception as e:  # one way failing leaves the others measured
                    print(f"  batch {batch:3d} keys {length:5d} {name:13s} failed: {type(e).__name__}: {str(e)[:300]}",
                          flush=True)
                    continue
                ref = out if ref is None else ref
                diff = (out - ref).abs().max().item()
                share = read / (ms / 1e3) / bandwidth
                rows.append({"batch": batch, "keys": length, "way": name, "ms_per_step": round(ms, 4),
                             "share_of_copy_bandwidth": round(share, 4), "max_abs_diff": diff})
                print(f"  batch {batch:3d} keys {length:5d} {name:13s} {ms:7.3f} ms a step (28 layers), "
                      f"{share:6.1%} of the copy bandwidth, max |diff| {diff:.2e}", flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
