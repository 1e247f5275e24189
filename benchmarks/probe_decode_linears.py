"""Probe: the decode's linear maps at 8 and 64 rows, cuBLAS against a Triton kernel,
on a GPU.

    python benchmarks/probe_decode_linears.py --json benchmarks/results/probe_decode_linears_h200.json
    python benchmarks/probe_decode_linears.py --rows 8 --quick      # fewer tilings

At decode batch 8 the merged copy's linear maps read their weights at under half the card's copy
bandwidth (docs/training.md). This times, for Qwen3-1.7B's fused shapes (q/k/v, o, gate/up, down, the
LM head):
  * each product alone (triton.testing.do_bench, the L2 cache flushed between runs), by tiling;
  * a whole decode step's products, 28 layers of distinct weights and the head, replayed as one CUDA
    graph: cuBLAS (F.linear), the Triton kernel at each shape's fastest tiling, and inductor's
    max-autotune choice per shape (`--inductor`); and again on a stream of the highest priority while
    another stream runs 8192-square products (the overlapped step's judge and update beside the decode);
and gives each as ms and TB/s of weight bytes, beside the copy bandwidth measured in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.testing import do_bench

HIDDEN, INTER, VOCAB, LAYERS = 2048, 6144, 151936, 28
SHAPES = {"qkv": (4096, HIDDEN), "o": (HIDDEN, HIDDEN), "gate_up": (2 * INTER, HIDDEN), "down": (HIDDEN, INTER),
          "lm_head": (VOCAB, HIDDEN)}
LAYER_SHAPES = ("qkv", "o", "gate_up", "down")


@triton.jit
def _skinny_kernel(x_ptr, w_ptr, y_ptr, M, N, K, stride_xm, stride_wn, stride_ym,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y = x @ w.T for a few rows of x: a program computes BLOCK_N columns for every row (padded to the 16
    the tensor cores take), streaming its rows of w along K in BLOCK_K steps that Triton pipelines."""
    pid = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ks = k + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * stride_xm + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        w = tl.load(w_ptr + cols[:, None] * stride_wn + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K),
                    other=0.0)
        acc += tl.dot(x, tl.trans(w))
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def skinny(x, w, tiling):
    block_n, block_k, warps, stages = tiling
    m, k = x.shape
    n = w.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _skinny_kernel[(triton.cdiv(n, block_n),)](x, w, y, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                                               BLOCK_M=max(16, triton.next_power_of_2(m)), BLOCK_N=block_n,
                                               BLOCK_K=block_k, num_warps=warps, num_stages=stages)
    return y


def tilings(quick: bool):
    if quick:
        return list(itertools.product((16, 32, 64), (256, 512), (4,), (3, 4)))
    return list(itertools.product((16, 32, 64), (128, 256, 512), (4, 8), (3, 4, 5)))


def copy_bandwidth() -> float:
    src = torch.empty(2 ** 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=25, rep=200)
    return 2 * src.numel() / ms / 1e9  # TB/s, bytes read and written


def beside_products(graph, carveouts, reps: int = 20, products: int = 300) -> list[dict]:
    """`graph` replayed on a stream of the highest priority while a stream of the lowest runs
    8192-square products (as the overlapped step's judge and update run beside the decode), those products
    launched with cuBLAS told to leave `carveout` multiprocessors free (torch._C._set_sm_carveout_experimental):
    a replay's time, and the products' TFLOP/s alone and beside it."""
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    high, low = torch.cuda.Stream(priority=-5), torch.cuda.Stream(priority=0)
    flop = 2 * 8192 ** 3 * products
    rows = []
    for carveout in carveouts:
        torch._C._set_sm_carveout_experimental(carveout or None)
        try:
            events = [torch.cuda.Event(enable_timing=True) for _ in range(6)]
            with torch.cuda.stream(low):  # alone
                events[0].record()
                for _ in range(products):
                    a @ a
                events[1].record()
            torch.cuda.synchronize()
            with torch.cuda.stream(low):
                events[2].record()
                for _ in range(products):
                    a @ a
                events[3].record()
            with torch.cuda.stream(high):
                events[4].record()
                for _ in range(reps):
                    graph.replay()
                events[5].record()
            torch.cuda.synchronize()
        finally:
            torch._C._set_sm_carveout_experimental(None)
        rows.append({"carveout": carveout, "replay_ms": round(events[4].elapsed_time(events[5]) / reps, 3),
                     "products_alone_tflop_s": round(flop / events[0].elapsed_time(events[1]) / 1e9, 1),
                     "products_beside_tflop_s": round(flop / events[2].elapsed_time(events[3]) / 1e9, 1)})
    return rows


