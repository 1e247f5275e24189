"""What `bench_render.py --gpu` measures, in steady state: each arrangement of browsers x pages (and
of render worker processes) on the GPU path and on SwiftShader, the prior art's bare page on both,
then same-seed repeats, matmul interference and fidelity (gpu_render_checks.py); the rows printed
side by side and written to --json. Run through bench_render.py:

    python benchmarks/bench_render.py --gpu --arrangements 16x1,16x2,8x2 --flag-sets vulkan-icd \
        --json benchmarks/results/bench_render_gpu_h200.json
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from pathlib import Path

from gpu_render_checks import fidelity, interference, same_seed
from proctree import CpuMeter, GpuMeter
from render_ways import BASE_FLAGS, EXAMPLES, HEAVY, LIGHT, run_prior_art, warm_salon
from salon.curate.sandbox.gpu import GPU_FLAG_SETS, driver_env
from salon.curate.sandbox.render import Renderer, RenderConfig
from salon.pool.errors import SetupError


def device_name() -> str:
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        gpu = []
    return f"{len(gpu)}x {gpu[0]}, {os.cpu_count()} cores" if gpu else f"no GPU, {os.cpu_count()} cores"


class Steady:
    """Steady-state throughput of a run that keeps `slots` renders in flight: renders/s and CPU between
    the `slots`-th completion and the `slots`-th from the end, so start-up (the first wave starting
    together) and the tail (fewer renders than slots left) stay out. A run of 18 renders on 16 slots
    is mostly those two; the GPU run gives each arrangement WAVES x slots renders."""

    def __init__(self, meter: CpuMeter, total: int, slots: int, gpu: GpuMeter | None = None):
        self.meter, self.total, self.gpu = meter, total, gpu
        self.first = max(1, min(slots, total // 4))
        self.last = total - self.first
        self.count = 0
        self.gpu_util = None

    def done(self) -> None:
        self.count += 1
        if self.count == self.first:
            self.t0, self.mark = time.perf_counter(), self.meter.mark()
        if self.count == self.last:
            self.seconds = time.perf_counter() - self.t0
            self.cpu = self.meter.since(self.mark)
            self.gpu_util = self.gpu.since(self.t0) if self.gpu else None

    def row(self) -> dict:
        cores = {k: round(v / self.seconds, 2) for k, v in sorted(self.cpu.items(), key=lambda kv: -kv[1]) if v > 0}
        rate = (self.last - self.first) / self.seconds
        # The card's busy time per render: what caps a path that keeps it busy all the time.
        gpu = {} if self.gpu_util is None else {
            "gpu_util_percent": self.gpu_util, "gpu_busy_ms_per_render": round(self.gpu_util * 10 / rate, 1)}
        return {"renders": self.total, "seconds": round(self.seconds, 3), "renders_per_s": round(rate, 4),
                "cores_busy": round(sum(self.cpu.values()) / self.seconds, 2), "cores_by_process": cores, **gpu}


WAVES = 4  # renders per slot in each GPU-run arrangement
ALONE = 16  # renders of the one-at-a-time GPU row


async def render_steady(codes: list[str], config: RenderConfig, meter: CpuMeter, gpu: GpuMeter | None = None,
                        total: int = 0):
    async with Renderer(config) as renderer:
        total = total or max(len(codes), WAVES * renderer.browsers * renderer.pages)
        steady = Steady(meter, total, renderer.browsers * renderer.pages, gpu)

        async def one(i):
            result = await renderer.render(codes[i % len(codes)], i)
            steady.done()
            return result

        results = await asyncio.gather(*(one(i) for i in range(total)))
        return results, steady, renderer


def outcome(results, steady: Steady) -> dict:
    """A row's counts and rates, and the first few renders that gave no image (why)."""
    failed = [r.violations + r.details[:2] + r.js_errors[:2] for r in results if r.png is None]
    return {"rendered": len(results) - len(failed), **steady.row(), **({"failed": failed[:5]} if failed else {})}


