"""Render throughput: salon's sandbox against the prior art's renderer and the naive way, side by side.

    .venv/bin/python benchmarks/bench_render.py            # light and heavy example sketches
    .venv/bin/python benchmarks/bench_render.py --rounds 2 --skip-published

Four ways render the same sketches in one run, each measured on its own:
  salon            RenderConfig() defaults: one browser per core, fresh pre-warmed context per
                   sketch, libraries from memory, completion by event
  prior-art        the open reproduction's design, written from its description: a pool of
                   max(1, min(4, cores - 2)) long-lived browsers each rendering one sketch at a
                   time, a fresh page per sketch, p5 + p5.brush inlined with
                   set_content(wait_until="commit"), readiness polled every 40 ms, toDataURL;
                   launched with salon's Chromium flags, so only the design differs
  prior-art-flags  the same with its published GL flags (--use-gl=angle --use-angle=swiftshader
                   --enable-unsafe-swiftshader --disable-gpu-sandbox)
  naive            a new browser for every sketch, one at a time
Prints renders/s, the ratio to salon, and how many cores our own process tree kept busy (CPU
seconds from /proc over wall seconds), for light and heavy sketches separately. Other load on
the machine slows every way alike; run it on a quiet machine for absolute numbers.

On a GPU node (`--gpu`), two more ways run on the same sketches, and the run is written as JSON:
  salon-gpu        RenderConfig(gpu="on"): WebGL on the node's NVIDIA GPU (curate/render_gpu.py)
  salon            stays RenderConfig(gpu="off"): SwiftShader on the node's cores
`--scaling 1,2,4,8,16` renders the sketches with that many browsers on each path (and
`--pages 1,2,4` pages per GPU browser); fidelity compares each sketch's GPU and SwiftShader
images at the same seed (share of pixels off by more than 16 in a channel, and the image
judges' scores on both).

    python benchmarks/bench_render.py --gpu --scaling 1,2,4,8,16 --json benchmarks/results/bench_render_gpu_h200.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

from proctree import CpuMeter
from salon.curate.render import Renderer, RenderConfig, find_chromium, find_node_modules
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


async def run_prior_art(codes: list[str], flags: list[str]) -> int:
    from playwright.async_api import async_playwright

    nm = find_node_modules()
    p5 = (nm / "p5/lib/p5.min.js").read_text()
    brush = (nm / "p5.brush/dist/p5.brush.js").read_text()
    n_browsers = max(1, min(4, (os.cpu_count() or 1) - 2))
    async with async_playwright() as pw:
        browsers = [await pw.chromium.launch(executable_path=find_chromium(), args=flags)
                    for _ in range(n_browsers)]
        free: asyncio.Queue = asyncio.Queue()
        for b in browsers:
            free.put_nowait(b)

        async def one(code):
            b = await free.get()
            try:
                return await prior_art_render(b, p5, brush, code)
            finally:
                free.put_nowait(b)

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


async def render_all(codes: list[str], config: RenderConfig):
    async with Renderer(config) as renderer:
        t0 = time.perf_counter()
        results = await renderer.render_many([(c, i) for i, c in enumerate(codes)])
        return results, time.perf_counter() - t0, renderer.gl


def rate_row(label: str, codes: list[str], config: RenderConfig) -> dict:
    with CpuMeter() as cpu:
        results, seconds, gl = asyncio.run(render_all(codes, config))
    ok = sum(r.png is not None for r in results)
    return {"way": label, "gl": gl.name, "renderer": gl.renderer, "browsers": config.browser_count,
            "pages": config.pages_per_browser, "renders": len(codes), "rendered": ok, "seconds": round(seconds, 3),
            "renders_per_s": round(len(codes) / seconds, 4), "cores_busy": round(cpu.seconds / seconds, 2)}


def fidelity(names: list[str]) -> list[dict]:
    """Each sketch at seed 0 on both paths: pixels off by > 16 in a channel, image judges on both."""
    import io

    import numpy as np
    from PIL import Image

    from salon.judges.image_judges import colourfulness, composition, paint_fraction

    codes = [(EXAMPLES / f"{n}.js").read_text() for n in names]

    async def both(gpu: str):
        async with Renderer(RenderConfig(gpu=gpu, browsers=4)) as renderer:
            return await renderer.render_many([(c, 0) for c in codes])

    rows = []
    for name, g, s in zip(names, asyncio.run(both("on")), asyncio.run(both("off"))):
        if g.png is None or s.png is None:
            rows.append({"sketch": name, "error": "no image on one path"})
            continue
        a, b = (np.asarray(Image.open(io.BytesIO(x.png)).convert("RGB")).astype(int) for x in (g, s))
        ia, ib = (Image.open(io.BytesIO(x.png)).convert("RGB") for x in (g, s))
        rows.append({"sketch": name, "off_by_more_than_16": round(float((np.abs(a - b).max(axis=2) > 16).mean()), 5),
                     "paint_fraction": [round(paint_fraction(ia), 4), round(paint_fraction(ib), 4)],
                     "colourfulness": [round(colourfulness(ia), 4), round(colourfulness(ib), 4)],
                     "lower_half": [round(composition(ia).lower_half, 4), round(composition(ib).lower_half, 4)]})
    return rows


def gpu_run(args) -> None:
    """Everything --gpu measures, printed side by side and written to --json."""
    cores = os.cpu_count() or 1
    scaling = [int(n) for n in args.scaling.split(",")] if args.scaling else []
    pages = [int(n) for n in args.pages.split(",")] if args.pages else []
    report = {"device": device_name(), "rounds": args.rounds, "sketches": {"light": LIGHT, "heavy": HEAVY}}
    try:
        asyncio.run(warm_salon(RenderConfig(gpu="on", browsers=1)))
    except SetupError as e:  # no GPU path here: measure SwiftShader and the prior art, and say why
        report["gpu_error"] = str(e)
        print(f"GPU path unavailable: {e}", flush=True)
    gpu = "gpu_error" not in report
    for kind, names in (("light", LIGHT), ("heavy", HEAVY)):
        codes = [(EXAMPLES / f"{n}.js").read_text() for n in names] * args.rounds
        rows = [rate_row("salon-gpu", codes, RenderConfig(gpu="on", browsers=args.gpu_browsers))] if gpu else []
        rows.append(rate_row("salon-swiftshader", codes, RenderConfig(gpu="off", browsers=max(1, cores // 2))))
        prior = measure("prior-art", lambda: asyncio.run(run_prior_art(codes, BASE_FLAGS + ["--disable-gpu"])))
        rows.append({"way": "prior-art", "gl": "swiftshader", "renders": len(codes), "rendered": prior["rendered"],
                     "seconds": round(prior["seconds"], 3), "renders_per_s": round(len(codes) / prior["seconds"], 4),
                     "cores_busy": round(prior["cores_busy"], 2)})
        for n in scaling:
            rows.append(rate_row(f"swiftshader x{n}", codes, RenderConfig(gpu="off", browsers=n)))
            if gpu:
                rows.append(rate_row(f"gpu x{n}", codes, RenderConfig(gpu="on", browsers=n)))
        for p in pages if gpu else []:
            rows.append(rate_row(f"gpu x{args.gpu_browsers} p{p}", codes,
                                 RenderConfig(gpu="on", browsers=args.gpu_browsers, pages_per_browser=p)))
        gpu_rate = rows[0]["renders_per_s"]
        print(f"\n{kind} sketches ({len(codes)} renders) on {report['device']}")
        print(f"  {'way':22s} {'renders/s':>10s} {'gpu is':>8s} {'cores busy':>11s} {'ok':>7s}")
        for r in rows:
            print(f"  {r['way']:22s} {r['renders_per_s']:10.3f} {gpu_rate / r['renders_per_s']:7.2f}x "
                  f"{r['cores_busy']:11.2f} {r['rendered']:>3d}/{r['renders']}", flush=True)
        report[kind] = rows
        if gpu:
            report[f"{kind}_ratio_gpu_vs_swiftshader"] = round(gpu_rate / rows[1]["renders_per_s"], 3)
            report[f"{kind}_ratio_gpu_vs_prior_art"] = round(gpu_rate / rows[2]["renders_per_s"], 3)
        write(args.json, report)  # after each kind, so a run cut short keeps what it measured
    if not gpu:  # the keys the results name, with no number rather than a made-up one
        report["heavy_ratio_gpu_vs_swiftshader"] = report["light_ratio_gpu_vs_swiftshader"] = None
    report["fidelity"] = fidelity(LIGHT + HEAVY) if gpu else []
    for f in report["fidelity"]:
        print(f"  fidelity {f['sketch']:26s} {json.dumps({k: v for k, v in f.items() if k != 'sketch'})}")
    write(args.json, report)
    print(f"wrote {args.json}")


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
    ap.add_argument("--gpu-browsers", type=int, default=4, help="browsers on the GPU path (--gpu)")
    ap.add_argument("--scaling", default="", help="browser counts to sweep on both paths, e.g. 1,2,4,8,16 (--gpu)")
    ap.add_argument("--pages", default="", help="pages per GPU browser to sweep, e.g. 1,2,4 (--gpu)")
    ap.add_argument("--json", default="", help="write the --gpu run here")
    args = ap.parse_args()
    if args.gpu:
        return gpu_run(args)
    config = RenderConfig(gpu="off")
    print(f"cores: {os.cpu_count()}  salon browsers: {config.browser_count}  rounds: {args.rounds}")
    asyncio.run(warm_salon(config))
    for kind, names in (("light", LIGHT), ("heavy", HEAVY)):
        codes = [(EXAMPLES / f"{n}.js").read_text() for n in names] * args.rounds
        ways = [("salon", lambda: asyncio.run(run_salon(codes, config))),
                ("prior-art", lambda: asyncio.run(run_prior_art(codes, BASE_FLAGS + ["--disable-gpu"])))]
        if args.sweep:
            for n in (1, 3, 4):
                sweep_config = RenderConfig(browsers=n, gpu="off")
                ways.append((f"salon {n} browser{'s' if n > 1 else ''}",
                             lambda c=sweep_config: asyncio.run(run_salon(codes, c))))
        if not args.skip_published:
            ways.append(("prior-art-flags", lambda: asyncio.run(run_prior_art(codes, BASE_FLAGS + PUBLISHED_GL))))
        if not args.skip_naive:
            ways.append(("naive", lambda: asyncio.run(run_naive(codes))))
        rows = [measure(label, fn) for label, fn in ways]
        salon_rate = len(codes) / rows[0]["seconds"]
        print(f"\n{kind} sketches ({len(codes)} renders: {', '.join(names)})")
        print(f"  {'way':16s} {'renders/s':>10s} {'salon is':>10s} {'cores busy':>11s} {'CPU s/render':>13s} {'ok':>6s}")
        for r in rows:
            rate = len(codes) / r["seconds"]
            print(f"  {r['way']:16s} {rate:10.3f} {salon_rate / rate:9.2f}x {r['cores_busy']:11.2f} "
                  f"{r['cpu_per_render'] / len(codes):13.2f} {r['rendered']:>3d}/{len(codes)}", flush=True)


if __name__ == "__main__":
    main()
