"""`render.backend: local|ray|env` in the train config: every problem at once, and the backend the
recipe builds from it (salon.train.recipe.build_render_backend). No browser, no cluster: the Ray
run and its killed actor are in test_train_ray.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from salon.pool.errors import ConfigError
from salon.train.config import load_config
from salon.train.recipe import build_render_backend

SMOKE = Path(__file__).resolve().parent.parent / "train" / "configs" / "smoke.yaml"


def problems(*overrides) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_config(SMOKE, list(overrides))
    return e.value.problems


def test_backend_settings_report_every_problem_at_once():
    got = problems("render.backend=slurm", "render.actors=-1", "render.cpus_per_actor=0", "render.env_sessions=0",
                   "render.env_url=http://127.0.0.1:8000")
    text = "\n".join(got)
    for needle in ("render.backend='slurm'", "render.actors=-1", "render.cpus_per_actor=0",
                   "render.env_sessions=0", "render.env_url is set but render.backend=slurm"):
        assert needle in text, needle
    assert len(got) == 5


def test_env_needs_a_url_and_leaves_sizing_to_the_server():
    text = "\n".join(problems("render.backend=env", "render.workers=2"))  # smoke.yaml has browsers: 2
    assert "render.env_url" in text and "salon env serve" in text
    assert "render.workers=2 sizes the local backend only" in text and "render.env_sessions" in text
    assert "salon env serve --browsers" in text
    assert "http(s)://" in "\n".join(problems("render.backend=env", "render.browsers=0", "render.env_url=host:8000"))


def test_ray_without_ray_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without the `ray` extra looks like
    text = "\n".join(problems("render.backend=ray", "render.ray_address=", "render.workers=3"))
    assert "pip install 'salon[ray]'" in text
    assert "render.ray_address is empty" in text and "render.actors" in text


def test_ray_local_is_refused_in_several_processes():
    cfg = load_config(SMOKE, ["render.backend=ray", "render.browsers=1"])
    assert (cfg.render.ray_address, cfg.render.actors, cfg.render.cpus_per_actor) == ("local", 0, 2.0)
    with pytest.raises(ConfigError, match="ray start --head"):
        build_render_backend(cfg, processes=2)


def test_the_default_is_the_local_worker_pool():
    from salon.train.render_workers import RenderPool

    cfg = load_config(SMOKE, ["render.gpu=off"])
    render = build_render_backend(cfg)
    try:  # not started: worker processes come up with the trainer
        assert isinstance(render, RenderPool) and render.n == 1
        assert (render.config.browsers, render.config.timeout_s, render.config.gpu) == (2, 30, "off")
    finally:
        render.close()


def test_an_env_backend_that_cannot_reach_its_server_is_render_unavailable():
    pytest.importorskip("openenv")
    from env_support import free_port

    from salon.train.env.client import EnvRenderBackend

    cfg = load_config(SMOKE, ["render.backend=env", "render.browsers=0", "render.env_sessions=1",
                              f"render.env_url=http://127.0.0.1:{free_port()}"])
    render = build_render_backend(cfg)
    try:
        assert isinstance(render, EnvRenderBackend)
        result = render.submit("function setup() {}", 0).result(timeout=60)
    finally:
        render.close()
    assert result.unavailable and result.violations == [] and not result.ok  # missing, never a bad painting