def rate_row(label: str, codes: list[str], config: RenderConfig, total: int = 0) -> dict:
    with CpuMeter() as meter, GpuMeter() as gpu:
        results, steady, renderer = asyncio.run(render_steady(codes, config, meter, gpu, total))
    return {"way": label, "gl": renderer.gl.name, "renderer": renderer.gl.renderer, "browsers": renderer.browsers,
            "pages": renderer.pages, "sketches_per_page": config.sketches_per_page, **outcome(results, steady)}


def pool_row(label: str, codes: list[str], config: RenderConfig, workers: int) -> dict:
    """salon train's local render backend (render.workers, train/render_workers.py): `workers` processes,
    each with its own Renderer of `config.browsers` browsers, so Python's event loop and Playwright's
    driver are split `workers` ways too. Measured in steady state like rate_row, after each worker
    has rendered once."""
    from salon.train.render_workers import RenderPool

    with RenderPool(config, workers=workers) as pool:
        first = [pool.submit(codes[0], 0) for _ in range(workers)]  # round-robin: one per worker
        gl = [f.result().gl for f in first][0]
        slots = workers * config.browsers * (config.pages_per_browser or 1)
        total = max(len(codes), WAVES * slots)
        lock = threading.Lock()
        with CpuMeter() as meter, GpuMeter() as gpu:
            steady = Steady(meter, total, slots, gpu)

            def done(_):
                with lock:  # each worker's reader thread resolves its own futures
                    steady.done()

            futures = [pool.submit(codes[i % len(codes)], i) for i in range(total)]
            for f in futures:
                f.add_done_callback(done)
            results = [f.result() for f in futures]
    return {"way": label, "gl": gl, "workers": workers, "browsers": workers * config.browsers,
            "pages": config.pages_per_browser or 1, **outcome(results, steady)}


def prior_art_row(label: str, codes: list[str], flags: list[str], browsers: int = 0, tabs: int = 1, env=None) -> dict:
    browsers = browsers or max(1, min(4, (os.cpu_count() or 1) - 2))
    total = max(len(codes), WAVES * browsers * tabs)
    work = [codes[i % len(codes)] for i in range(total)]
    with CpuMeter() as meter, GpuMeter() as gpu:
        steady = Steady(meter, total, browsers * tabs, gpu)
        ok = asyncio.run(run_prior_art(work, flags, browsers, tabs, env, steady))
    return {"way": label, "gl": "vulkan-icd" if env else "swiftshader", "browsers": browsers, "pages": tabs,
            "rendered": ok, **steady.row()}


