"""What one pairwise-judge call costs by its size, and what the host adds to it: the judge alone on a
random Qwen2.5-VL-7B-shaped model (bench_judge_gpu.build), as training calls it.

    python benchmarks/probe_judge_calls.py --json benchmarks/results/probe_judge_calls_h200.json
    python benchmarks/probe_judge_calls.py --tiny            # the script on a CPU, a tiny model

Training judges its paintings in calls of 1 to 64 paintings (`reward.judge_as_rendered`: whatever is
ready; whole groups: 8), each against its group's 4 references (cached) in both orders. This times calls
of each size side by side, per call and per 64 comparisons, in one run:

  planned    the vision tower's segments, rotary positions and windows made on the host
             (judges/vlm_vision.py: no wait for the card inside the tower), salon's way
  read back  the same tower deriving them from the grids on the card, and bucketed attention reading
             the window boundaries back in every layer: the way before
  each with `--busy` spinning processes beside it (default: all cores but 2, as 16 browsers on a
  16-core node with render.trainer_cores 2 leave the trainer), and without.

The printout gives seconds per 64 comparisons and read back / planned; a call's fixed cost shows as the
per-64 figure of small calls over that of calls of 8. --json writes {device, rows: [{way, busy, paintings,
comparisons, call_s, per_64_s}]}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import bench_judge_gpu as bench  # benchmarks/ is on sys.path when run as a script

SIZES = (1, 2, 4, 8, 16, 64)


def spinners(n: int) -> list[subprocess.Popen]:
    """n processes that keep a core busy each, as rendering browsers do."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="a check of this script on a CPU, a tiny model")
    ap.add_argument("--busy", type=int, default=max(0, (os.cpu_count() or 2) - 2),
                    help="spinning processes beside the loaded runs (default: all cores but 2)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    bench.import_salon()
    import torch

    from salon.judges.verdict import Reference
    from salon.judges.vlm_transformers import TransformersJudgeConfig, TransformersPairwiseJudge

    device = "cpu" if args.tiny else "cuda"
    bench.use_shapes(tiny=args.tiny)
    sizes = (1, 2, 4) if args.tiny else SIZES
    model, processor = bench.build(device)
    judge = TransformersPairwiseJudge.from_loaded(model, processor, TransformersJudgeConfig(
        model="random-Qwen2.5-VL-7B", device=device))
    plans = judge._runner.vision_plans
    size = 96 if args.tiny else 600
    refs = [Reference.from_image(im, id=f"ref{i}") for i, im in enumerate(bench.paintings(4, seed=0, size=size))]
    pool = bench.paintings(max(sizes), seed=1, size=size)
    judge.judge(pool[:1], refs)  # references encoded and their prefixes cached, as in a training step
    rows = []
    loads = [0, args.busy] if args.busy else [0]
    for busy in loads:
        procs = spinners(busy)
        try:
            for n in sizes:
                for way, planned in (("planned", True), ("read back", False)):
                    plans.segments = planned  # False: the tower derives its inputs from the grids on the card
                    sec, _ = bench.timed(lambda: judge.judge(pool[:n], refs), reps=args.reps, warmup=1)
                    comparisons = n * len(refs) * 2
                    rows.append({"way": way, "busy": busy, "paintings": n, "comparisons": comparisons,
                                 "call_s": round(sec, 4), "per_64_s": round(sec * 64 / comparisons, 4)})
        finally:
            for p in procs:
                p.kill()
            plans.segments = True
    print(f"{'busy':>4} {'paintings':>9} {'planned s/64':>13} {'read back s/64':>15} {'read back / planned':>20}")
    for busy in loads:
        for n in sizes:
            a, b = (next(r for r in rows if r["way"] == w and r["busy"] == busy and r["paintings"] == n)
                    for w in ("planned", "read back"))
            print(f"{busy:>4} {n:>9} {a['per_64_s']:>13.3f} {b['per_64_s']:>15.3f} "
                  f"{b['per_64_s'] / a['per_64_s']:>19.2f}x")
    if args.json:
        dev = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {os.cpu_count()} cores"
        Path(args.json).write_text(json.dumps({"device": dev, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    code = main()
    print(f"{time.perf_counter() - t0:.0f} s in all")
    sys.exit(code)
