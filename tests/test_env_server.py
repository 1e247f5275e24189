"""`salon env serve` as a client sees it: a real uvicorn server on 127.0.0.1, OpenEnv's own client.

HTTP routes (/health, /schema, /reset, /step), the websocket session (reset -> step), the same
references for the same seed, the capacity error of a full server, and infrastructure failures
(no browser, a judge that raises) reported as such with a null reward, never 0.
"""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openenv")

from env_support import env_server  # noqa: E402

from salon.curate.sandbox.render import RenderConfig  # noqa: E402
from salon.train.env.client import EnvRenderBackend, PaintEnvClient  # noqa: E402
from salon.train.env.paint import EnvConfig  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SKETCH = (Path(__file__).resolve().parent.parent / "curate" / "examples" / "jellyfish_01_bell.js").read_text()
REPLY = f"Here is my painting.\n```javascript\n{SKETCH}\n```\n"
WEIGHTS = {"gate": 0.05, "length": 0.05, "judge": 0.9}


class RaisingJudge:
    """An image judge whose service is down."""

    name = "test:down"

    def score(self, images):
        raise ConnectionError("judge service unreachable")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = EnvConfig(references="tiny:refs", k=2, max_sessions=2, cache_dir=str(tmp_path_factory.mktemp("env")),
                       render=RenderConfig(browsers=1, timeout_s=60), weights=WEIGHTS)
    with env_server(config) as (url, painter):
        yield url, painter


def test_http_routes(server):
    url, _ = server
    assert httpx.get(url + "/health").json()["status"] == "healthy"
    schema = httpx.get(url + "/schema").json()
    assert "reply" in schema["action"]["properties"] and "components" in schema["observation"]["properties"]
    reset = httpx.post(url + "/reset", json={"seed": 5, "subject": "koi"}, timeout=30).json()
    obs = reset["observation"]
    assert obs["subject"] == "koi" and obs["seed"] == 5 and reset["reward"] is None and not reset["done"]
    assert [m["role"] for m in obs["prompt"]] == ["system", "user"] and "koi" in obs["prompt"][1]["content"]
    assert len(obs["references"]) == 2
    step = httpx.post(url + "/step", json={"action": {"reply": REPLY, "seed": 5, "subject": "koi"}},
                      timeout=120).json()
    o = step["observation"]
    assert step["done"] and o["gate_passed"] and o["violations"] == [] and not o["render_unavailable"]
    judge = o["components"]["judge"]
    assert 0 < judge == pytest.approx(o["paint_fraction"], abs=0.02)  # paint_fraction judge, two measures
    expected = sum(WEIGHTS[c] * o["components"][c] for c in WEIGHTS)
    assert step["reward"] == pytest.approx(expected, abs=1e-9)
    assert base64.b64decode(o["image_png_base64"]).startswith(b"\x89PNG")


def test_websocket_session_same_seed_same_references(server):
    url, _ = server
    with PaintEnvClient(url) as env:
        draws = {seed: [r["id"] for r in env.reset(seed=seed).references] for seed in range(6)}
        again = env.reset(seed=3)
        assert [r["id"] for r in again.references] == draws[3]
        assert len({tuple(v) for v in draws.values()}) > 1  # another seed, another draw
        done = env.step(REPLY)
        assert done.done and done.reward is not None and done.reward > 0 and done.seed == 3
        with pytest.raises(RuntimeError, match="reset"):
            env.step(REPLY)  # one painting per episode
        bad = env.reset(seed=4)
        assert not bad.done
        rejected = env.step("no code here, just words")
        assert rejected.reward == 0.0 and rejected.violations == ["no_sketch"] and not rejected.render_unavailable


def test_a_full_server_answers_capacity_reached(server):
    url, _ = server
    first, second = PaintEnvClient(url), PaintEnvClient(url)
    try:
        first.reset(seed=1)
        second.reset(seed=2)
        third = PaintEnvClient(url)
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            third.reset(seed=3)
        third.close()
    finally:
        first.close()
        second.close()
    with PaintEnvClient(url) as later:  # closed sessions free their slots
        assert later.reset(seed=1).seed == 1


def test_the_environment_is_a_render_backend(server):
    url, _ = server
    backend = EnvRenderBackend(url, sessions=2)
    try:
        ok, rejected = backend.render_many([(SKETCH, 0), ("function setup() { createCanvas(600, 600); }", 0)])
    finally:
        backend.close()
    assert ok.ok and ok.png.startswith(b"\x89PNG") and not ok.unavailable
    assert rejected.violations == ["not_webgl"] or "not_webgl" in rejected.violations


def test_an_unreachable_environment_is_render_unavailable():
    from env_support import free_port

    backend = EnvRenderBackend(f"http://127.0.0.1:{free_port()}", sessions=1)
    try:
        result = backend.submit(SKETCH, 0).result(timeout=60)
    finally:
        backend.close()
    assert result.unavailable and result.violations == []


def test_infrastructure_failures_are_null_rewards_never_zero(tmp_path):
    no_browser = EnvConfig(render=RenderConfig(browsers=1, chromium="/nonexistent/chromium"), cache_dir=str(tmp_path))
    with env_server(no_browser) as (url, _), PaintEnvClient(url) as env:
        env.reset(seed=0)
        obs = env.step(REPLY)
        assert obs.reward is None and obs.render_unavailable and obs.violations == [] and obs.infra_error
        assert obs.components["judge"] is None and obs.done
    judge_down = EnvConfig(judge=f"{__name__}:RaisingJudge", render=RenderConfig(browsers=1), cache_dir=str(tmp_path))
    with env_server(judge_down) as (url, painter), PaintEnvClient(url) as env:
        env.reset(seed=0)
        obs = env.step(REPLY)
        assert obs.reward is None and obs.judge_unavailable and not obs.render_unavailable
        assert obs.gate_passed and "judge service unreachable" in obs.infra_error
        assert painter.infra_failures == 1


def test_a_network_host_needs_the_flag_that_names_the_risk():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "salon.apps.cli", "env", "serve", "--host", "0.0.0.0", "--port", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--insecure-no-auth" in proc.stderr and "serving" not in proc.stdout