def gpu_run(args) -> None:
    """Everything --gpu measures, printed side by side and written to --json."""
    cores = os.cpu_count() or 1
    scaling = [int(n) for n in args.scaling.split(",")] if args.scaling else []
    pages = [int(n) for n in args.pages.split(",")] if args.pages else []
    report = {"device": device_name(), "rounds": args.rounds, "sketches": {"light": LIGHT, "heavy": HEAVY}}
    # read before this run writes the file: what --keep takes from the earlier run
    earlier = json.loads(Path(args.json).read_text()) if args.keep and args.json and Path(args.json).is_file() else None
    if earlier and earlier.get("device") != report["device"]:
        raise SystemExit(f"--keep: {args.json} was measured on {earlier.get('device')}, not {report['device']}")
    try:
        asyncio.run(warm_salon(RenderConfig(gpu="on", browsers=1)))
    except SetupError as e:  # no GPU path here: measure SwiftShader and the prior art, and say why
        report["gpu_error"] = str(e)
        print(f"GPU path unavailable: {e}", flush=True)
    gpu = "gpu_error" not in report
    kinds = [(k, names) for k, names in (("light", LIGHT), ("heavy", HEAVY)) if k in args.kinds.split(",")]
    for kind, names in kinds:
        codes = [(EXAMPLES / f"{n}.js").read_text() for n in names] * args.rounds
        rows = [rate_row("salon-gpu", codes, RenderConfig(gpu="on", browsers=args.gpu_browsers))] if gpu else []
        if gpu:  # the card's own time per painting, with nothing else on it
            rows.append(rate_row("gpu one at a time", codes, RenderConfig(gpu="on", browsers=1), total=ALONE))
        rows.append(rate_row("salon-swiftshader", codes, RenderConfig(gpu="off", browsers=max(1, cores // 2))))
        # before pages were reused: a new context and renderer process for every sketch
        if gpu:
            rows.append(rate_row("gpu context per sketch", codes,
                                 RenderConfig(gpu="on", browsers=args.gpu_browsers, sketches_per_page=1)))
        rows.append(rate_row("swiftshader context per sketch", codes,
                             RenderConfig(gpu="off", browsers=max(1, cores // 2), sketches_per_page=1)))
        rows.append(prior_art_row("prior-art", codes, BASE_FLAGS + ["--disable-gpu"]))
        if gpu:  # the prior art's bare page on the GPU, the probe's best arrangement: what the sandbox page costs
            rows.append(prior_art_row("prior-art-gpu 4x4", codes, BASE_FLAGS + GPU_FLAG_SETS["vulkan-icd"], 4, 4,
                                      driver_env()))
        for flags in args.flag_sets.split(",") if gpu and args.flag_sets else []:
            try:
                rows.append(rate_row(f"gpu {flags}", codes, RenderConfig(gpu="on", gl=flags, browsers=args.gpu_browsers)))
            except SetupError as e:
                print(f"  gpu {flags}: {e}", flush=True)
        def add(row: dict) -> None:  # a run cut short keeps every such row it finished
            rows.append(row)
            write(args.json, {**report, kind: rows})

        for arrangement in args.arrangements.split(",") if gpu and args.arrangements else []:
            b, p = (int(x) for x in arrangement.split("x"))
            add(rate_row(f"gpu x{b} p{p}", codes, RenderConfig(gpu="on", browsers=b, pages_per_browser=p)))
        for split in args.pools.split(",") if args.pools else []:
            w, b = (int(x) for x in split.split("x"))
            if gpu:
                add(pool_row(f"gpu pool {w}x{b}", codes, RenderConfig(gpu="on", browsers=b), w))
            if b // 2:  # SwiftShader split the same way, at its own one browser per two cores
                add(pool_row(f"swiftshader pool {w}x{b // 2}", codes, RenderConfig(gpu="off", browsers=b // 2), w))
        for n in scaling:
            rows.append(rate_row(f"swiftshader x{n}", codes, RenderConfig(gpu="off", browsers=n)))
            for p in (pages or [1]) if gpu else []:
                rows.append(rate_row(f"gpu x{n} p{p}", codes, RenderConfig(gpu="on", browsers=n, pages_per_browser=p)))
        top = max(rows, key=lambda r: r["renders_per_s"])
        print(f"\n{kind} sketches (steady state, {WAVES} renders per slot) on {report['device']}")
        print(f"  {'way':22s} {'renders/s':>10s} {'best is':>8s} {'cores busy':>11s} {'card':>6s} {'ms/r':>6s} {'ok':>8s}"
              "  cores by process")
        for r in rows:
            by = " ".join(f"{k} {v:.1f}" for k, v in r["cores_by_process"].items())
            card = f"{r['gpu_util_percent']:5.0f}% {r['gpu_busy_ms_per_render']:6.0f}" if "gpu_util_percent" in r else " " * 13
            print(f"  {r['way']:22s} {r['renders_per_s']:10.3f} {top['renders_per_s'] / r['renders_per_s']:7.2f}x "
                  f"{r['cores_busy']:11.2f} {card} {r['rendered']:>4d}/{r['renders']}  {by}", flush=True)
        report[kind] = rows
        write(args.json, report)  # after each kind, so a run cut short keeps what it measured
    if earlier:
        keep_earlier(report, earlier, measured=[k for k, v in (("interference", args.interference),
                                                               ("fidelity", args.fidelity), ("same_seed", args.same_seed)) if v])
    best = {}
    for kind in ("light", "heavy"):
        if kind in report:
            best_gpu, best_soft = best_rows(report[kind])
            best[kind] = {"gpu": best_gpu, "swiftshader": best_soft}
            report[f"{kind}_ratio_gpu_vs_swiftshader"] = (
                round(best_gpu["renders_per_s"] / best_soft["renders_per_s"], 3) if best_gpu else None)
    report["best_arrangement"] = {k: {path: (arrangement_name(r) if r else None) for path, r in v.items()}
                                  for k, v in best.items()}
    report["cores_busy"] = {path: {k: (v[path]["cores_busy"] if v[path] else None) for k, v in best.items()}
                            for path in ("gpu", "swiftshader")}
    write(args.json, report)
    heavy = [(EXAMPLES / f"{n}.js").read_text() for n in HEAVY]
    if gpu and args.interference:
        # at the best heavy GPU arrangement of this run (the default's when only it was measured)
        row = best["heavy"]["gpu"] if "heavy" in best and best["heavy"]["gpu"] else {"browsers": 0, "pages": 0}
        config = RenderConfig(gpu="on", browsers=row["browsers"], pages_per_browser=row["pages"])
        report["interference"] = {"arrangement": arrangement_name(row) if row["browsers"] else "default",
                                  **interference(heavy, config, alone_s=20, busy_s=args.interference)}
        print(f"  matmul while rendering: {json.dumps(report['interference'])}", flush=True)
        write(args.json, report)
    for spec in args.interference_at.split(",") if gpu and args.interference and args.interference_at else []:
        arrangement, _, gl = spec.partition("/")
        b, p = (int(x) for x in arrangement.split("x"))
        got = {"arrangement": spec, **interference(heavy, RenderConfig(gpu="on", gl=gl, browsers=b, pages_per_browser=p),
                                                   alone_s=15, busy_s=args.interference)}
        report.setdefault("interference_at", []).append(got)
        print(f"  matmul while rendering at {spec}: {json.dumps(got)}", flush=True)
        write(args.json, report)
    if gpu and args.same_seed:
        report["same_seed"] = {}
        for flags in [None] + [f for f in args.flag_sets.split(",") if f]:
            try:
                got = same_seed(heavy, renders=args.same_seed, gl=flags or "")
            except SetupError as e:
                got = {"gl": flags, "error": str(e)}
            report["same_seed"][got["gl"]] = got
            print(f"  same sketch, same seed, {args.same_seed} renders on {got['gl']}: {json.dumps(got)}", flush=True)
        write(args.json, report)
    if gpu and args.fidelity:
        names = sorted(p.stem for p in EXAMPLES.glob("*.js"))
        report["fidelity"] = fidelity(names, seeds=tuple(range(args.fidelity)))
        summary = {k: v for k, v in report["fidelity"].items() if k != "rows"}
        print(f"  fidelity over {len(report['fidelity']['rows'])} images: {json.dumps(summary)}")
    write(args.json, report)
    print(f"wrote {args.json}")


def best_rows(rows: list[dict]) -> tuple[dict | None, dict]:
    """The best GPU and the best SwiftShader arrangement among salon's own rows (not the prior art's), the
    GPU's on the path the probe picked (the salon-gpu row's): best against best, each path's default
    being one of the rows. Rows forced onto another flag set are measured beside it, not ranked: a
    flag set the probe does not pick is not what salon renders on."""
    salon = [r for r in rows if not r["way"].startswith("prior-art")]
    picked = next((r["gl"] for r in salon if r["way"] == "salon-gpu"), None)
    best_gpu = max((r for r in salon if r["gl"] == picked), key=lambda r: r["renders_per_s"], default=None)
    return best_gpu, max((r for r in salon if r["gl"] == "swiftshader"), key=lambda r: r["renders_per_s"])


def arrangement_name(row: dict) -> str:
    """browsers x pages (in worker processes, when a pool), and the GPU flag set when it is not the one
    the probe picks first."""
    name = f"{row['browsers']}x{row['pages']}" + (f" in {row['workers']} workers" if "workers" in row else "")
    name += " context per sketch" if row.get("sketches_per_page") == 1 else ""
    return name + f" {row['gl']}" if row["gl"] not in ("swiftshader", next(iter(GPU_FLAG_SETS))) else name


def keep_earlier(report: dict, earlier: dict, measured: list[str]) -> None:
    """Fill in what this run skipped (a sketch kind, same_seed, interference, fidelity) from the same
    device's earlier run, and name it under kept_from_an_earlier_run. Ratios are recomputed from the rows."""
    skipped = [k for k in ("light", "heavy", "same_seed", "interference", "fidelity")
               if k not in report and k in earlier and k not in measured]
    report.update({k: earlier[k] for k in skipped})
    report["kept_from_an_earlier_run"] = skipped


def write(path: str, report: dict) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=1))
