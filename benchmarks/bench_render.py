"""Render throughput: salon's sandbox against the prior art's renderer and the naive way, side by side.

    .venv/bin/python benchmarks/bench_render.py            # light and heavy example sketches
    .venv/bin/python benchmarks/bench_render.py --rounds 2 --skip-published

Four ways render the same sketches in one run, each measured on its own:
  salon            RenderConfig() defaults (the text check reads every painting: `salon ocr off`
                   is the same without it): one browser per two cores, a fresh pre-warmed
                   document per sketch (a page reused after clean sketches), libraries from
                   memory, completion by event
  prior-art        the open reproduction's design, written from its description: a pool of
                   max(1, min(4, cores - 2)) long-lived browsers each rendering one sketch at a
                   time, a fresh page per sketch, p5 + p5.brush inlined with
                   set_content(wait_until="commit"), readiness polled every 40 ms, toDataURL;
                   launched with salon's Chromium flags, so only the design differs
  prior-art-flags  the same with its published GL flags (--use-gl=angle --use-angle=swiftshader
                   --enable-unsafe-swiftshader --disable-gpu-sandbox)
  naive            a new browser for every sketch, one at a time
  salon@REF        with `--against REF`: salon's way as the git revision REF wrote it (a worktree
                   of REF, imported in a child process), so a change to the sandbox is measured
                   before and after in one run, on the same machine load
Prints renders/s, the ratio to salon, and how many cores our own process tree kept busy (CPU
seconds from /proc over wall seconds), for light and heavy sketches separately. Other load on
the machine slows every way alike; run it on a quiet machine for absolute numbers.

On a GPU node (`--gpu`), two more ways run on the same sketches, and the run is written as JSON:
  salon-gpu        RenderConfig(gpu="on"): WebGL on the node's NVIDIA GPU (curate/sandbox/gpu.py)
  salon            stays RenderConfig(gpu="off"): SwiftShader on the node's cores
Each arrangement renders WAVES (4) x its slots (browsers x pages) sketches and is measured in
steady state: renders/s and CPU between the first and the last full wave, the CPU split by
process kind (renderer, gpu, browser, Playwright's driver, this Python), and the card's utilisation
over the same window (nvidia-smi) with the card's busy milliseconds per render it implies. A `gpu one at
a time` row renders ALONE (16) sketches on one page in turn: the card's own time per painting, with
nothing else on it, which a path that keeps the card busy cannot beat. `--scaling 1,2,4,8,16`
adds that many browsers on each path (and `--pages 1,2,4` pages per GPU browser, each
combination), `--arrangements 16x1,8x2` GPU arrangements alone, `--pools 2x8` salon train's
render worker processes (2 of 8 GPU browsers each, and SwiftShader split the same way),
`--flag-sets vulkan-icd` salon on a GPU flag set the probe would not pick, and a `prior-art-gpu 4x4` row runs the prior art's
bare page on the GPU path (what the sandbox page costs there). The ratio is the best GPU row's
renders/s over the best SwiftShader row's, salon's rows only, the GPU's on the flag set the probe
picked, on the same host in the same run; `--kinds heavy` and `--keep` (what this run skips, kept
from --json's earlier run on the same device and listed under kept_from_an_earlier_run) shorten
a run. `--same-seed 4` renders each heavy sketch four times at one seed on the probe's path and
on each `--flag-sets` and reports the share of pixels that differ at all, the share more than 8
levels apart (what the sandbox's no-leak tests count) and the largest gap. Then
(benchmarks/gpu_render_checks.py) a bf16 matmul loop's slowdown while every slot of the best heavy
GPU arrangement renders for `--interference` seconds (`--interference-at 4x4,16x1/vulkan-icd`: at
those too), and fidelity: every bundled example at `--fidelity` seeds on both
paths (pixels off by more than 16 in a channel, image judges and a pairwise judge on both).

    python benchmarks/bench_render.py --gpu --arrangements 16x1,16x2,8x2 --flag-sets vulkan-icd \
        --json benchmarks/results/bench_render_gpu_h200.json

The ways themselves are in render_ways.py, the GPU run's steady-state rows in render_gpu_rows.py.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from proctree import CpuMeter
from render_gpu_rows import gpu_run
from render_ways import (BASE_FLAGS, EXAMPLES, HEAVY, LIGHT, PUBLISHED_GL, run_naive, run_prior_art, run_salon,
                         run_salon_at, salon_at, warm_salon)
from salon.curate.sandbox.render import RenderConfig


def measure(label: str, fn) -> dict:
    with CpuMeter() as cpu:
        t0 = time.perf_counter()
        rendered = fn()
        seconds = time.perf_counter() - t0
    return {"way": label, "seconds": seconds, "rendered": rendered, "cores_busy": cpu.seconds / seconds,
            "cpu_per_render": cpu.seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="how many times each sketch list is rendered")
    ap.add_argument("--skip-published", action="store_true", help="skip the slow published-GL-flags way")
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--sweep", action="store_true", help="also salon with 1, 3 and 4 browsers (how many suit the cores)")
    ap.add_argument("--gpu", action="store_true", help="GPU node: GPU path vs SwiftShader vs prior art, as JSON")
    ap.add_argument("--gpu-browsers", type=int, default=0, help="browsers on the GPU path (--gpu; 0: the default)")
    ap.add_argument("--interference", type=float, default=60, help="seconds of rendering beside a matmul loop (--gpu; 0: skip)")
    ap.add_argument("--same-seed", type=int, default=4, help="renders of each heavy sketch at one seed, compared "
                    "pixel for pixel, on the probe's path and each --flag-sets (--gpu; 0: skip)")
    ap.add_argument("--interference-at", default="", help="also the matmul's slowdown at these GPU arrangements, "
                    "browsers x pages and an optional flag set, e.g. 4x4,16x1/vulkan-icd (--gpu)")
    ap.add_argument("--fidelity", type=int, default=3, help="seeds per example compared across paths (--gpu; 0: skip)")
    ap.add_argument("--scaling", default="", help="browser counts to sweep on both paths, e.g. 1,2,4,8,16 (--gpu)")
    ap.add_argument("--pages", default="", help="pages per GPU browser to sweep, e.g. 1,2,4 (--gpu)")
    ap.add_argument("--arrangements", default="", help="GPU browsers x pages to measure, e.g. 16x1,8x2,4x4 (--gpu)")
    ap.add_argument("--pools", default="", help="render worker processes x browsers each on the GPU, e.g. 2x8,4x4, "
                    "and SwiftShader split the same way at half the browsers (--gpu)")
    ap.add_argument("--json", default="", help="write the --gpu run here")
    ap.add_argument("--kinds", default="light,heavy", help="sketch lists to measure (--gpu)")
    ap.add_argument("--flag-sets", default="", help="also salon on these GPU_FLAG_SETS, forced, e.g. vulkan-icd (--gpu)")
    ap.add_argument("--keep", action="store_true", help="keep what this run skips (a kind, interference, fidelity) "
                    "from --json's earlier run on the same device, listed under kept_from_an_earlier_run (--gpu)")
    ap.add_argument("--against", default="", metavar="REF",
                    help="also salon as git revision REF (or a checkout folder) had it: before/after a change, in one run")
    args = ap.parse_args()
    if args.gpu:
        return gpu_run(args)
    config = RenderConfig(gpu="off")
    print(f"cores: {os.cpu_count()}  salon browsers: {config.browser_count}  rounds: {args.rounds}")
    asyncio.run(warm_salon(config))
    for kind, names in (("light", LIGHT), ("heavy", HEAVY)):
        codes = [(EXAMPLES / f"{n}.js").read_text() for n in names] * args.rounds
        ways = [("salon", lambda: asyncio.run(run_salon(codes, config))),
                ("salon ocr off", lambda: asyncio.run(run_salon(codes, RenderConfig(gpu="off", text_check="off")))),
                ("prior-art", lambda: asyncio.run(run_prior_art(codes, BASE_FLAGS + ["--disable-gpu"])))]
        if args.against:
            shim = salon_at(args.against)
            ways.insert(2, (f"salon@{Path(args.against).name}"[:16], lambda: run_salon_at(shim, codes)))
        if args.sweep:
            for n in (1, 3, 4):
                sweep_config = RenderConfig(browsers=n, gpu="off")
                ways.append((f"salon {n} browser{'s' if n > 1 else ''}",
                             lambda c=sweep_config: asyncio.run(run_salon(codes, c))))
        if not args.skip_published:
            ways.append(("prior-art-flags", lambda: asyncio.run(run_prior_art(codes, BASE_FLAGS + PUBLISHED_GL))))
        if not args.skip_naive:
            ways.append(("naive", lambda: asyncio.run(run_naive(codes))))
        rows = [measure(label, fn) if not label.startswith("salon@") else {"way": label, **fn()} for label, fn in ways]
        salon_rate = len(codes) / rows[0]["seconds"]
        print(f"\n{kind} sketches ({len(codes)} renders: {', '.join(names)})")
        print(f"  {'way':16s} {'renders/s':>10s} {'salon is':>10s} {'cores busy':>11s} {'CPU s/render':>13s} {'ok':>6s}")
        for r in rows:
            rate = len(codes) / r["seconds"]
            print(f"  {r['way']:16s} {rate:10.3f} {salon_rate / rate:9.2f}x {r['cores_busy']:11.2f} "
                  f"{r['cpu_per_render'] / len(codes):13.2f} {r['rendered']:>3d}/{len(codes)}", flush=True)


if __name__ == "__main__":
    main()
