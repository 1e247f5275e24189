"""The GPU rendering mode: config, the fallback on hosts without a GPU, and, on a GPU node, the
GPU path's determinism and the share of the card a sketch can take.

On a CPU machine (CI) `gpu=auto` must fall back to SwiftShader and say so on every result;
`gpu=on` must refuse with what to do. On a host where Chromium can draw on an NVIDIA GPU, the
same code and seed must give the same image on the GPU path (within render noise), and texture,
2D-canvas and bitmap bombs must leave the card's memory where the budget puts it (the hostile sequence in test_render_sandbox.py runs
there on the GPU path too, since `auto` picks it).
"""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from render_support import HOSTILE, SAME_IMAGE_MAX_PIXEL_SHARE, differing_share, example
from salon.curate.sandbox.render import Renderer, RenderConfig
from salon.curate.sandbox.gpu import nvidia_present
from salon.pool.errors import ConfigError, SetupError

pytestmark = pytest.mark.browser


def test_config_reports_bad_gpu_settings_together():
    with pytest.raises(ConfigError) as e:
        RenderConfig(gpu="maybe", gpu_memory_mb=1, gl="angle-egl")
    assert len(e.value.problems) == 3 and "auto, on, off" in str(e.value)
    assert "vulkan-canvas, vulkan-icd" in str(e.value)  # what to give instead
    with pytest.raises(ConfigError, match="gpu is off"):
        RenderConfig(gpu="off", gl="vulkan-icd")  # a flag set that would never be used


def test_train_config_refuses_a_flag_set_it_would_ignore():
    from salon.train.config import RenderSettings

    assert RenderSettings(gl="vulkan-icd").gl == "vulkan-icd"
    for bad, says in (({"gl": "nope"}, "vulkan-canvas, vulkan-icd"), ({"gl": "vulkan-icd", "gpu": "off"}, "gpu=off"),
                      ({"gl": "vulkan-icd", "backend": "env", "env_url": "http://127.0.0.1:8000"}, "server")):
        with pytest.raises(ConfigError, match=says):
            RenderSettings(**bad)


def test_each_path_gets_its_measured_arrangement(monkeypatch):
    """SwiftShader: one browser per two cores, one page each (its GPU process queues pages); the GPU:
    one browser per core, one page each (bench_render.py --gpu); what the config names wins."""
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert RenderConfig().arrangement(gpu=False) == (8, 1)
    assert RenderConfig().arrangement(gpu=True) == (16, 1)
    assert RenderConfig(browsers=3, pages_per_browser=2).arrangement(gpu=True) == (3, 2)
    assert RenderConfig(browsers=3).arrangement(gpu=False) == (3, 1)


@pytest.mark.skipif(nvidia_present(), reason="this host has an NVIDIA GPU")
async def test_auto_falls_back_to_swiftshader_and_every_result_says_so():
    async with Renderer(RenderConfig(browsers=1, gpu="auto")) as renderer:
        assert renderer.gl.name == "swiftshader" and not renderer.gl.gpu
        result = await renderer.render(example("jellyfish_01_bell"))
    assert result.ok and result.gl == "swiftshader"


@pytest.mark.skipif(nvidia_present(), reason="this host has an NVIDIA GPU")
async def test_gpu_on_without_a_gpu_refuses_with_what_to_do():
    for gl in ("", "vulkan-icd"):
        with pytest.raises(SetupError, match="gpu=auto"):
            async with Renderer(RenderConfig(browsers=1, gpu="on", gl=gl)):
                pass


async def test_a_named_flag_set_is_the_only_one_tried(monkeypatch):
    """RenderConfig.gl: the probe starts that flag set's browser alone (a GPU host is faked, so on a
    CPU machine the named set fails as SwiftShader and auto falls back, naming only it)."""
    from salon.curate.sandbox import gpu as render_gpu

    tried = []
    real = render_gpu.probe_one

    async def probe_one(playwright, chromium, base_args, name, flags, **kw):
        tried.append(name)
        return await real(playwright, chromium, base_args, name, flags, **kw)

    monkeypatch.setattr(render_gpu, "nvidia_present", lambda: True)
    monkeypatch.setattr(render_gpu, "probe_one", probe_one)
    monkeypatch.setattr(render_gpu, "_chosen", {})
    async with Renderer(RenderConfig(browsers=1, gl="vulkan-icd")) as renderer:
        chosen = renderer.gl.name
    assert tried == ["vulkan-icd"]
    assert chosen == ("vulkan-icd" if nvidia_present() else "swiftshader")


def test_static_gate_flags_shaders_of_the_sketch_own():
    from salon.curate.sandbox import gate

    assert "bare_primitives" in gate.static_violations((HOSTILE / "gpu_shader_loop.js").read_text())


@pytest.fixture(scope="module")
async def gpu_renderer():
    if not nvidia_present():
        pytest.skip("no NVIDIA GPU here")
    async with Renderer(RenderConfig(browsers=1, gpu="on", render_rejects=True)) as renderer:
        yield renderer


async def test_gpu_same_seed_same_image(gpu_renderer):
    code = example("koi_02_swirl")
    a, b, c = [await gpu_renderer.render(code, s) for s in (3, 3, 4)]
    assert a.ok and b.ok and c.ok and a.gl == gpu_renderer.gl.name != "swiftshader"
    assert differing_share(a.png, b.png) < SAME_IMAGE_MAX_PIXEL_SHARE
    assert differing_share(a.png, c.png) > 0.05


def _gpu_memory_mib() -> int:
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


# WebGL textures, and where Canvas2D is drawn on the card (vulkan-canvas) 2D canvases and bitmaps
@pytest.mark.parametrize("bomb", ["gpu_texture_bomb", "gpu_canvas2d_bomb", "gpu_bitmap_bomb"])
async def test_gpu_memory_bombs_stay_inside_their_budget(gpu_renderer, bomb):
    before = _gpu_memory_mib()
    peak = [before]

    async def watch():
        while True:
            peak[0] = max(peak[0], _gpu_memory_mib())
            await asyncio.sleep(0.1)

    watcher = asyncio.ensure_future(watch())
    try:
        bad = await gpu_renderer.render((HOSTILE / f"{bomb}.js").read_text(), timeout_s=30)
    finally:
        watcher.cancel()
    assert "runtime_error" in bad.violations and any("GPU memory budget" in d for d in bad.details), bad
    # the budget (1024 MB) plus the browser's own GPU process overhead (measured ~300 MB)
    assert peak[0] - before < gpu_renderer.config.gpu_memory_mb + 768, (before, peak[0])
    after = await gpu_renderer.render(example("jellyfish_01_bell"))
    assert after.ok and after.gl != "swiftshader"
