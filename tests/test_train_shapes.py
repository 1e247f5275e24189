"""Named architectures with random weights (random:NAME) and the generation-engine switch."""

from __future__ import annotations

import importlib.util

import pytest

from salon.pool.errors import ConfigError
from salon.train.config import config_from_dict
from salon.train.engine.choice import generation_kwargs
from salon.models.names import resolve_model
from salon.models.shapes import QWEN3_1_7B, build_random

SMALL_LM = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8)


def test_random_policy_keeps_the_real_vocabulary_and_loads_with_auto_classes(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = build_random("qwen3-1.7b", tmp_path / "p", shape=SMALL_LM)
    model, tok = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    assert model.config.vocab_size == QWEN3_1_7B["vocab_size"] and model.config.num_hidden_layers == 2
    # the small tokenizer decodes ids it does not know to nothing rather than failing
    assert isinstance(tok.decode([QWEN3_1_7B["vocab_size"] - 1, 5]), str)
    # the same seed gives the same base weights: a resumed run sees the model it started with
    again = build_random("qwen3-1.7b", tmp_path / "q", shape=SMALL_LM)
    other = AutoModelForCausalLM.from_pretrained(again)
    assert all((a == b).all() for a, b in zip(model.parameters(), other.parameters()))


def test_the_resolver_builds_random_names_once_and_refuses_unknown_ones(tmp_path):
    with pytest.raises(ConfigError, match="random:qwen3-1.7b"):
        resolve_model("random:gpt-17", tmp_path / "x")
    (tmp_path / "random-qwen3-1.7b").mkdir()
    (tmp_path / "random-qwen3-1.7b" / "config.json").write_text("{}")
    assert resolve_model("random:qwen3-1.7b", tmp_path) == str(tmp_path / "random-qwen3-1.7b")  # built once


def test_generation_engines_map_to_trl_fields():
    def grpo(**kw):
        return config_from_dict({"grpo": kw}).grpo

    assert generation_kwargs(grpo()) == {}
    assert generation_kwargs(grpo(generation="continuous_batching")) == {"use_transformers_continuous_batching": True}
    with pytest.raises(ConfigError) as e:
        grpo(generation="warp-drive", vllm_gpu_memory_utilization=2)
    assert len(e.value.problems) == 2


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
@pytest.mark.parametrize("engine", ["vllm_server", "vllm_colocate"])
def test_vllm_engines_without_vllm_say_so(engine):
    with pytest.raises(ConfigError, match="vLLM is not installed.*continuous_batching"):
        config_from_dict({"grpo": {"generation": engine}})


def test_grpo_config_accepts_the_engine_fields(tmp_path):
    from salon.train.recipe import grpo_args

    cfg = config_from_dict({"output_dir": str(tmp_path), "grpo": {"generation": "continuous_batching", "use_cpu": True,
                                                                 "bf16": False, "report_to": []}})
    args = grpo_args(cfg, tmp_path)
    assert args.use_transformers_continuous_batching and not args.use_vllm


def test_trainable_weights_keep_their_dtype_when_generation_casts_the_model(tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from salon.train.engine.choice import trainable_dtypes_kept

    folder = build_random("qwen3-1.7b", tmp_path / "p", shape=SMALL_LM)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32),
                           LoraConfig(r=2, target_modules="all-linear", task_type="CAUSAL_LM"))

    def generate_like_trl_continuous_batching(prompts):
        model.to(torch.bfloat16)  # what TRL 1.16 does before generate_batch when bf16 is on
        return prompts

    wrapped = trainable_dtypes_kept(generate_like_trl_continuous_batching, model)
    assert wrapped(["p"]) == ["p"]
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert trainable and all(p.dtype == torch.float32 for p in trainable)
    assert any(p.dtype == torch.bfloat16 for p in model.parameters() if not p.requires_grad)


def test_continuous_batching_in_one_process_on_several_gpus_says_what_to_do(monkeypatch):
    import torch

    from salon.train.engine.choice import check_single_process_engine

    cfg = config_from_dict({"grpo": {"generation": "continuous_batching"}})
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ConfigError, match="CUDA_VISIBLE_DEVICES"):
        check_single_process_engine(cfg, processes=1)
    check_single_process_engine(cfg, processes=2)  # one process per GPU is fine
    check_single_process_engine(config_from_dict({}), processes=1)  # so is the plain engine
