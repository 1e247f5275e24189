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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import threading
import time
from pathlib import Path

from gpu_render_checks import fidelity, interference, same_seed
from proctree import CpuMeter, GpuMeter
from salon.curate.sandbox.assets import find_node_modules
from salon.curate.sandbox.chromium import find_chromium
from salon.curate.sandbox.render import Renderer, RenderConfig
from salon.curate.sandbox.gpu import GPU_FLAG_SETS, driver_env
from salon.pool.errors import SetupError

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"
LIGHT = ["hibiscus_01_sketch", "hibiscus_04_blank", "jellyfish_01_bell", "still_02_teacup",
         "mountain_02_collapse", "koi_01_pond"]
HEAVY = ["mountain_01_lake", "jellyfish_02_drifting", "hibiscus_02_five_petals"]
BASE_FLAGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
PUBLISHED_GL = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                "--disable-gpu-sandbox"]
READY = ("() => window.__setupDone === true && (typeof window.draw !== 'function' || "
         "(window.__frames || 0) >= 1)")
ADDON = ("p5.registerAddon((p5, fn, lc) => { lc.postsetup = function () { window.__setupDone = true; };"
         " lc.postdraw = function () { window.__frames = (window.__frames || 0) + 1; this.noLoop(); }; });")


def inline_page(p5: str, brush: str, code: str) -> str:
    return (f'<!doctype html><html><head><meta charset="utf-8"></head><body><script>{p5}</script>'
            f"<script>{brush}</script><script>{ADDON}</script><script>{code}</script></body></html>")


async def prior_art_render(browser, p5: str, brush: str, code: str, timeout_s: float = 90) -> bool:
    page = await browser.new_page(viewport={"width": 700, "height": 700})
    try:
        await page.set_content(inline_page(p5, brush, code), wait_until="commit")
        deadline = time.monotonic() + timeout_s
        while not await page.evaluate(READY):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.04)
        data = await page.evaluate("document.querySelector('canvas').toDataURL('image/png')")
        return data.startswith("data:image/png")
    finally:
        await page.close()


async def run_prior_art(codes: list[str], flags: list[str], browsers: int = 0, tabs: int = 1, env=None,
                        steady: Steady | None = None) -> int:
    """The prior art's renderer; `browsers`, `tabs` (pages in flight per browser) and `env` let the
    GPU run give it the GPU path's arrangement and driver, with no sandbox page at all."""
    from playwright.async_api import async_playwright

    nm = find_node_modules()
    p5 = (nm / "p5/lib/p5.min.js").read_text()
    brush = (nm / "p5.brush/dist/p5.brush.js").read_text()
    n_browsers = browsers or max(1, min(4, (os.cpu_count() or 1) - 2))
    async with async_playwright() as pw:
        browsers = [await pw.chromium.launch(executable_path=find_chromium(), args=flags, env=env)
                    for _ in range(n_browsers)]
        free: asyncio.Queue = asyncio.Queue()
        for b in browsers * tabs:
            free.put_nowait(b)

        async def one(code):
            b = await free.get()
            try:
                return await prior_art_render(b, p5, brush, code)
            finally:
                free.put_nowait(b)
                if steady is not None:
                    steady.done()

        ok = await asyncio.gather(*(one(c) for c in codes))
        for b in browsers:
            await b.close()
    return sum(ok)


async def run_naive(codes: list[str]) -> int:
    from playwright.async_api import async_playwright

    nm = find_node_modules()
    p5 = (nm / "p5/lib/p5.min.js").read_text()
    brush = (nm / "p5.brush/dist/p5.brush.js").read_text()
    ok = 0
    async with async_playwright() as pw:
        for code in codes:
            browser = await pw.chromium.launch(executable_path=find_chromium(), args=BASE_FLAGS + ["--disable-gpu"])
            page = await browser.new_page(viewport={"width": 600, "height": 600})
            await page.set_content(inline_page(p5, brush, code))
            await page.wait_for_function(READY, timeout=90_000)
            data = await page.evaluate("document.querySelector('canvas').toDataURL('image/png')")
            ok += data.startswith("data:image/png")
            await browser.close()
    return ok


async def run_salon(codes: list[str], config: RenderConfig) -> int:
    async with Renderer(config) as renderer:
        results = await renderer.render_many([(c, i) for i, c in enumerate(codes)])
    return sum(r.png is not None for r in results)


# The child that renders with another revision's salon: the editable install's finder is taken
# out so `salon.*` comes from the worktree; it measures itself the way measure() does.
_AT_REF = """
import asyncio, json, sys, time
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
shim, bench, codes_file = sys.argv[1:4]
sys.path[:0] = [shim, bench]
from proctree import CpuMeter
try:
    from salon.curate.sandbox import render  # the sandbox's own room, from its move on
except ImportError:
    from salon.curate import render
assert render.__file__.startswith(shim), render.__file__
codes = json.load(open(codes_file))
async def run(codes):
    async with render.Renderer(render.RenderConfig(gpu="off")) as r:
        results = await r.render_many([(c, i) for i, c in enumerate(codes)])
    return sum(x.png is not None for x in results)
asyncio.run(run(codes[:1]))  # one warm-up render, as warm_salon does
with CpuMeter() as cpu:
    t0 = time.perf_counter()
    ok = asyncio.run(run(codes))
    seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "rendered": ok, "cpu": cpu.seconds}))
"""


def salon_at(ref: str) -> Path:
    """A worktree of `ref` (or a folder holding another checkout) with a `salon` namespace folder
    pointing at its packages."""
    repo = Path(__file__).resolve().parent.parent
    if Path(ref).is_dir():
        tree = Path(ref).resolve()
    else:
        sha = subprocess.run(["git", "rev-parse", "--short", ref], cwd=repo, capture_output=True, text=True,
                             check=True).stdout.strip()
        tree = Path(f"/tmp/salon-bench-{sha}")
        if not tree.exists():
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=repo, check=True,
                           capture_output=True)
    shim = tree / ".shim"
    for pkg in ("models", "curate", "pool", "judges", "train", "apps"):
        (shim / "salon").mkdir(parents=True, exist_ok=True)
        link = shim / "salon" / pkg
        if not link.exists():
            link.symlink_to(tree / pkg)
    return shim


def run_salon_at(shim: Path, codes: list[str]) -> dict:
    import sys
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(codes, f)
    env = {**os.environ, "SALON_NODE_MODULES": str(find_node_modules().resolve())}
    out = subprocess.run([sys.executable, "-c", _AT_REF, str(shim), str(Path(__file__).resolve().parent), f.name],
                         capture_output=True, text=True, env=env, check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    return {"seconds": got["seconds"], "rendered": got["rendered"], "cores_busy": got["cpu"] / got["seconds"],
            "cpu_per_render": got["cpu"]}


async def warm_salon(renderer_config: RenderConfig) -> None:
    # Browser start-up is paid once per run and is not what is compared; page warm-up is.
    async with Renderer(renderer_config) as renderer:
        await renderer.render((EXAMPLES / "jellyfish_01_bell.js").read_text())


def measure(label: str, fn) -> dict:
    with CpuMeter() as cpu:
        t0 = time.perf_counter()
        rendered = fn()
        seconds = time.perf_counter() - t0
    return {"way": label, "seconds": seconds, "rendered": rendered, "cores_busy": cpu.seconds / seconds,
            "cpu_per_render": cpu.seconds}


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
