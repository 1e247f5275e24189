"""What `bench_render.py --gpu` measures beyond throughput: fidelity between the two GL paths,
whether a GPU flag set paints the same image twice, and how much a render-heavy minute slows a
bf16 matmul loop sharing the card.

    from gpu_render_checks import fidelity, interference, same_seed
    rows = fidelity(names, seeds=(0, 1, 2))       # per sketch and seed: pixels off by > 16, judges on both
    report = same_seed(codes, renders=4, gl="vulkan-icd")   # pixels that differ between identical renders
    report = interference(codes, RenderConfig(gpu="on"), alone_s=20, busy_s=60)

Fidelity renders each sketch at each seed on both paths and reports the share of pixels more than
16 levels apart in any channel over the whole image, the image judges' scores on both, and a
pairwise judge's P(beats a reference) on both (a tiny random Qwen2.5-VL: the mechanics of the
judge path, not a trained opinion). Interference runs a matmul loop in a child process (so its
CUDA context is its own, as a trainer's would be), alone and then while this process renders
heavy sketches on the GPU path without pause, every slot (browsers x pages) busy.
"""

from __future__ import annotations

import asyncio
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from salon.curate.sandbox.render import Renderer, RenderConfig

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"


def gaps(a: bytes, b: bytes):
    """Per pixel of two same-sized PNGs, the largest difference in any channel (levels, 0-255)."""
    import numpy as np
    from PIL import Image

    pa, pb = (np.asarray(Image.open(io.BytesIO(x)).convert("RGB")).astype(int) for x in (a, b))
    return np.abs(pa - pb).max(axis=2)


def share_apart(a: bytes, b: bytes, levels: int = 0) -> float:
    """Share of pixels of two same-sized PNGs more than `levels` apart in some channel."""
    return float((gaps(a, b) > levels).mean())


def same_seed(codes: list[str], renders: int = 4, browsers: int = 2, gl: str = "") -> dict:
    """Each sketch rendered `renders` times at seed 0 on the GPU path (flag set `gl`, "" the probe's
    choice), over `browsers` browsers: the share
    of pixels that differ at all from the first render (worst and mean over the later ones), the share
    more than 8 levels apart (what the sandbox's tests, which compare a render after each hostile
    sketch with the same render alone, count as different) and the largest gap in any channel."""

    async def run():
        async with Renderer(RenderConfig(gpu="on", gl=gl, browsers=browsers)) as renderer:
            return renderer.gl.name, await renderer.render_many([(c, 0) for c in codes for _ in range(renders)])

    gl, results = asyncio.run(run())
    shares, apart, largest = [], [], []
    for i in range(len(codes)):
        group = results[i * renders:(i + 1) * renders]
        failed = [r for r in group if r.png is None]
        if failed:
            return {"gl": gl, "error": f"a render gave no image: {failed[0].violations} {failed[0].details[:2]}"}
        for gap in (gaps(group[0].png, r.png) for r in group[1:]):
            shares.append(float((gap > 0).mean()))
            apart.append(float((gap > 8).mean()))
            largest.append(int(gap.max()))
    return {"gl": gl, "sketches": len(codes), "renders_each": renders,
            "max_share_differing": round(max(shares), 5), "mean_share_differing": round(statistics.mean(shares), 6),
            "max_share_off_by_8": round(max(apart), 5), "max_level_gap": max(largest)}


def _tiny_judge():
    from salon.judges.vlm_transformers import TransformersJudgeConfig, TransformersPairwiseJudge
    from salon.models.tiny import build_vl

    folder = build_vl(Path(tempfile.mkdtemp(prefix="salon-fidelity-judge-")), "qwen2_5_vl")
    return TransformersPairwiseJudge(TransformersJudgeConfig(model=str(folder)))


