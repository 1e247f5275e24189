"""The decode's float8 products (grpo.generation_weights: fp8, salon.train.engine.fp8_linears) on a GPU: each of
Qwen3-1.7B's fused shapes against F.linear on the widened weight, then a decode step's 28 layers of products
replayed as one CUDA graph on a stream of the highest priority, cuBLAS on the bf16 weights beside the float8
kernel, alone and with 8192-square products on another stream (the overlapped step's judge and update beside the
decode: probe_decode_linears.graph_ms).

    python benchmarks/check_fp8_linears_gpu.py            # prints the differences and the times, or the error
    python benchmarks/check_fp8_linears_gpu.py --rows 64
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from probe_decode_linears import graph_ms  # benchmarks/: a replay's time, alone or beside large products
from salon.train.engine.fp8_linears import Fp8Product, widened

HIDDEN, INTER, LAYERS = 2048, 6144, 28
SHAPES = {"qkv": (4096, HIDDEN), "o": (HIDDEN, HIDDEN), "gate_up": (2 * INTER, HIDDEN), "down": (HIDDEN, INTER)}


def check(rows: int) -> bool:
    ok = True
    for name, (n, k) in SHAPES.items():
        product = Fp8Product(torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02)
        x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
        want = F.linear(x.float(), widened(product.q, product.scale, torch.float32))
        gap = ((product(x).float() - want).abs().max() / want.abs().max()).item()
        ok &= gap < 1e-2  # bf16 output, float32 sums in another order
        print(f"{name} {rows} x {k} -> {n}: max |kernel - fp32 product| / max |product| {gap:.1e}", flush=True)
    return ok


def step_graph(rows: int, fp8: bool) -> torch.cuda.CUDAGraph:
    """One decode step's products: every layer's four, on weights of their own."""
    products = []
    for _ in range(LAYERS):
        for n, k in SHAPES.values():
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
            x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
            products.append((Fp8Product(w) if fp8 else (lambda x, w=w: F.linear(x, w)), x))
    for product, x in products:  # Triton compiles, cuBLAS picks, outside the capture
        product(x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for product, x in products:
            product(x)
    return graph


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8, help="the decode's rows (default 8)")
    args = ap.parse_args()
    torch.manual_seed(0)
    ok = check(args.rows)
    weight_bytes = LAYERS * sum(n * k for n, k in SHAPES.values())
    print(f"{torch.cuda.get_device_name()}, {args.rows} rows, a step's products ({weight_bytes * 2 / 1e9:.2f} GB "
          "in bf16):", flush=True)
    for beside in (False, True):
        ms = {fp8: graph_ms(step_graph(args.rows, fp8), beside=beside) for fp8 in (False, True)}
        print(f"  {'beside 8192-square products' if beside else 'alone'}: bf16 cuBLAS {ms[False]:.3f} ms "
              f"({weight_bytes * 2 / ms[False] / 1e9:.2f} TB/s), float8 kernel {ms[True]:.3f} ms "
              f"({weight_bytes / ms[True] / 1e9:.2f} TB/s of its bytes); float8 / bf16 {ms[True] / ms[False]:.2f}",
              flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
