"""Where a heavy render's CPU goes, per GPU flag set: per-thread CPU, JS self time, same-seed repeats.

    python benchmarks/probe_render_threads.py                      # every flag set below
    python benchmarks/probe_render_threads.py vulkan-icd,angle-vulkan

Each flag set gets one browser (bare Playwright, the sandbox page from page_assets, no isolation
wrapper); each heavy sketch is rendered four times at seed 0, one at a time. Per sketch it prints:
the wall time of the render (mean of renders 2 and 3); CPU seconds per process kind for loading
the page and for running the sketch (the same two renders), and the threads that used most of
the run's; the JS profiler's self time of the fourth render's top functions; and the share of
pixels of renders 2-4 that differ at all from render 1. On a machine without an NVIDIA device
every flag set falls back to SwiftShader. benchmarks/results/render_threads_probe_h200.txt is
its output on the H200.
"""

import asyncio
import collections
import io
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from PIL import Image
from playwright.async_api import async_playwright
from proctree import descendants, process_kind

import json

from salon.curate.sandbox.assets import HTML_CONTENT_TYPE, PAGE_CSP, PAGE_ORIGIN, page_assets
from salon.curate.sandbox.chromium import BASE_CHROMIUM_ARGS, find_chromium
from salon.curate.sandbox.pages import give_page_scripts
from salon.curate.sandbox.capture import read_painting
from salon.curate.sandbox.render import RenderConfig
from salon.curate.sandbox.gpu import driver_env

TICK = os.sysconf("SC_CLK_TCK")
EX = Path(__file__).resolve().parent.parent / "curate" / "examples"
HEAVY = ["mountain_01_lake", "jellyfish_02_drifting", "hibiscus_02_five_petals"]
AV = ["--use-gl=angle", "--use-angle=vulkan", "--enable-features=Vulkan", "--ignore-gpu-blocklist"]
VARIANTS = {
    "vulkan-icd": ["--disable-gpu"],
    "angle-vulkan": AV,
    "angle-vulkan-sw2d": AV + ["--disable-accelerated-2d-canvas"],
    "angle-vulkan-cpuraster": AV + ["--disable-gpu-rasterization"],
    "av-no-oop-canvas": AV + ["--disable-features=CanvasOopRasterization"],
    "av-graphite": [
        "--use-gl=angle",
        "--use-angle=vulkan",
        "--enable-features=Vulkan,SkiaGraphite",
        "--ignore-gpu-blocklist",
    ],
    "av-no-msaa": AV + ["--disable-features=DynamicMSAA,CanvasOopRasterization", "--msaa-sample-count=0"],
}
if len(sys.argv) > 1:
    VARIANTS = {k: VARIANTS[k] for k in sys.argv[1].split(",")}
gpu = os.path.exists("/dev/nvidiactl")


def threads():
    out = {}
    for pid in descendants(os.getpid()):
        kind = process_kind(pid)
        for t in Path(f"/proc/{pid}/task").glob("*"):
            try:
                st = (t / "stat").read_text()
                comm = st[st.index("(") + 1 : st.rindex(")")]
                f = st[st.rindex(")") + 2 :].split()
                out[(pid, int(t.name))] = (kind, comm, (int(f[11]) + int(f[12])) / TICK)
            except OSError:
                pass
    return out


def px(b):
    return np.asarray(Image.open(io.BytesIO(b)).convert("RGBA")).astype(int)


async def one(b, assets, code, profile):
    ctx = await b.new_context(viewport={"width": 600, "height": 600})
    page = await ctx.new_page()
    cdp = await ctx.new_cdp_session(page)
    await give_page_scripts(cdp, assets.scripts)

    async def route(r):
        await r.fulfill(body=assets.document, content_type=HTML_CONTENT_TYPE, headers={"Content-Security-Policy": PAGE_CSP})

    await ctx.route("**/*", route)
    done = asyncio.get_running_loop().create_future()
    cdp.on("Runtime.bindingCalled", lambda e: '"t":"done"' in e.get("payload", "") and not done.done() and done.set_result(1))
    t0 = threads()
    await page.goto(PAGE_ORIGIN + "/", wait_until="load")
    frame = (await cdp.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
    world = (await cdp.send("Page.createIsolatedWorld", {"frameId": frame}))["executionContextId"]
    if profile:
        await cdp.send("Profiler.enable")
        await cdp.send("Profiler.setSamplingInterval", {"interval": 500})
        await cdp.send("Profiler.start")
    t1 = threads()
    w = time.perf_counter()
    await cdp.send("Runtime.evaluate", {"expression": f"window.__salon.start(0, {json.dumps(code)})"})
    await done
    out = {"image": (await read_painting(SimpleNamespace(cdp=cdp, capture_world=world), 600)).png}
    wall = time.perf_counter() - w
    t2 = threads()
    prof = (await cdp.send("Profiler.stop"))["profile"] if profile else None
    await ctx.close()

    def diff(a, b):
        c = collections.Counter()
        for k, (kind, comm, cpu) in b.items():
            c[(kind, comm)] += cpu - a.get(k, (0, 0, 0))[2]
        return c

    return out, wall, diff(t0, t1), diff(t1, t2), prof


def top(prof, n=8):
    nodes = {x["id"]: x for x in prof["nodes"]}
    c = collections.Counter()
    for s, d in zip(prof["samples"], prof["timeDeltas"]):
        cf = nodes[s]["callFrame"]
        c[(cf["functionName"] or "(anon)") + "@" + cf["url"].split("/")[-1]] += d
    return ", ".join(f"{k} {v/1e3:.0f}" for k, v in c.most_common(n))


async def main():
    assets = page_assets(RenderConfig())
    async with async_playwright() as p:
        for vname, flags in VARIANTS.items():
            b = await p.chromium.launch(
                executable_path=find_chromium(),
                headless=True,
                args=BASE_CHROMIUM_ARGS + flags,
                env=driver_env() if gpu else None,
            )
            for name in HEAVY:
                code = (EX / f"{name}.js").read_text()
                imgs = []
                loads = collections.Counter()
                runs = collections.Counter()
                walls = []
                for rep in range(4):
                    out, wall, load, run, prof = await one(b, assets, code, profile=(rep == 3))
                    imgs.append(px(out["image"]))
                    if rep in (1, 2):
                        loads += load
                        runs += run
                        walls.append(wall)
                diffs = [round(float((np.abs(imgs[0] - x).max(axis=2) > 0).mean()), 5) for x in imgs[1:]]
                sumk = lambda c, kind: sum(v for k, v in c.items() if k[0] == kind) / 2
                print(f"{vname:22s} {name:24s} wall {np.mean(walls):.2f} same-seed diff {diffs}", flush=True)
                print(
                    f"     load: renderer {sumk(loads,'renderer'):.2f} browser {sumk(loads,'browser'):.2f} gpu {sumk(loads,'gpu'):.2f} driver {sumk(loads,'driver'):.2f}"
                    f" | run: renderer {sumk(runs,'renderer'):.2f} browser {sumk(runs,'browser'):.2f} gpu {sumk(runs,'gpu'):.2f}",
                    flush=True,
                )
                print(
                    "     run threads: "
                    + ", ".join(f"{k[0]}/{k[1]} {v/2:.2f}" for k, v in runs.most_common(8) if v >= 0.02),
                    flush=True,
                )
                print("     js self ms: " + top(prof), flush=True)
            await b.close()


if __name__ == "__main__":
    asyncio.run(main())
