"""The filled-cache decode kernel on a GPU: against SDPA over the whole cache, eager and under
torch.compile (reduce-overhead), bf16, Qwen3-1.7B's heads, 8 rows of one prompt plus 8 of another.

    python benchmarks/check_decode_kernel_gpu.py      # prints the largest differences, or the error
"""

from __future__ import annotations

import traceback

import torch

from salon.train.engine.decode_attention import DecodeSpan, filled_decode_attention


def main() -> int:
    torch.manual_seed(0)
    batch, kv, groups, length, dim, bucket = 16, 8, 2, 768 + 2048, 128, 768
    q = torch.randn(batch, kv * groups, 1, dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, kv, length, dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    prompts = [[1] * 600] * 8 + [[2] * 590] * 8
    for i in range(1, 8):
        k[i, :, :bucket], v[i, :, :bucket] = k[0, :, :bucket], v[0, :, :bucket]
        k[8 + i, :, :bucket], v[8 + i, :, :bucket] = k[8, :, :bucket], v[8, :, :bucket]
    mask = torch.zeros(batch, length, dtype=torch.long, device="cuda")
    for i, p in enumerate(prompts):
        mask[i, bucket - len(p):bucket] = 1
    end = bucket + 1000
    mask[:, bucket:end] = 1
    span = DecodeSpan.start(mask, bucket, prompts)
    span.advance(end)
    want = torch.nn.functional.scaled_dot_product_attention(
        q.float().reshape(batch, kv, groups, dim), k.float(), v.float(), attn_mask=mask[:, None, None].bool(),
        scale=dim ** -0.5).reshape(batch, 1, kv * groups, dim)
    ok = True
    for name, fn in (("eager", filled_decode_attention),
                     ("compiled", torch.compile(filled_decode_attention, mode="reduce-overhead", fullgraph=True))):
        try:
            for _ in range(3):
                got = fn(q, k, v, span, dim ** -0.5)
            torch.cuda.synchronize()
            print(f"{name}: max |kernel - fp32 SDPA| {(got.float() - want).abs().max().item():.2e}", flush=True)
        except Exception:
            ok = False
            print(f"{name} failed:\n" + "\n".join(traceback.format_exc().splitlines()[-25:]), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