def fidelity(names: list[str], seeds=(0, 1, 2)) -> dict:
    from PIL import Image

    from salon.judges.image_judges import colourfulness, composition, paint_fraction

    items = [((EXAMPLES / f"{n}.js").read_text(), s) for n in names for s in seeds]

    async def on(gpu: str):
        async with Renderer(RenderConfig(gpu=gpu)) as renderer:
            return await renderer.render_many(items)

    gpu, soft = asyncio.run(on("on")), asyncio.run(on("off"))
    judge = _tiny_judge()
    reference = Image.open(io.BytesIO(soft[0].png)).convert("RGB")  # the first sketch, SwiftShader, seed 0
    rows = []
    for (name, seed), g, s in zip(((n, s) for n in names for s in seeds), gpu, soft):
        if g.png is None or s.png is None:
            rows.append({"sketch": name, "seed": seed, "error": "no image on one path"})
            continue
        ia, ib = (Image.open(io.BytesIO(x.png)).convert("RGB") for x in (g, s))
        pa, pb = judge.first_wins([(ia, reference), (ib, reference)])
        rows.append({"sketch": name, "seed": seed,
                     "off_by_more_than_16": round(share_apart(g.png, s.png, 16), 5),
                     "paint_fraction": [round(paint_fraction(ia), 4), round(paint_fraction(ib), 4)],
                     "colourfulness": [round(colourfulness(ia), 4), round(colourfulness(ib), 4)],
                     "lower_half": [round(composition(ia).lower_half, 4), round(composition(ib).lower_half, 4)],
                     "judge_p": [None if pa is None else round(pa, 5), None if pb is None else round(pb, 5)]})
    ok = [r for r in rows if "error" not in r]
    # Render noise on one path, for scale: the same sketch and seed twice on SwiftShader.
    again = asyncio.run(on("off"))
    noise = [share_apart(x.png, y.png, 16) for x, y in zip(soft, again) if x.png and y.png]
    return {
        "rows": rows,
        "mean_off_by_more_than_16": round(statistics.mean(r["off_by_more_than_16"] for r in ok), 5) if ok else None,
        "max_off_by_more_than_16": max((r["off_by_more_than_16"] for r in ok), default=None),
        "swiftshader_rerun_off_by_more_than_16": round(max(noise), 5) if noise else None,
        "judge_p_mean_abs_difference": round(statistics.mean(abs(r["judge_p"][0] - r["judge_p"][1]) for r in ok
                                                             if None not in r["judge_p"]), 5) if ok else None,
    }


_MATMUL = """
import sys, time, json, torch
seconds = float(sys.argv[1]); n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16); b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(20): a @ b
torch.cuda.synchronize(); t0 = time.perf_counter()
print(json.dumps({"ready": time.time()}), flush=True)
while time.perf_counter() - t0 < seconds:
    s = time.perf_counter()
    for _ in range(50): a @ b
    torch.cuda.synchronize()
    print(json.dumps({"t": time.time(), "tflops": 50 * 2 * n**3 / (time.perf_counter() - s) / 1e12}), flush=True)
"""


def interference(codes: list[str], config: RenderConfig, alone_s: float = 20, busy_s: float = 60) -> dict:
    """bf16 matmul TFLOP/s alone, then while `config` renders on the GPU path with every slot
    (browsers x pages) busy all the time."""
    child = subprocess.Popen([sys.executable, "-c", _MATMUL, str(alone_s + busy_s + 5)], stdout=subprocess.PIPE, text=True)
    ready = json.loads(child.stdout.readline())["ready"]
    time.sleep(max(0.0, ready + alone_s - time.time()))
    t_busy = time.time()

    async def render_for(seconds: float) -> int:
        async with Renderer(config) as renderer:
            deadline = time.monotonic() + seconds

            async def slot(k: int) -> int:
                done, i = 0, k
                while time.monotonic() < deadline:
                    result = await renderer.render(codes[i % len(codes)], i)
                    done += result.png is not None
                    i += renderer.browsers * renderer.pages
                return done

            return sum(await asyncio.gather(*(slot(k) for k in range(renderer.browsers * renderer.pages))))

    rendered = asyncio.run(render_for(busy_s))
    t_end = time.time()
    samples = [json.loads(line) for line in child.stdout if line.strip()]
    child.wait()
    alone = [s["tflops"] for s in samples if s["t"] < t_busy]
    busy = [s["tflops"] for s in samples if t_busy + 5 < s["t"] < t_end]  # past the browsers' start
    a, b = statistics.median(alone), statistics.median(busy)
    return {"matmul_tflops_alone": round(a, 1), "matmul_tflops_while_rendering": round(b, 1),
            "slowdown": round(1 - b / a, 4), "renders_during": rendered, "render_seconds": round(t_end - t_busy, 1)}
