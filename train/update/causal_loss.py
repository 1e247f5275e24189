"""The loss's forward passes with each row's padding moved to its end, so attention runs causal, unmasked.

    install(trainer)   # the recipe does, after building the GRPOTrainer; every loss and log-prob pass then

TRL lays a micro-batch out as [left-padded prompt | right-padded completion] and gives the model the
2D attention mask. transformers makes a 4D mask of it wherever a row is padded, and under torch.compile
always (it cannot read the mask's values while tracing): SDPA then runs with an explicit mask, and the
flash and cuDNN kernels cannot use their causal mode, so every tile of each L x L score matrix is
computed, about twice the work of causal attention, forward and backward. On an H200 that was 1.76 s
of the 4.5 s the card spent on a 64 x 2,048 update (cuDNN's masked kernels,
benchmarks/results/train_step_profile_64_text_check_apart_h200.json).

Here each row is rotated left by its own left padding, so its real tokens are a prefix of it: causal
attention with no mask is then exact at every real position (each attends only to earlier positions,
all real), and the pad after a row's end is masked out of the loss as before. A rotated row's tokens
sit at positions 0.. rather than after its padding; rotary embeddings score by the difference of
positions only, so the function is the same up to float rounding (float32 on a CPU: log-probs within
1e-5 of TRL's own, tests). The log-probs and entropies come back in TRL's layout.

Where this cannot hold it does nothing: a row whose real tokens have a gap, images, a mixture of
experts' auxiliary loss, or a model with sliding-window layers; TRL's own pass runs then.
"""

from __future__ import annotations

import contextlib
import functools

import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

CAUSAL = "salon_causal_sdpa"  # registered with transformers; no mask function: none is built for it


def _causal_sdpa(module, query, key, value, attention_mask, **kwargs):
    """transformers' SDPA with no mask: its causal mode (the rows hold no left padding here)."""
    return sdpa_attention_forward(module, query, key, value, None, **kwargs)


def register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(CAUSAL, _causal_sdpa)


def full_attention_only(model) -> bool:
    """Every layer full attention (no sliding windows), and a model whose forward takes prepared masks
    by layer kind (transformers' `layer_types`)."""
    cfg = model.config.get_text_config(decoder=True)
    kinds = set(getattr(cfg, "layer_types", None) or ["full_attention"])
    return kinds == {"full_attention"} and getattr(model.config, "layer_types", None) is not None


def applies(models: list) -> bool:
    """Every layer of every model (`pretrained(...)`) is full causal attention through SDPA."""
    return bool(models) and all(full_attention_only(m) and m.config._attn_implementation == "sdpa" for m in models)


def install(trainer) -> None:
    """Wrap the trainer's log-prob pass (TRL's `_get_per_token_logps_and_entropies`)."""
    register()
    original = trainer._get_per_token_logps_and_entropies

    @functools.wraps(original)
    def causal(model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False,
               compute_aux_loss=False, **images):
        plain = functools.partial(original, model, input_ids, attention_mask, logits_to_keep, batch_size,
                                  compute_entropy, compute_aux_loss, **images)
        models = pretrained(model)
        if compute_aux_loss or any(v is not None for v in images.values()) or not applies(models):
            return plain()
        shift = left_padding(attention_mask)
        if shift is None:
            return plain()
        widest = int(shift.max())
        if widest:
            input_ids, attention_mask = rotated(input_ids, shift), rotated(attention_mask, shift)
        with attention(models, CAUSAL):
            logps, entropies, aux = original(model, input_ids, attention_mask, logits_to_keep + widest, batch_size,
                                             compute_entropy, compute_aux_loss)
        if widest:  # row r's completion starts `widest - shift[r]` columns into what came back
            take = (widest - shift.to(logps.device))[:, None] + torch.arange(logits_to_keep, device=logps.device)
            logps = logps.gather(1, take)
            entropies = None if entropies is None else entropies.gather(1, take)
        return logps, entropies, aux

    trainer._get_per_token_logps_and_entropies = causal


def left_padding(mask: torch.Tensor) -> torch.Tensor | None:
    """Each row's leading zeros, on the CPU, where every row's ones are contiguous (left padding, tokens,
    right padding); None where some row has a gap. One read of the card's answer."""
    ones = mask.sum(1)
    shift = (mask.cumsum(1) == 0).sum(1)
    prefix = rotated(mask, shift) == (torch.arange(mask.shape[1], device=mask.device)[None] < ones[:, None])
    answer = torch.cat([shift, prefix.all().long()[None]]).tolist()
    return torch.tensor(answer[:-1]) if answer[-1] else None


def rotated(x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Row r of `x` rotated left by shift[r]."""
    n = x.shape[1]
    index = (torch.arange(n, device=x.device)[None] + shift.to(x.device)[:, None]) % n
    return x.gather(1, index)


@contextlib.contextmanager
def attention(models: list, name: str):
    """Every model of `models` (`pretrained(...)`) on attention `name`; the earlier choice back after.
    torch.compile guards on it: a new name is one more graph."""
    configs = {id(m.config): m.config for m in models}.values()
    before = [c._attn_implementation for c in configs]
    for c in configs:
        c._attn_implementation = name
    try:
        yield
    finally:
        for c, old in zip(configs, before):
            c._attn_implementation = old


def pretrained(model) -> list:
    """The transformers models inside `model`, through peft, DDP and torch.compile wrappers."""
    from transformers import PreTrainedModel

    return [m for m in model.modules() if isinstance(m, PreTrainedModel)]
