"""The ways bench_render.py compares, each rendering a list of sketches: salon's Renderer, the prior
art's design written from its description, a new browser per sketch, and salon as another git
revision had it. Not run on its own:

    from render_ways import EXAMPLES, LIGHT, HEAVY, run_salon, run_prior_art, run_naive
    rendered = asyncio.run(run_prior_art(codes, BASE_FLAGS + ["--disable-gpu"]))   # how many gave an image
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

from salon.curate.sandbox.assets import find_node_modules
from salon.curate.sandbox.chromium import find_chromium
from salon.curate.sandbox.render import Renderer, RenderConfig

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
                        steady=None) -> int:
    """The prior art's renderer; `browsers`, `tabs` (pages in flight per browser) and `env` let the
    GPU run give it the GPU path's arrangement and driver, with no sandbox page at all; `steady`
    (render_gpu_rows.Steady) is told of each render done."""
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
