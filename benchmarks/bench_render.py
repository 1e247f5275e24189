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
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from proctree import CpuMeter
from salon.curate.render import Renderer, RenderConfig, find_chromium, find_node_modules

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="how many times each sketch list is rendered")
    ap.add_argument("--skip-published", action="store_true", help="skip the slow published-GL-flags way")
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--sweep", action="store_true", help="also salon with 1, 3 and 4 browsers (how many suit the cores)")
    args = ap.parse_args()
    config = RenderConfig()
    print(f"cores: {os.cpu_count()}  salon browsers: {config.browser_count}  rounds: {args.rounds}")
    asyncio.run(warm_salon(config))
    for kind, names in (("light", LIGHT), ("heavy", HEAVY)):
        codes = [(EXAMPLES / f"{n}.js").read_text() for n in names] * args.rounds
        ways = [("salon", lambda: asyncio.run(run_salon(codes, config))),
                ("prior-art", lambda: asyncio.run(run_prior_art(codes, BASE_FLAGS + ["--disable-gpu"])))]
        if args.sweep:
            for n in (1, 3, 4):
                sweep_config = RenderConfig(browsers=n)
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
