"""Probe: a decode step beside large matrix products, with the card's multiprocessors split between them
(CUDA green contexts, salon.train.engine.sm_partition) against stream priorities alone, on a GPU.

    python benchmarks/probe_sm_partition.py --json benchmarks/results/probe_sm_partition_h100.json
    python benchmarks/probe_sm_partition.py --rows 8 64 --sms 16 32 48 64

The decode step stands in as probe_decode_linears.py's: Qwen3-1.7B's products for 28 layers and the head
at ROWS rows, each followed by two small elementwise kernels (the norms and activations between them),
captured as one CUDA graph. Beside it, 8192-square bf16 products stand in for the judge's prefill and the
update. For each split it times, side by side in one run: a replay alone on its part, a replay beside the
products on the other part, the products alone on theirs and beside it; and the same without a split
(the decode on a stream of the highest priority, the products on one of the lowest), and with the decode
on its part while the products run unconfined.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

# benchmarks/ is on sys.path when run as a script
from bench_judge_gpu import import_salon
from probe_decode_linears import LAYER_SHAPES, LAYERS, SHAPES, captured, copy_bandwidth

PRODUCT = 8192


def decode_graph(rows: int):
    dev = torch.device("cuda")
    layers = [{n: torch.randn(SHAPES[n], dtype=torch.bfloat16, device=dev) * 0.02 for n in LAYER_SHAPES}
              for _ in range(LAYERS)]
    head = torch.randn(SHAPES["lm_head"], dtype=torch.bfloat16, device=dev) * 0.02
    xs = {n: torch.randn(rows, SHAPES[n][1], dtype=torch.bfloat16, device=dev) for n in SHAPES}

    def step():
        for layer in layers:
            for n in LAYER_SHAPES:
                y = F.linear(xs[n], layer[n])
                y.mul_(0.5).add_(1.0)
        F.linear(xs["lm_head"], head)

    return captured(step), layers


def timed(stream, fn, reps: int) -> tuple[torch.cuda.Event, torch.cuda.Event]:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
    return start, end


def measure(graph, decode_stream, product_stream, reps: int, products: int) -> dict:
    """A replay's ms alone and beside `products` 8192-square products, and their TFLOP/s alone and beside."""
    a = torch.randn(PRODUCT, PRODUCT, dtype=torch.bfloat16, device="cuda")
    flop = 2 * PRODUCT ** 3 * products
    for _ in range(3):
        with torch.cuda.stream(decode_stream):
            graph.replay()
    torch.cuda.synchronize()
    d0, d1 = timed(decode_stream, graph.replay, reps)
    torch.cuda.synchronize()
    p0, p1 = timed(product_stream, lambda: a @ a, products)
    torch.cuda.synchronize()
    q0, q1 = timed(product_stream, lambda: a @ a, products)  # the products first, so the replays start beside them
    e0, e1 = timed(decode_stream, graph.replay, reps)
    torch.cuda.synchronize()
    products_ms = q0.elapsed_time(q1)
    beside_ms = e0.elapsed_time(e1)
    return {"replay_alone_ms": round(d0.elapsed_time(d1) / reps, 3),
            "replay_beside_ms": round(beside_ms / reps, 3),
            "replays_inside_products": beside_ms < products_ms,  # every replay had the products beside it
            "products_alone_tflop_s": round(flop / p0.elapsed_time(p1) / 1e9, 1),
            "products_beside_tflop_s": round(flop / products_ms / 1e9, 1)}


def main() -> None:
    import_salon()
    from salon.train.engine.sm_partition import PartitionError, partitioned_streams

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--sms", type=int, nargs="+", default=[16, 32, 48, 64, 80],
                        help="multiprocessors the decode's part asks for (the driver rounds them)")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--products", type=int, default=400)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sms": props.multi_processor_count,
           "copy_tb_s": round(copy_bandwidth(), 3), "rows": {}}
    print(f"{out['device']}: {out['sms']} multiprocessors, copy {out['copy_tb_s']} TB/s", flush=True)
    parts = {}
    for sms in args.sms:
        try:
            parts[sms] = partitioned_streams(sms)
        except PartitionError as e:
            out.setdefault("errors", {})[str(sms)] = str(e)
            print(f"split {sms}: {e}", flush=True)
    for rows in args.rows:
        graph, _ = decode_graph(rows)
        high, low = torch.cuda.Stream(priority=-5), torch.cuda.Stream(priority=0)
        row = {"priority_streams": measure(graph, high, low, args.reps, args.products)}
        print(f"rows {rows} priority streams: {row['priority_streams']}", flush=True)
        for sms, part in parts.items():
            name = f"split_{part.sms[0]}_{part.sms[1]}"
            try:
                row[name] = measure(graph, part.first, part.second, args.reps, args.products)
                row[f"{name}_products_unconfined"] = measure(graph, part.first, low, args.reps, args.products)
            except RuntimeError as e:  # a graph captured on the primary context that a green stream cannot replay
                row[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
            print(f"rows {rows} {name}: {row[name]}; products unconfined: {row.get(f'{name}_products_unconfined')}",
                  flush=True)
        out["rows"][str(rows)] = row
        del graph
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
