"""Train configs: shipped YAMLs load, every problem is reported at once, overrides work."""

from __future__ import annotations

from pathlib import Path

import pytest

from salon.pool.errors import ConfigError
from salon.train.config import config_from_dict, load_config

CONFIGS = Path(__file__).resolve().parent.parent / "train" / "configs"


@pytest.mark.parametrize("name", ["smoke.yaml", "lora_1gpu.yaml", "lora_h200_64.yaml", "multi_gpu.yaml"])
def test_shipped_configs_load(name):
    cfg = load_config(CONFIGS / name)
    assert cfg.grpo.num_generations >= 2 and cfg.lora.target_modules == "all-linear"


def test_every_problem_reported_at_once():
    with pytest.raises(ConfigError) as e:
        config_from_dict({"grpo": {"beta": -1, "num_generations": 3, "top_p": 2, "scale_rewards": "rank"},
                          "lora": {"r": 0}, "judge": {"k": 0}, "reward": {"weights": {"hps": 0.3}},
                          "render": {"workers": 0}, "bogus": 1},
                         overrides=["grpo.max_steps"])
    text = str(e.value)
    for needle in ("grpo.beta", "multiple of grpo.num_generations", "grpo.top_p", "grpo.scale_rewards",
                   "lora.r", "judge.k", "reward.weights.hps", "render.workers", "bogus", "--set 'grpo.max_steps'"):
        assert needle in text, needle
    assert len(e.value.problems) >= 10


def test_overrides_are_yaml_values():
    cfg = load_config(CONFIGS / "smoke.yaml", ["grpo.beta=0.01", "data.subjects=[koi, peony]",
                                               "judge.kwargs.device=cpu", "output_dir=/tmp/x"])
    assert cfg.grpo.beta == 0.01 and cfg.data.subjects == ["koi", "peony"]
    assert cfg.judge.kwargs == {"device": "cpu"} and cfg.output_dir == "/tmp/x"


def test_one_set_takes_several_overrides():
    from salon.apps.cli import build_parser
    from salon.apps.cmd_train import overrides

    args = build_parser().parse_args(["train", "c.yaml", "--set", "grpo.beta=0.1", "grpo.max_steps=3",
                                      "--set", "judge.k=2"])
    assert overrides(args) == ["grpo.beta=0.1", "grpo.max_steps=3", "judge.k=2"]


def test_cli_flags_become_overrides():
    from salon.apps.cli import build_parser
    from salon.apps.cmd_train import overrides

    args = build_parser().parse_args(["train", "c.yaml", "--output-dir", "d", "--max-steps", "3",
                                      "--save-steps", "1", "--resume", "latest", "--set", "grpo.beta=0.1"])
    assert overrides(args) == ["output_dir=d", "grpo.max_steps=3", "grpo.save_steps=1", "resume=latest",
                               "grpo.beta=0.1"]


def test_a_reward_weight_given_with_set_takes_effect():
    """An image judge's weight given on the command line is used (it was read from a 0-filled dict)."""
    from salon.apps.cli import build_parser
    from salon.apps.cmd_train import overrides

    args = build_parser().parse_args(["train", "c.yaml", "--set", "reward.weights.colourfulness=0.2"])
    for name in ("lora_1gpu.yaml", "multi_gpu.yaml"):
        reward = load_config(CONFIGS / name, overrides(args)).reward
        assert reward.weight("colourfulness") == pytest.approx(0.2)
        assert reward.weight("judge") == pytest.approx(0.9)  # the config's other weights stay
    # a config that names no weights: the defaults stay next to the one given
    reward = config_from_dict({}, overrides(args)).reward
    assert reward.weight("colourfulness") == pytest.approx(0.2) and reward.weight("judge") == pytest.approx(0.9)


@pytest.mark.parametrize("override, needle", [
    ("reward.image_judges.colourfulness=0.2", "give their weights under reward.weights"),
    ("reward.weights.colorfulness=0.2", "reward.weights.colorfulness: unknown component"),
    ("reward.weights.judge=-1", "must be a number >= 0"),
])
def test_a_reward_weight_that_cannot_take_effect_is_refused_with_why(override, needle):
    with pytest.raises(ConfigError) as e:
        load_config(CONFIGS / "multi_gpu.yaml", [override])
    assert needle in str(e.value)


def test_a_weight_for_an_image_judge_that_is_not_computed_is_refused():
    with pytest.raises(ConfigError) as e:
        load_config(CONFIGS / "lora_1gpu.yaml", ["reward.image_judges=[paint_fraction]",
                                                 "reward.weights.colourfulness=0.2"])
    assert "does not compute colourfulness" in str(e.value)


def test_the_h200_recipe_is_the_measured_64_row_setup():
    """lora_h200_64.yaml is lora_1gpu.yaml with the overrides of the row it was chosen from
    (results/bench_train_gpu_64_earlier_h200.json, icd_16_browsers_filled_compiled_update_whole_groups, run by
    benchmarks/bench_train_gpu.py at 8 prompts a step and 2,048 tokens), so that row's figures and the
    recipe's own (the row lora_h200_64 of results/bench_train_gpu_64_h200.json) measure one setup."""
    measured_row = ["render.gl=vulkan-icd", "render.workers=4", "render.trainer_cores=2",
                    "grpo.generation_attention=filled", "grpo.gradient_checkpointing=false",
                    "grpo.torch_compile=true", "reward.judge_as_rendered=false"]
    bench_sizes = ["grpo.gradient_accumulation_steps=8", "grpo.max_completion_length=2048"]
    recipe = load_config(CONFIGS / "lora_h200_64.yaml", ["output_dir=runs/x"])
    row = load_config(CONFIGS / "lora_1gpu.yaml", ["output_dir=runs/x", *bench_sizes, *measured_row])
    assert recipe == row
    # the row's overrides change what they name: equality is not two defaults agreeing
    assert load_config(CONFIGS / "lora_1gpu.yaml", ["output_dir=runs/x", *bench_sizes]) != row
