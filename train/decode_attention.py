"""Attention of one decode token over the filled part of a static KV cache (`grpo.generation_attention:
buckets`), with a GRPO group's shared prompt read once for the whole group.

    keys = bucket_keys(filled, cache_length)           # the positions a step attends: a multiple of KEY_CHUNK
    rows = group_rows(prompt_ids)                      # 8 when rows come as GRPO groups of 8 equal prompts, else 1
    mask = SharedPrompt(mask2d[:, :keys].bool(), rows, prompt=bucket)   # the step's mask for every layer
    out = shared_prompt_attention(query, key, value, mask, scale)        # (batch, 1, heads, head_dim)

Buckets. A static cache holds bucket + max_new_tokens positions per row, and attention over all of
them reads every position at every step, masked or not: at 8 x 2,048 new tokens after a 600-token
prompt the filled part is about 61 % of the cache on average (shared/reference/generation-speed.md:
1.89 ms against 0.78 ms a step on an H200). Every row's prompt is left-padded to the same bucket, so
at decode step i exactly bucket + i positions are filled in every row, a number the loop knows
without asking the device. Rounded up to a multiple of `KEY_CHUNK`, it is the length of the step's
mask, and the decoder's attention reads key and value only up to the mask's length. The positions
cut off are ones the whole cache's mask gives zero weight: the same attention over fewer masked
positions. The length is a dynamic dimension of the one compiled step (decode.py), so a run compiles
once, not once per length.

Shared prompt. GRPO generates `num_generations` completions of each prompt, and TRL hands them over
as consecutive rows: their prompt positions hold the same keys and values (the same tokens through
the same prefill), read once per row at every step, 8 times over. `shared_prompt_attention` splits
the step's scores in two: the prompt's positions against one row per group, with the group's query
heads stacked (G, KV, rows x heads per KV, positions), and the generated positions per row; one
softmax over both (the running maximum and sum of the two parts, float32), so the result is the
plain attention's up to float rounding. At batch 8 (one group) the prompt's keys are a strided view
of the cache; with several groups the matmul copies them first (cuBLAS batches one stride), which
still reads a prompt 3 times per group instead of 8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

ATTENTION = "salon_grouped_decode"  # the merged copy's attention (decode.grouped_decode_attention)
KEY_CHUNK = 256  # buckets: the positions a step attends, rounded up to a multiple of this


@dataclass
class SharedPrompt:
    """A decode step's mask when its rows come in groups with one prompt: the 2D mask cut at the attended
    length (batch, keys) bool, the rows per group, and the prompt's positions (the prompt bucket)."""

    mask: torch.Tensor
    rows: int
    prompt: int


def group_rows(prompt_ids: list[list[int]]) -> int:
    """n when the rows are consecutive groups of n identical prompts (n >= 2), else 1."""
    n = 1
    while n < len(prompt_ids) and prompt_ids[n] == prompt_ids[0]:
        n += 1
    if n < 2 or len(prompt_ids) % n:
        return 1
    for start in range(0, len(prompt_ids), n):
        block = prompt_ids[start:start + n]
        if any(p != block[0] for p in block):
            return 1
    return n


def shared_prompt_attention(query, key, value, shared: SharedPrompt, scale: float) -> torch.Tensor:
    """query (batch, heads, 1, dim), key/value (batch, kv heads, cache, dim) -> (batch, 1, heads, dim)."""
    batch, heads, _, dim = query.shape
    kv, cache = key.shape[1], key.shape[2]
    per_kv, rows, prompt = heads // kv, shared.rows, shared.prompt
    groups, keys = batch // rows, shared.mask.shape[-1]
    q = query.reshape(batch, kv, per_kv, dim)

    def stacked(x):  # (batch, kv, per_kv, ...) -> (groups, kv, rows x per_kv, ...): a group's queries together
        return x.reshape(groups, rows, kv, per_kv, *x.shape[3:]).transpose(1, 2).reshape(
            groups, kv, rows * per_kv, *x.shape[3:])

    def unstacked(x):  # the inverse of stacked
        return x.reshape(groups, kv, rows, per_kv, *x.shape[3:]).transpose(1, 2).reshape(batch, kv, per_kv,
                                                                                         *x.shape[3:])

    # the prompt's positions from each group's first row (a view of the cache), the group's queries stacked
    prompt_keys = key.view(groups, rows, kv, cache, dim)[:, 0, :, :prompt]
    prompt_values = value.view(groups, rows, kv, cache, dim)[:, 0, :, :prompt]
    prompt_mask = shared.mask.view(groups, rows, keys)[:, 0, None, None, :prompt]
    head = torch.matmul(stacked(q), prompt_keys.transpose(-1, -2)).float() * scale  # (groups, kv, rows x per_kv, P)
    head = head.masked_fill(~prompt_mask, -math.inf)
    # the generated positions, per row
    tail = torch.matmul(q, key[:, :, prompt:keys].transpose(-1, -2)).float() * scale  # (batch, kv, per_kv, keys - P)
    tail = tail.masked_fill(~shared.mask[:, None, None, prompt:keys], -math.inf)
    # one softmax over both parts: every row attends at least its own current token, so `top` is finite
    top = torch.maximum(unstacked(head.amax(-1)), tail.amax(-1))  # (batch, kv, per_kv)
    head = torch.exp(head - stacked(top)[..., None])
    tail = torch.exp(tail - top[..., None])
    total = unstacked(head.sum(-1)) + tail.sum(-1)
    out = unstacked(torch.matmul(head.to(value.dtype), prompt_values)).float() \
        + torch.matmul(tail.to(value.dtype), value[:, :, prompt:keys]).float()
    out = (out / total[..., None]).to(query.dtype)
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous()


def bucket_keys(filled: int, length: int, chunk: int = KEY_CHUNK) -> int:
    """The positions a decode step attends under "buckets": `filled` rounded up to a multiple of
    `chunk`, at most the cache's `length` - 1. A step never has more than length - 1 positions filled
    (the last token sampled is never fed back), and a cut shorter than the cache is always a strided
    view: a cut at the whole length would be contiguous, and the compiled step, specialised on that,
    would compile a second time."""
    return min(-(-filled // chunk) * chunk, length - 1)


def full_attention_only(model) -> bool:
    """Every layer full attention (no sliding windows), and a model whose forward takes prepared masks
    by layer kind (transformers' `layer_types`)."""
    cfg = model.config.get_text_config(decoder=True)
    kinds = set(getattr(cfg, "layer_types", None) or ["full_attention"])
    return kinds == {"full_attention"} and getattr(model.config, "layer_types", None) is not None


def buckets_applies(model) -> bool:
    """Buckets run where every layer is full attention through salon's attention (which cuts the keys
    at the mask's length; transformers' own would refuse a mask shorter than the cache)."""
    return full_attention_only(model) and model.config._attn_implementation == ATTENTION
