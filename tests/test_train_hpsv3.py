"""HPSv3 as `reward.absolute` in `salon train` (issue 19): the config check, and one CPU smoke step
whose archive holds the score (reward_absolute) and mu / log sigma in their own columns.

The run is smoke.yaml (tiny policy, tiny judge, real rendering) for one step with
reward.absolute=hpsv3 on tiny:hpsv3, weighted like the prior art's judge-led mix (0.6 / 0.3).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from salon.apps.cli import main
from salon.pool.errors import ConfigError
from salon.train.config import config_from_dict

SMOKE = str(Path(__file__).resolve().parent.parent / "train" / "configs" / "smoke.yaml")


def test_absolute_kwargs_are_checked_with_the_config():
    reward = config_from_dict({"reward": {"absolute": "hpsv3", "weights": {"absolute": 0.3},
                                          "absolute_kwargs": {"model": "tiny:hpsv3", "batch_size": 4,
                                                              "dtype": "bfloat16", "prompt": "a koi"}}}).reward
    assert reward.weight("absolute") == 0.3 and reward.absolute_kwargs["batch_size"] == 4
    with pytest.raises(ConfigError) as e:
        config_from_dict({"reward": {"absolute": "hpsv3", "absolute_kwargs": {"dtype": "fp8"}}})
    assert any("absolute_kwargs.model is required" in p for p in e.value.problems)
    with pytest.raises(ConfigError) as e:
        config_from_dict({"reward": {"absolute": "hpsv3",
                                     "absolute_kwargs": {"model": "./no-ckpt", "dtype": "fp8", "batch_size": 0}}},
                         find_models=True)
    assert len([p for p in e.value.problems if "absolute_kwargs" in p]) == 3  # the model with its two settings


@pytest.mark.browser
@pytest.mark.slow
def test_a_run_archives_mu_and_score_in_their_own_columns(tmp_path, monkeypatch):
    from salon.train.record.archive import load_rollouts

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    out = tmp_path / "run"
    assert main(["train", SMOKE, "--output-dir", str(out), "--max-steps", "1",
                 "--set", "reward.absolute=hpsv3", "reward.absolute_kwargs={model: tiny:hpsv3, batch_size: 2}",
                 "reward.weights={gate: 0.05, length: 0.05, judge: 0.6, absolute: 0.3}"]) == 0
    assert (out / "tiny-hpsv3" / "HPSv3.safetensors").is_file()
    df = load_rollouts(out, images=False)
    assert {"reward_absolute", "absolute_mu", "absolute_log_sigma", "absolute_reason"} <= set(df.columns)
    scored = df[df["gate_passed"]]
    assert len(scored) > 0 and scored["absolute_mu"].notna().all() and scored["absolute_log_sigma"].notna().all()
    for _, row in scored.iterrows():
        assert row["reward_absolute"] == pytest.approx(1 / (1 + math.exp(-row["absolute_mu"] / 4)))
        assert row["reward"] == pytest.approx(0.05 + 0.05 * row["reward_length"] + 0.6 * row["reward_judge"]
                                              + 0.3 * row["reward_absolute"])
    rejected = df[~df["gate_passed"]]
    assert rejected["absolute_mu"].isna().all() and rejected["reward_absolute"].isna().all()
    provenance = json.loads((out / "rollouts" / "provenance.json").read_text())
    assert provenance["absolute"] == f"hpsv3:{out / 'tiny-hpsv3'}"
