"""grpo.gradient_checkpointing_layers: a share of the decoder layers checkpoints, the same after every
time the trainer or TRL switches checkpointing on again, with the gradients of checkpointing them all
(float32, CPU, a 4-layer Qwen3 with a LoRA)."""

from __future__ import annotations

import pytest
import torch

from salon.train.update.partial_checkpointing import apply_share, checkpointed, decoder_layers, keep_partial

GRAD_TOL = 1e-6  # float32: the same forward, recomputed or kept


def lora_qwen3(layers: int = 4):
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    base = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=8))
    model = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    model.train()
    return model


def grads(model, ids):
    model.zero_grad()
    model(input_ids=ids, labels=ids).loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}


def test_the_share_spreads_over_the_layers():
    assert [checkpointed(i, 0.5) for i in range(6)] == [False, True, False, True, False, True]
    assert all(checkpointed(i, 1.0) for i in range(6)) and not any(checkpointed(i, 0.0) for i in range(6))
    assert sum(checkpointed(i, 0.25) for i in range(28)) == 7


def test_the_share_survives_trls_switching_and_keeps_the_gradients():
    from trl.models.utils import disable_gradient_checkpointing

    ids = torch.randint(0, 64, (2, 12))
    full = lora_qwen3()
    full.gradient_checkpointing_enable()
    want = grads(full, ids)

    model = lora_qwen3()
    keep_partial(model, 0.5)
    model.gradient_checkpointing_enable()  # as the trainer does at the start
    assert [layer.gradient_checkpointing for layer in decoder_layers(model)] == [False, True, False, True]
    with disable_gradient_checkpointing(model, None):  # as TRL does around its log-prob passes, every step
        assert not any(layer.gradient_checkpointing for layer in decoder_layers(model))
    assert [layer.gradient_checkpointing for layer in decoder_layers(model)] == [False, True, False, True]
    got = grads(model, ids)
    assert want.keys() == got.keys() and max((got[k] - want[k]).abs().max().item() for k in want) < GRAD_TOL
    assert apply_share(lora_qwen3(), 0.5) == [False] * 4  # off stays off


def test_a_share_without_checkpointing_is_refused():
    from salon.pool.errors import ConfigError
    from salon.train.config_grpo import GRPOSettings

    assert GRPOSettings(gradient_checkpointing_layers=0.5).gradient_checkpointing_layers == 0.5
    with pytest.raises(ConfigError) as e:
        GRPOSettings(gradient_checkpointing=False, gradient_checkpointing_layers=0.5)
    assert "grpo.gradient_checkpointing=false turns off" in str(e.value)
    with pytest.raises(ConfigError):
        GRPOSettings(gradient_checkpointing_layers=1.5)
