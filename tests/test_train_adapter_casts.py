"""LoRA layers skip the input cast autocast undoes (salon.train.update.adapter_casts): bitwise the same
outputs and gradients, forward, checkpointed recompute and backward, with fewer copies."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from salon.train.update.adapter_casts import skip_undone_casts

LAYERS, ADAPTED = 2, 7  # Qwen3's q, k, v, o, gate, up, down under all-linear


class CountCopies(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.copies = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.copies += func.overloadpacket is torch.ops.aten._to_copy
        return func(*args, **(kwargs or {}))


def policy(dropout: float = 0.0):
    """A tiny Qwen3 in bfloat16 with peft's float32 LoRA on every linear, its B not zero."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    base = Qwen3ForCausalLM(Qwen3Config(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=8))
    model = get_peft_model(base.to(torch.bfloat16), LoraConfig(r=4, lora_alpha=8, lora_dropout=dropout,
                                                               target_modules="all-linear", init_lora_weights=False))
    assert {p.dtype for n, p in model.named_parameters() if "lora_" in n} == {torch.float32}
    return model


def forward_backward(model, ids, autocast: bool):
    """Logits, every trainable gradient and the forward's copies, with checkpointing (its recompute in the
    backward) as the trainer runs it."""
    model.train()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    counted = CountCopies()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast), counted:
        logits = model(input_ids=ids).logits
    logits.float().logsumexp(-1).mean().backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.requires_grad}
    return logits.detach(), grads, counted.copies


@pytest.mark.parametrize("autocast", [True, False])
def test_the_skip_changes_no_bit_of_the_logits_or_the_gradients(autocast):
    ids = torch.randint(0, 96, (2, 12), generator=torch.Generator().manual_seed(1))
    plain = forward_backward(policy(), ids, autocast)
    model = policy()
    assert skip_undone_casts(model) == LAYERS * ADAPTED
    skipped = forward_backward(model, ids, autocast)
    assert torch.equal(plain[0], skipped[0])
    assert plain[1].keys() == skipped[1].keys() and plain[1]
    assert all(torch.equal(plain[1][n], skipped[1][n]) for n in plain[1])
    if autocast:  # each adapted linear's input: to float32 by peft, back to bfloat16 by autocast
        assert plain[2] - skipped[2] == 2 * LAYERS * ADAPTED
    else:  # no autocast: peft's cast runs, the adapters compute in float32 as before
        assert plain[2] == skipped[2]


def test_layers_with_dropout_keep_pefts_cast():
    model = policy(dropout=0.1)
    assert skip_undone_casts(model) == 0


def test_a_deep_copy_casts_by_its_own_layers():
    model = policy()
    skip_undone_casts(model)
    twin = copy.deepcopy(model)
    layer = twin.base_model.model.model.layers[0].self_attn.q_proj
    assert layer._cast_input_dtype.args == (layer,)
    layer.cast_input_dtype_enabled = False  # peft's switch reaches the copy's own cast
    x = torch.ones(2, 32, dtype=torch.bfloat16)
    assert layer._cast_input_dtype(x, torch.float32).dtype == torch.bfloat16
    original = model.base_model.model.model.layers[0].self_attn.q_proj
    assert original._cast_input_dtype(x, torch.float32).dtype == torch.float32
