"""grpo.generation_fuse_linears: the merged copy with q/k/v and gate/up as one product each decodes
as the unfused copy, float32 on a CPU (greedy tokens identical, log-probs within 1e-5), keeps taking
the trained weights by name, and is captured by dynamo as one graph. A few seconds on two cores."""

from __future__ import annotations

import pytest
import torch

from salon.train.engine.decode import StaticDecoder
from salon.train.engine.fused_linears import FusedPart, StackedProduct, fuse_sibling_linears
from salon.train.engine.generation import MergedPolicy

LOGPROB_TOL = 1e-5  # float32: one product cut in parts against the parts' own products
NEW = 10


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    """A tiny Qwen3 with a LoRA on every linear map, A and B random (so the adapter counts)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from salon.models.tiny import build_lm

    folder = build_lm(tmp_path_factory.mktemp("policy") / "tiny", "qwen3")
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))


def prompts():
    return [list(range(20, 20 + n)) for n in (5, 13, 9, 13)]


def greedy(model, compile_config=None):
    from transformers import GenerationConfig

    cfg = GenerationConfig(do_sample=False, max_new_tokens=NEW, eos_token_id=None, pad_token_id=0)
    decoder = StaticDecoder(model, compile=compile_config is not None, prompt_bucket=16, compile_config=compile_config)
    tokens = decoder.generate(prompts(), cfg)
    assert decoder.last_path == "loop"  # salon's decode loop, not generate's fallback
    return tokens, decoder.compiled_graphs


def logprobs(model, ids):
    with torch.no_grad():
        return torch.log_softmax(model(input_ids=ids).logits.float(), -1)


def test_the_fused_copy_decodes_as_the_unfused_one(policy):
    plain, fused = MergedPolicy(policy), MergedPolicy(policy, fuse_linears=True)
    layers = policy.get_base_model().config.num_hidden_layers
    assert (plain.fused_groups, fused.fused_groups) == (0, 2 * layers)
    assert sum(isinstance(m, FusedPart) for m in fused.model.modules()) == 5 * layers
    ids = torch.tensor([list(range(30, 60))])
    assert (logprobs(fused.model, ids) - logprobs(plain.model, ids)).abs().max().item() < LOGPROB_TOL
    tokens, _ = greedy(plain.model)
    assert tokens.shape == (4, NEW) and torch.equal(greedy(fused.model)[0], tokens)


def test_a_refresh_writes_the_trained_weights_through_the_stack(policy):
    fused, plain = MergedPolicy(policy, fuse_linears=True), MergedPolicy(policy)
    part = fused.model.model.layers[0].self_attn.k_proj
    assert part.weight.untyped_storage().data_ptr() == part.stack.weight.untyped_storage().data_ptr()
    ids = torch.tensor([list(range(40, 70))])
    before = logprobs(fused.model, ids)
    with torch.no_grad():  # an optimiser step's worth of change to the adapter
        for name, p in policy.named_parameters():
            if "lora_B" in name:
                p.add_(0.05 * torch.randn_like(p))
    fused.refresh(), plain.refresh()
    after = logprobs(fused.model, ids)
    assert (after - before).abs().max().item() > 1e-3  # the copy moved with the adapter...
    assert (after - logprobs(plain.model, ids)).abs().max().item() < LOGPROB_TOL  # ...to the trained weights


def test_dynamo_captures_the_fused_copy_in_one_graph(policy):
    """fullgraph capture (dynamo's eager backend: no C++ compiler on a CPU runner) decodes the same
    greedy tokens; the product held between siblings is gone after each forward."""
    from transformers import CompileConfig

    fused = MergedPolicy(policy, fuse_linears=True)
    want, _ = greedy(fused.model)
    got, graphs = greedy(fused.model, CompileConfig(backend="eager", mode=None, dynamic=False, fullgraph=True))
    assert graphs >= 1 and torch.equal(got, want)
    stacks = {id(m.stack): m.stack for m in fused.model.modules() if isinstance(m, FusedPart)}
    assert stacks and all(s.held is None for s in stacks.values())


def test_siblings_called_in_another_order_or_on_other_inputs_compute_their_own():
    from torch import nn

    torch.manual_seed(1)
    linears = [nn.Linear(8, n) for n in (8, 4, 4)]
    stack = StackedProduct(linears)
    x, y = torch.randn(3, 8), torch.randn(3, 8)
    for order, inputs in (((2, 0, 1), (x, x, x)), ((0, 1, 2), (x, y, x)), ((1, 1, 0, 2, 2, 0), (x,) * 6)):
        for i, inp in zip(order, inputs):
            assert torch.allclose(stack.slice_for(i, inp), linears[i](inp), atol=1e-6)
    unfusible = nn.Module()
    unfusible.gate_proj, unfusible.up_proj = nn.Linear(8, 4), nn.Linear(6, 4)  # different inputs
    assert fuse_sibling_linears(unfusible) == 0
