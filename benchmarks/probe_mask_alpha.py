"""Why p5.brush paintings come out fuller with Canvas2D on the GPU: 8-bit compositing of many
translucent layers, as its fill masks are drawn (20 layers of a few percent of red each).

    python benchmarks/probe_mask_alpha.py        # any machine: Canvas2D on the CPU, and on the GPU process

Each way fills one 2D canvas with the same colour at alpha a, 20 times over, and reads the alpha
back; the exact result is 255 * (1 - (1 - a)^20). "gpu canvas" runs Chromium without --disable-gpu
on SwiftShader's GL, so Canvas2D goes through Skia's GPU backend as on the vulkan-canvas path,
without a card. Measured in Chromium 156: Skia's CPU raster rounds each layer down (a = 0.01: 41
against 46 exact), the GPU backend does not (55). That is the direction of the paint_fraction gap in
bench_render_gpu_h200.json's fidelity (vulkan-canvas fuller than SwiftShader), and the same gap shows
on a CPU machine when salon renders with these "gpu canvas" flags (still_01_pears at seed 1:
paint_fraction 0.22 against 0.12).
"""

import asyncio
import json

from playwright.async_api import async_playwright

from salon.curate.sandbox.chromium import BASE_CHROMIUM_ARGS, find_chromium

WAYS = {
    "cpu canvas": ["--disable-gpu"],
    "gpu canvas": ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"],
}
LAYERS = """() => Object.fromEntries([0.01, 0.03, 0.1, 0.3].map((a) => {
  const c = new OffscreenCanvas(64, 64), g = c.getContext('2d');
  for (let i = 0; i < 20; i++) { g.fillStyle = `rgb(255 0 0 / ${a})`; g.fillRect(0, 0, 64, 64); }
  return [a, {alpha: g.getImageData(8, 8, 1, 1).data[3], exact: Math.round(255 * (1 - Math.pow(1 - a, 20)))}];
}))"""


async def main() -> None:
    async with async_playwright() as p:
        for way, flags in WAYS.items():
            browser = await p.chromium.launch(executable_path=find_chromium(), headless=True, args=BASE_CHROMIUM_ARGS + flags)
            page = await browser.new_page()
            print(json.dumps({"way": way, "after_20_layers": await page.evaluate(LAYERS)}))
            await browser.close()


if __name__ == "__main__":
    asyncio.run(main())
