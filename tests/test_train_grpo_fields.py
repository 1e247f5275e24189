"""Any field of TRL's GRPOConfig is accepted under `grpo.` (checked against the dataclass itself),
an unknown key gets the nearest names, and a `--set` problem is blamed on `--set`, not the YAML."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from trl import GRPOConfig

from salon.apps.cli import main
from salon.pool.errors import ConfigError
from salon.train.config import GRPOSettings, config_from_dict
from salon.train.trl_fields import SET_BY_SALON

SMOKE = str(Path(__file__).resolve().parent.parent / "train" / "configs" / "smoke.yaml")
SALON = {f.name for f in dataclasses.fields(GRPOSettings)}


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None


TRL_ONLY = [f for f in dataclasses.fields(GRPOConfig) if f.init and f.name not in SALON | set(SET_BY_SALON)]


def test_every_other_grpo_config_field_is_accepted_with_its_default():
    assert len(TRL_ONLY) > 100  # the dataclass itself is the list, not a copy of it
    for f in TRL_ONLY:
        value = _default(f)
        if hasattr(value, "value"):  # an enum default, as YAML would give it
            value = value.value
        cfg = config_from_dict({"grpo": {f.name: value}})
        assert cfg.grpo.extra == {f.name: value}, f.name


def test_trl_fields_reach_grpo_config(tmp_path):
    from salon.train.recipe import grpo_args

    cfg = config_from_dict({"output_dir": str(tmp_path), "grpo": {
        "use_cpu": True, "bf16": False, "epsilon": 0.3, "epsilon_high": 0.28, "num_iterations": 2,
        "log_completions": True, "project": "mine"}})
    args = grpo_args(cfg, tmp_path)
    assert args.epsilon == pytest.approx(0.3) and args.epsilon_high == pytest.approx(0.28)
    assert args.num_iterations == 2 and args.log_completions is True and args.project == "mine"
    assert grpo_args(config_from_dict({"grpo": {"use_cpu": True, "bf16": False}}), tmp_path).project == "salon"
    assert args.model_init_kwargs["use_kernels"] is False  # TRL loads the policy without Hub kernels (recipe.py)


@pytest.mark.parametrize("grpo, needle", [
    ({"epsilonn": 0.3}, "grpo.epsilonn: neither a salon grpo field nor a field of TRL's GRPOConfig; did you mean epsilon"),
    ({"lerning_rate": 1e-4}, "did you mean learning_rate"),
    ({"epsilon": "high"}, "grpo.epsilon='high': TRL's GRPOConfig.epsilon takes float"),
    ({"log_completions": 3}, "GRPOConfig.log_completions takes bool"),
    ({"output_dir": "x"}, "salon sets this GRPOConfig field itself: set output_dir at the top level"),
    ({"use_vllm": True}, "choose the engine with grpo.generation"),
    ({"extra": {"beta": 0.1}}, "grpo.extra.beta: salon has its own grpo.beta"),
])
def test_bad_grpo_keys_are_refused_with_what_to_do(grpo, needle):
    with pytest.raises(ConfigError) as e:
        config_from_dict({"grpo": grpo})
    assert needle in str(e.value)


def test_other_sections_suggest_the_nearest_name():
    with pytest.raises(ConfigError, match=r"judge.refrences: unknown field; did you mean references\?"):
        config_from_dict({"judge": {"refrences": "x"}})


def test_cli_accepts_epsilon_and_blames_set_for_a_typo(capsys):
    assert main(["train", SMOKE, "--set", "grpo.epsilonn=0.3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("salon train: --set has 1 problem(s):")
    assert "--set grpo.epsilonn: neither a salon grpo field nor a field of TRL's GRPOConfig; did you mean epsilon" in err
    assert "smoke.yaml" not in err


def test_cli_blames_the_yaml_for_its_own_problems(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(SMOKE).read_text().replace("  warmup_steps: 0\n", "  warmup_step: 0\n"))
    assert main(["train", str(bad), "--set", "grpo.beta=-1"]) == 2
    err = capsys.readouterr().err
    assert f"salon train: {bad} has 2 problem(s):" in err
    assert "  - grpo.warmup_step: neither a salon grpo field" in err and "did you mean warmup_steps" in err
    assert "  - --set grpo.beta=-1: the KL coefficient cannot be negative" in err
