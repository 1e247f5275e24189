"""The loss's forward with padding moved to each row's end (salon.train.update.causal_loss) on a CPU: a real
GRPOTrainer on the tiny Qwen3 with a LoRA, float32; TRL's own log-prob pass against the rotated one.

The same log-probs and entropies at every completion position within TOL, the same LoRA gradients
within GRAD_TOL of their largest entry, the causal attention really used (and the model's own back
after), and TRL's pass untouched where a row's tokens have a gap. A few seconds on two cores.
"""

from __future__ import annotations

import pytest
import torch

TOL = 1e-5  # float32: rotary embeddings at other positions give the same scores up to rounding
GRAD_TOL = 1e-5
LEFT = [0, 3, 1, 4]  # each row's left padding (the prompts' lengths differ), a micro-batch of 4
RIGHT = [0, 2, 5, 1]  # and right padding (completions ended early)
PROMPT, COMPLETION = 8, 7


def batch(vocab: int, pad: int):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, vocab, (len(LEFT), PROMPT + COMPLETION), generator=g)
    mask = torch.ones_like(ids)
    for r, (left, right) in enumerate(zip(LEFT, RIGHT)):
        mask[r, :left] = 0
        if right:
            mask[r, -right:] = 0
    return ids.masked_fill(mask == 0, pad), mask


def trainer(tmp_path):
    from salon.models.tiny import build_lm
    from train_support import completion_chars, tiny_grpo_trainer

    folder = build_lm(tmp_path / "tiny", "qwen3")
    t = tiny_grpo_trainer(folder, tmp_path / "out", [[{"role": "user", "content": "koi"}]], None, completion_chars, 8)
    return t, t.model


def passes(t, model, ids, mask):
    """Log-probs, entropies and LoRA gradients of a token-sum loss over the completion positions."""
    model.zero_grad()
    logps, entropies, _ = t._get_per_token_logps_and_entropies(model, ids, mask, COMPLETION, compute_entropy=True)
    keep = mask[:, -COMPLETION:]
    (logps * keep).sum().backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return logps.detach() * keep, entropies.detach() * keep, grads


@pytest.mark.parametrize("checkpointing", [False, True])
def test_rotated_rows_give_trls_log_probs_entropies_and_gradients(tmp_path, monkeypatch, checkpointing):
    """With gradient checkpointing too: the backward pass runs each layer's forward again after the
    model's own attention is back, on the mask the first forward made (none): causal again."""
    from salon.train.update import causal_loss

    t, model = trainer(tmp_path)
    if checkpointing:
        model.train()  # checkpointing acts in training mode only
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    ids, mask = batch(model.config.vocab_size, t.processing_class.pad_token_id)
    plain = passes(t, model, ids, mask)

    calls = []
    wrapped = causal_loss._causal_sdpa
    monkeypatch.setattr(causal_loss, "_causal_sdpa", lambda *a, **k: calls.append(a[1].shape) or wrapped(*a, **k))
    causal_loss.install(t)
    assert causal_loss.applies(causal_loss.pretrained(model))
    ran = []
    attention = next(m for n, m in model.named_modules() if n.endswith("layers.0.self_attn"))
    attention.register_forward_hook(lambda *_: ran.append(1))  # inside the checkpointed layer: runs again
    rotated = passes(t, model, ids, mask)
    assert len(ran) == (2 if checkpointing else 1)  # with checkpointing the backward ran the layer again
    layers = model.config.num_hidden_layers
    # every layer, unmasked, whole rows (with checkpointing, the backward's second forward runs transformers'
    # SDPA on the mask the first one made, none: causal again, which the gradients below check)
    assert len(calls) == layers and calls[0][2] == PROMPT + COMPLETION
    assert model.config._attn_implementation == "sdpa"  # the model's own choice back
    for a, b in zip(plain[:2], rotated[:2]):
        assert a.shape == b.shape == (len(LEFT), COMPLETION)
        assert torch.allclose(a, b, atol=TOL, rtol=0), (a - b).abs().max()
    assert plain[0].abs().sum() > 0
    whole, moved = plain[2], rotated[2]
    assert sorted(whole) == sorted(moved) and any("lora_B" in n for n in whole)
    largest = max(g.abs().max().item() for g in whole.values())
    worst = max((whole[n] - moved[n]).abs().max().item() for n in whole)
    assert largest > 0 and worst <= GRAD_TOL * largest, (worst, largest)


def test_a_row_with_a_gap_keeps_trls_own_pass(tmp_path, monkeypatch):
    from salon.train.update import causal_loss

    t, model = trainer(tmp_path)
    ids, mask = batch(model.config.vocab_size, t.processing_class.pad_token_id)
    mask[0, 3] = 0  # a gap inside a row's tokens: no rotation makes its tokens a prefix
    assert causal_loss.left_padding(mask) is None
    before = passes(t, model, ids, mask)
    calls = []
    monkeypatch.setattr(causal_loss, "_causal_sdpa", lambda *a, **k: calls.append(1))
    causal_loss.install(t)
    after = passes(t, model, ids, mask)
    assert calls == []
    assert all(torch.allclose(b, a, atol=TOL, rtol=0) for b, a in zip(before[:2], after[:2]))


def test_left_padding_and_rotation():
    from salon.train.update.causal_loss import left_padding, rotated

    mask = torch.tensor([[0, 0, 1, 1, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 1]])
    shift = left_padding(mask)
    assert shift.tolist() == [2, 0, 1]
    assert rotated(mask, shift).tolist() == [[1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]
    assert left_padding(torch.tensor([[1, 0, 1, 1]])) is None
