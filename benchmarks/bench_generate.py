"""Is orchestration the bottleneck? End-to-end generation against render-only, side by side.

A loopback OpenAI-compatible server answers at once with the bundled example sketches
(`curate/examples/*.js`), so the model costs nothing; generation then should run at the
renderer's speed. Both phases render the same (sketch, seed) pairs with the same
`RenderConfig`; render-only first, then `generate_async` (calls, extraction, render, store).

    python benchmarks/bench_generate.py [-n 28] [--browsers 0] [--repeat 1]

Target: end-to-end candidates/s at least 90 % of render-only.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


async def main(n: int, browsers: int, repeat: int) -> None:
    from curate_openai_server import ChatServer

    from salon.curate.backends import BackendConfig
    from salon.curate.generate import GenerateConfig, generate_async
    from salon.curate.sandbox.render import RenderConfig, Renderer

    sketches = [p.read_text() for p in sorted((ROOT / "curate" / "examples").glob("*.js"))]
    pairs = [(sketches[i % len(sketches)], i) for i in range(n)]
    async with Renderer(RenderConfig(browsers=browsers)) as renderer:
        await renderer.render(sketches[0], 0)  # warm: first page load is not part of either
        for trial in range(repeat):
            start = time.perf_counter()
            results = await renderer.render_many(pairs)
            render_only = n / (time.perf_counter() - start)
            with ChatServer(sketches) as server, tempfile.TemporaryDirectory() as pool:
                config = GenerateConfig(
                    subject="peach hibiscus", models=["openai:examples"], n=n, pool=pool,
                    progress=False, backend=BackendConfig(base_url=server.base_url,
                                                          concurrency=8, retries=0))
                start = time.perf_counter()
                report = await generate_async(config, renderer)
                end_to_end = n / (time.perf_counter() - start)
            counts = report.counts["openai:examples"]
            print(f"trial {trial + 1}: {n} sketches, {renderer.config.browser_count} browser(s), "
                  f"{sum(r.ok for r in results)} pass the gate")
            print(f"  render only   {render_only:6.2f} candidates/s")
            print(f"  end to end    {end_to_end:6.2f} candidates/s  "
                  f"(ok {counts.ok}, rejected {counts.rejected}, failed {counts.failed})")
            print(f"  ratio         {end_to_end / render_only:6.1%}  (target >= 90 %)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=28, help="sketches per phase")
    p.add_argument("--browsers", type=int, default=0, help="0: one per core")
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    asyncio.run(main(args.n, args.browsers, args.repeat))
