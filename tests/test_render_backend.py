"""The render-backend interface's local implementation: a Renderer hosted on its own loop thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from salon.curate.sandbox.render import RenderConfig, render_sketches
from salon.curate.sandbox.backend import BackendConfig, LocalRenderBackend, RenderBackend, open_backend
from salon.pool.errors import ConfigError

pytestmark = pytest.mark.browser

SKETCH = (Path(__file__).resolve().parent.parent / "curate" / "examples" / "jellyfish_01_bell.js").read_text()


def test_local_backend_renders_like_the_renderer_and_keeps_input_order():
    codes = [SKETCH, None, SKETCH]
    expected = render_sketches(codes, seeds=[1, 1, 2], config=RenderConfig(browsers=1))
    with LocalRenderBackend(RenderConfig(browsers=1)) as backend:
        assert isinstance(backend, RenderBackend)
        got = backend.render_many(zip(codes, [1, 1, 2]))
    assert [(r.ok, r.violations) for r in got] == [(r.ok, r.violations) for r in expected] == \
        [(True, []), (False, ["no_sketch"]), (True, [])]
    assert got[0].paint_fraction == pytest.approx(expected[0].paint_fraction, abs=0.01)


def test_a_backend_without_a_browser_answers_render_unavailable():
    backend = open_backend(BackendConfig(backend="local"), RenderConfig(chromium="/nonexistent/chromium"))
    try:
        result = backend.submit(SKETCH, 0).result(timeout=30)
    finally:
        backend.close()
    assert result.unavailable and result.violations == [] and "could not start" in result.js_errors[0]


def test_backend_config_reports_every_problem_at_once():
    with pytest.raises(ConfigError) as e:
        BackendConfig(backend="slurm", actors=-1, cpus_per_actor=0)
    assert len(e.value.problems) == 3
