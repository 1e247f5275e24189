"""What one decode step of the compiled loop (decode.py) samples: the warpers transformers' `generate`
would apply, temperature + top-k + top-p fused over the top-k candidates, and the choice of the next
token without a sync.

    warpers = loop_warpers(generation_config)     # None: settings the loop does not implement
    token = choose(logits, warpers, generation_config.do_sample)
"""

from __future__ import annotations

import math

import torch
from transformers import LogitsProcessor, TemperatureLogitsWarper, TopPLogitsWarper

# GenerationConfig fields that add logits processors or stopping rules the loop does not implement
# when set (not None, zero, empty or False, nor their NEUTRAL value): such a config runs through
# transformers' generate instead.
NEUTRAL = {"repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0, "typical_p": 1.0, "num_beams": 1,
           "num_return_sequences": 1, "num_beam_groups": 1, "guidance_scale": 1.0}
UNSUPPORTED_FIELDS = (
    "repetition_penalty", "encoder_repetition_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size",
    "bad_words_ids", "min_length", "min_new_tokens", "forced_bos_token_id", "forced_eos_token_id", "suppress_tokens",
    "begin_suppress_tokens", "sequence_bias", "guidance_scale", "watermarking_config", "min_p", "typical_p",
    "epsilon_cutoff", "eta_cutoff", "top_h", "renormalize_logits", "num_beams", "num_return_sequences",
    "stop_strings", "max_time", "exponential_decay_length_penalty", "remove_invalid_values", "penalty_alpha",
    "prompt_lookup_num_tokens", "diversity_penalty", "num_beam_groups", "low_memory", "token_healing")


class TopKTopP(LogitsProcessor):
    """transformers' temperature, top-k and top-p warpers, in their order, with top-p computed over the
    top-k candidates instead of a sort of the whole vocabulary (151,936 wide for Qwen3) per row and
    step. The same scores come out: the k best scaled scores, every score tied with the k-th kept
    as TopKLogitsWarper keeps it (up to 2k in all), then TopPLogitsWarper's rule on their ascending
    cumulative probabilities, the most likely token always kept; -inf elsewhere."""

    def __init__(self, temperature: float, top_k: int, top_p: float):
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p

    def __call__(self, input_ids: torch.Tensor | None, scores: torch.Tensor) -> torch.Tensor:
        values, indices = self.candidates(scores)
        return torch.full_like(scores, -math.inf).scatter(-1, indices, values)

    def candidates(self, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The warped scores of the (up to 2k) candidates and their token ids; every other token is -inf."""
        if self.temperature != 1.0:
            scores = scores / self.temperature
        k = min(self.top_k, scores.size(-1))
        values, indices = scores.topk(min(2 * k, scores.size(-1)), dim=-1)  # descending
        values = values.masked_fill(values < values[..., k - 1:k], -math.inf)
        if self.top_p < 1.0:
            ascending = values.flip(-1)
            remove = ascending.softmax(dim=-1).cumsum(dim=-1) <= 1 - self.top_p
            remove[..., -1] = False
            values = values.masked_fill(remove.flip(-1), -math.inf)
        return values, indices


def loop_warpers(cfg) -> list | None:
    """The warpers generate would apply for `cfg`, when the loop can run it; None when it cannot."""
    for name in UNSUPPORTED_FIELDS:
        value = getattr(cfg, name, None)
        unset = value is None or value is False or (isinstance(value, (list, tuple, dict)) and not value) \
            or (isinstance(value, (int, float)) and value == 0)
        if not unset and value != NEUTRAL.get(name):
            return None
    if not cfg.do_sample:
        return []
    temperature, top_k, top_p = cfg.temperature or 1.0, cfg.top_k or 0, cfg.top_p or 1.0
    if top_k:
        return [TopKTopP(temperature, top_k, top_p)]
    return ([TemperatureLogitsWarper(temperature)] if temperature != 1.0 else []) + \
        ([TopPLogitsWarper(top_p)] if top_p < 1.0 else [])


def eos_ids(cfg) -> list[int]:
    eos = cfg.eos_token_id
    return [] if eos is None else [eos] if isinstance(eos, int) else list(eos)


def choose(logits: torch.Tensor, warpers: list, do_sample: bool) -> torch.Tensor:
    """generate's choice of the next token: its warpers, then argmax, or a sample from the softmax
    by the exponential trick (what torch.multinomial does for one sample, minus its sync)."""
    if do_sample and len(warpers) == 1 and isinstance(warpers[0], TopKTopP):
        # the softmax and the argmax over the candidates only: a row reduction over the whole vocabulary
        # (151,936 for Qwen3) runs on one block per row, 0.4-0.5 ms a step at batch 8 on an H200. The
        # noise is drawn for the whole vocabulary as before (the same random stream, so the same tokens);
        # every other token has probability 0 and never wins the argmax
        values, indices = warpers[0].candidates(logits)
        noise = torch.empty_like(logits).exponential_(1).gather(-1, indices)
        pick = (values.softmax(dim=-1) / noise).argmax(dim=-1, keepdim=True)
        return indices.gather(-1, pick)[:, 0]
    for warper in warpers:
        logits = warper(None, logits)
    if not do_sample:
        return logits.argmax(dim=-1)
    probs = logits.softmax(dim=-1)
    return (probs / torch.empty_like(probs).exponential_(1)).argmax(dim=-1)
