"""Which GPU flag sets draw p5.brush's Canvas2D masks on the card and still paint one sketch and seed
the same way every time: repeat renders compared pixel by pixel, and heavy renders/s, per flag set.

    python benchmarks/probe_canvas_flags.py                        # every candidate, one JSON line each
    python benchmarks/probe_canvas_flags.py angle-vulkan,av-no-dmsaa --repeats 8
    # results/probe_canvas_flags_h200.jsonl: its output on the H200 (--repeats 6), and
    # results/probe_canvas_flags_skia_h200.jsonl: av-no-dmsaa against the Skia variants (--repeats 3)

Each candidate is registered as a GPU flag set and salon's own renderer draws on it (the
sandbox page, 4 browsers of 2 pages, so renders overlap as they do in training). Every sketch of
bench_render.py's light and heavy lists is rendered `--repeats` times at seed 0 in one batch, and
each image is compared with that sketch's first: how many pixels differ at all and their share, the
share more than 16 levels apart, and the largest difference in any channel (the sandbox's no-leak
tests allow 0.1 % of pixels more than 8 levels apart). Then the heavy sketches' steady-state renders/s as bench_render.py
measures them. `vulkan-icd` (Canvas2D on the CPU) is the exact reference; `angle-vulkan` (the bare
`--use-angle=vulkan` set) draws Canvas2D on the card and paints some seeds two ways. The other
candidates switch off choices Skia's GPU canvas makes per frame (dynamic MSAA, MSAA, out-of-process
canvas raster); `av-no-dmsaa` won and is GPU_FLAG_SETS' `vulkan-canvas`.
On a machine without an NVIDIA device every candidate is refused and said so.
"""

import argparse
import asyncio
import json

from render_gpu_rows import rate_row
from render_ways import EXAMPLES, HEAVY, LIGHT
from gpu_render_checks import gaps

from salon.curate.sandbox.render import Renderer, RenderConfig
from salon.curate.sandbox.gpu import GPU_FLAG_SETS
from salon.pool.errors import SetupError

AV = ["--use-gl=angle", "--use-angle=vulkan", "--enable-features=Vulkan", "--ignore-gpu-blocklist"]
CANDIDATES = {
    "vulkan-icd": GPU_FLAG_SETS["vulkan-icd"],
    "angle-vulkan": AV,
    "av-no-dmsaa": AV + ["--disable-features=DynamicMSAA"],  # what GPU_FLAG_SETS calls vulkan-canvas
    "av-no-dmsaa-msaa0": AV + ["--disable-features=DynamicMSAA", "--msaa-sample-count=0"],
    "av-no-msaa": AV + ["--disable-features=DynamicMSAA,CanvasOopRasterization", "--msaa-sample-count=0"],
    # With the GPU engine busy all the time at the best arrangement (nvidia-smi, 100 %), what the card
    # does per painting decides the speed: Skia's Graphite batches a canvas's many small paths,
    # Ganesh over ANGLE keeps one Vulkan device per GPU process, and tile raster on the CPU leaves
    # the card to canvases and compositing. (One --enable-features switch: Chromium keeps the last.)
    "vc-graphite": ["--use-gl=angle", "--use-angle=vulkan", "--enable-features=Vulkan,SkiaGraphite",
                    "--ignore-gpu-blocklist", "--disable-features=DynamicMSAA"],
    "vc-cpu-tiles": AV + ["--disable-features=DynamicMSAA", "--disable-gpu-rasterization"],
    "av-skia-on-angle": ["--use-gl=angle", "--use-angle=vulkan", "--ignore-gpu-blocklist",
                         "--disable-features=DynamicMSAA"],
}


def repeats_report(name: str, repeats: int) -> dict:
    names = HEAVY + LIGHT
    items = [((EXAMPLES / f"{n}.js").read_text(), 0) for n in names for _ in range(repeats)]

    async def run():
        async with Renderer(RenderConfig(gpu="on", gl=name, browsers=4, pages_per_browser=2)) as renderer:
            return await renderer.render_many(items)

    results = asyncio.run(run())
    per_sketch = {}
    for i, sketch in enumerate(names):
        group = results[i * repeats:(i + 1) * repeats]
        images = [r.png for r in group if r.png is not None]
        if len(images) < 2:
            per_sketch[sketch] = {"images": len(images)}
            continue
        apart = [gaps(images[0], x) for x in images[1:]]
        per_sketch[sketch] = {"images": len(images),
                              "max_pixels_differing": int(max(int((g > 0).sum()) for g in apart)),
                              "max_share_differing": round(max(float((g > 0).mean()) for g in apart), 6),
                              "max_share_off_by_16": round(max(float((g > 16).mean()) for g in apart), 5),
                              "max_level_gap": int(max(int(g.max()) for g in apart))}
    done = [v for v in per_sketch.values() if "max_pixels_differing" in v]
    return {"no_image": sum(r.png is None for r in results),
            "max_share_differing": max((v["max_share_differing"] for v in done), default=None),
            "max_share_off_by_16": max((v["max_share_off_by_16"] for v in done), default=None),
            "max_level_gap": max((v["max_level_gap"] for v in done), default=None),
            "exact_sketches": sum(v["max_pixels_differing"] == 0 for v in done), "sketches": len(names),
            "per_sketch": per_sketch}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="?", default=",".join(CANDIDATES), help="comma-separated candidates")
    ap.add_argument("--repeats", type=int, default=6, help="renders of each sketch at seed 0")
    ap.add_argument("--rate", action=argparse.BooleanOptionalAction, default=True, help="also heavy renders/s")
    args = ap.parse_args()
    heavy = [(EXAMPLES / f"{n}.js").read_text() for n in HEAVY] * 2
    for name in args.names.split(","):
        GPU_FLAG_SETS.setdefault(name, CANDIDATES[name])
        line = {"flag_set": name, "flags": GPU_FLAG_SETS[name]}
        try:
            line["repeats"] = repeats_report(name, args.repeats)
            if args.rate:
                row = rate_row(name, heavy, RenderConfig(gpu="on", gl=name))
                line["heavy"] = {k: row[k] for k in ("browsers", "pages", "rendered", "renders", "renders_per_s",
                                                     "cores_busy", "cores_by_process")}
        except SetupError as e:
            line["error"] = str(e)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
