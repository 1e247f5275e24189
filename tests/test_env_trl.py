"""TRL trains against `salon env serve` through its OpenEnv integration (environment_factory):
a tiny policy on a CPU, a real server on 127.0.0.1, two GRPO steps, and no warning that TRL calls
environment_factory experimental (salon chose it; the user cannot act on it)."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("openenv")
pytest.importorskip("trl")

from env_support import env_server  # noqa: E402

from salon.curate.sandbox.render import RenderConfig  # noqa: E402
from salon.train.env.paint import EnvConfig  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_grpo_trains_against_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TRL_EXPERIMENTAL_SILENCE", raising=False)
    from salon.train.env.grpo import train

    config = EnvConfig(references="tiny:refs", k=2, max_sessions=8, cache_dir=str(tmp_path / "env"),
                       render=RenderConfig(browsers=1, timeout_s=60))
    with env_server(config) as (url, painter), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = train(url, "tiny:qwen3", str(tmp_path / "run"), ["koi"], repeat=2, max_steps=2,
                        num_generations=4, max_completion_length=16, cpu=True)
        steps = painter.steps
    assert not [str(w.message) for w in caught if "experimental" in str(w.message)]
    assert trainer.state.global_step == 2
    assert steps == 8  # every rollout of both steps was scored by the server: 2 steps x 4 generations
    logged = [h["rewards/environment_reward/mean"] for h in trainer.state.log_history
              if "rewards/environment_reward/mean" in h]
    # a random tiny policy writes no sketch: the server's gate penalty (0.0), an explicit score, every time
    assert logged == [0.0, 0.0]