def captured(fn) -> torch.cuda.CUDAGraph:
    """`fn`'s kernels as one CUDA graph (run once first, so lazy setup is not captured)."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph


def graph_ms(graph, reps: int = 20, beside: bool = False) -> float:
    """A replay's time; `beside`: on a stream of the highest priority while a stream of the lowest runs
    8192-square products (as the overlapped step's judge and update run beside the decode)."""
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    high, low = torch.cuda.Stream(priority=-5), torch.cuda.Stream(priority=0)
    if beside:
        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        with torch.cuda.stream(low):
            for _ in range(60 * reps):
                a @ a
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(high):
        start.record()
        for _ in range(reps):
            graph.replay()
        end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--quick", action="store_true", help="12 tilings instead of 54")
    parser.add_argument("--inductor", action="store_true", help="also inductor's max-autotune choice per shape")
    parser.add_argument("--carveouts", type=int, nargs="*", default=[],
                        help="multiprocessors the products beside the step leave free, e.g. 0 16 32 66")
    parser.add_argument("--blas", default=None, help="torch.backends.cuda.preferred_blas_library for the products "
                        "beside the step (cublaslt: where the carveout is cuBLASLt's SM count target)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    if args.blas:
        torch.backends.cuda.preferred_blas_library(args.blas)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "blas": str(torch.backends.cuda.preferred_blas_library()),
           "copy_tb_s": round(copy_bandwidth(), 3), "rows": {}}
    print(f"{out['device']}: copy {out['copy_tb_s']} TB/s")
    weights = {name: torch.randn(shape, dtype=torch.bfloat16, device=dev) * 0.02 for name, shape in SHAPES.items()}
    for m in args.rows:
        row = {"shapes": {}}
        best = {}
        for name, (n, k) in SHAPES.items():
            x = torch.randn(m, k, dtype=torch.bfloat16, device=dev)
            w = weights[name]
            ref = F.linear(x.float(), w.float())
            cublas = do_bench(lambda: F.linear(x, w), warmup=10, rep=50)
            timed = []
            for tiling in tilings(args.quick):
                try:
                    y = skinny(x, w, tiling)
                    err = (y.float() - ref).abs().max().item() / ref.abs().max().item()
                    if err > 2e-2:
                        continue
                    timed.append((do_bench(lambda: skinny(x, w, tiling), warmup=5, rep=25), tiling))
                except Exception as exc:  # a tiling past the shared memory: skipped, named once
                    print(f"  {name} {tiling}: {type(exc).__name__}")
            ms, tiling = min(timed)
            best[name] = tiling
            gb = n * k * 2 / 1e9
            shape = {"n": n, "k": k, "cublas_us": round(cublas * 1e3, 1), "triton_us": round(ms * 1e3, 1),
                     "cublas_tb_s": round(gb / cublas, 3), "triton_tb_s": round(gb / ms, 3),
                     "speedup": round(cublas / ms, 3), "tiling": dict(zip(("block_n", "block_k", "warps", "stages"),
                                                                          tiling))}
            if args.inductor:
                compiled = torch.compile(lambda a, b: F.linear(a, b), mode="max-autotune-no-cudagraphs", dynamic=False)
                t0 = time.perf_counter()
                compiled(x, w)
                shape["inductor_compile_s"] = round(time.perf_counter() - t0, 1)
                shape["inductor_us"] = round(do_bench(lambda: compiled(x, w), warmup=10, rep=50) * 1e3, 1)
                torch._dynamo.reset()
            row["shapes"][name] = shape
            print(f"rows {m} {name:8s} cuBLAS {shape['cublas_us']:8.1f} us ({shape['cublas_tb_s']} TB/s)  "
                  f"triton {shape['triton_us']:8.1f} us ({shape['triton_tb_s']} TB/s) x{shape['speedup']} {tiling}"
                  + (f"  inductor {shape['inductor_us']} us" if args.inductor else ""))
        # a decode step's products: distinct weights a layer (no L2 reuse), one CUDA graph
        layers = [{name: torch.randn(SHAPES[name], dtype=torch.bfloat16, device=dev) * 0.02 for name in LAYER_SHAPES}
                  for _ in range(LAYERS)]
        xs = {name: torch.randn(m, SHAPES[name][1], dtype=torch.bfloat16, device=dev) for name in SHAPES}
        step_gb = (sum(w.numel() for layer in layers for w in layer.values()) + weights["lm_head"].numel()) * 2 / 1e9

        def step(product):
            def run():
                for layer in layers:
                    for name in LAYER_SHAPES:
                        product(name, xs[name], layer[name])
                product("lm_head", xs["lm_head"], weights["lm_head"])
            return run

        ways = {"cublas": step(lambda name, x, w: F.linear(x, w)),
                "triton": step(lambda name, x, w: skinny(x, w, best[name]))}
        if args.inductor:
            compiled = {name: torch.compile(lambda a, b: F.linear(a, b), mode="max-autotune-no-cudagraphs",
                                            dynamic=False) for name in SHAPES}
            ways["inductor"] = step(lambda name, x, w: compiled[name](x, w))
        row["step_gb"] = round(step_gb, 3)
        for way, fn in ways.items():
            graph = captured(fn)
            ms = graph_ms(graph)
            row[f"step_{way}_ms"] = round(ms, 3)
            row[f"step_{way}_tb_s"] = round(step_gb / ms, 3)
            row[f"step_{way}_beside_products_ms"] = round(graph_ms(graph, beside=True), 3)
            if args.carveouts and way != "inductor":
                row[f"step_{way}_beside_carved_products"] = beside_products(graph, args.carveouts)
                print(f"rows {m} {way} beside products:", row[f"step_{way}_beside_carved_products"])
        row["step_speedup"] = round(row["step_cublas_ms"] / row["step_triton_ms"], 3)
        print(f"rows {m}: a step's products ({step_gb:.2f} GB) "
              + "  ".join(f"{way} {row[f'step_{way}_ms']} ms ({row[f'step_{way}_tb_s']} TB/s), beside 8192-square "
                          f"products {row[f'step_{way}_beside_products_ms']} ms" for way in ways))
        out["rows"][str(m)] = row
        del layers
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
