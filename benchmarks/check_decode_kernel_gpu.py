"""The filled-cache decode kernel on a GPU: against SDPA over the whole cache, eager and under
torch.compile (reduce-overhead), Qwen3-1.7B's heads, 8 rows of one prompt plus 8 of another, over a bf16
cache and over float8 rows (fp8_cache.py, against SDPA over the rows widened); then the kernel's time a layer
at 64 rows (8 prompts), the bf16 cache and the float8 one side by side.

    python benchmarks/check_decode_kernel_gpu.py      # prints the largest differences and the times, or the error
"""

from __future__ import annotations

import traceback

import torch

from salon.train.engine.decode_attention import DecodeSpan, filled_decode_attention
from salon.train.engine.fp8_cache import quantized


def cache(batch: int, prompt: int, bucket: int, new: int, group: int = 8):
    """q, k, v, span: `batch` rows, every `group` of one prompt of `prompt` positions, `new` positions filled."""
    kv, groups, dim = 8, 2, 128
    length = bucket + 2048
    q = torch.randn(batch, kv * groups, 1, dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, kv, length, dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    prompts = [[r // group] * (prompt - 10 * (r // group)) for r in range(batch)]
    for i in range(batch):
        first = i - i % group
        k[i, :, :bucket], v[i, :, :bucket] = k[first, :, :bucket], v[first, :, :bucket]
    mask = torch.zeros(batch, length, dtype=torch.long, device="cuda")
    for i, p in enumerate(prompts):
        mask[i, bucket - len(p):bucket] = 1
    mask[:, bucket:bucket + new] = 1
    span = DecodeSpan.start(mask, bucket, prompts)
    span.advance(bucket + new)
    return q, k, v, span


def check() -> bool:
    q, k, v, span = cache(16, 600, 768, 1000)
    batch, heads, _, dim = q.shape
    ok = True
    for rows in ("bf16", "fp8"):
        keys, values = (k, v) if rows == "bf16" else (quantized(k), quantized(v))
        read_k, read_v = (k, v) if rows == "bf16" else (keys.widened(torch.float32), values.widened(torch.float32))
        want = torch.nn.functional.scaled_dot_product_attention(
            q.float().reshape(batch, k.shape[1], heads // k.shape[1], dim), read_k.float(), read_v.float(),
            attn_mask=span.mask[:, None, None].bool(), scale=dim ** -0.5).reshape(batch, 1, heads, dim)
        for name, fn in (("eager", filled_decode_attention),
                         ("compiled", torch.compile(filled_decode_attention, mode="reduce-overhead", fullgraph=True))):
            try:
                for _ in range(3):
                    got = fn(q, keys, values, span, dim ** -0.5)
                torch.cuda.synchronize()
                print(f"{rows} cache, {name}: max |kernel - fp32 SDPA| {(got.float() - want).abs().max().item():.2e}",
                      flush=True)
            except Exception:
                ok = False
                print(f"{rows} cache, {name} failed:\n" + "\n".join(traceback.format_exc().splitlines()[-25:]),
                      flush=True)
    return ok


def time_layer(repeats: int = 200) -> None:
    """The kernel's microseconds a layer at 64 rows of 8 prompts of 600 tokens, at 1,024 and 2,048 new positions."""
    for new in (1024, 2048):
        q, k, v, span = cache(64, 600, 768, new)
        us = {}
        for rows in ("bf16", "fp8"):
            keys, values = (k, v) if rows == "bf16" else (quantized(k), quantized(v))
            filled_decode_attention(q, keys, values, span, 0.1)  # Triton compiles outside the capture
            graph = torch.cuda.CUDAGraph()  # replayed as the decode step replays it: no launch gaps timed
            with torch.cuda.graph(graph):
                for _ in range(20):
                    filled_decode_attention(q, keys, values, span, 0.1)
            graph.replay()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeats // 20):
                graph.replay()
            stop.record()
            torch.cuda.synchronize()
            us[rows] = 1e3 * start.elapsed_time(stop) / (repeats // 20 * 20)
        print(f"64 rows, {new} new: bf16 {us['bf16']:.1f} us, fp8 {us['fp8']:.1f} us a layer "
              f"(fp8 / bf16 {us['fp8'] / us['bf16']:.2f})", flush=True)


def main() -> int:
    torch.manual_seed(0)
    ok = check()
    time_layer()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
