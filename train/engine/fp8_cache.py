"""The decode's KV cache in float8: `grpo.generation_kv_cache: fp8`.

    cache = fp8_static_cache(model.config, max_cache_len)   # where decode.StaticDecoder made a StaticCache
    keys, values = cache.update(k, v, layer)                 # one new position: Fp8Rows; a prefill: widened

At 64 rows a decode step reads more cache than weights: 64 rows of Qwen3-1.7B at 1,024 positions are 7.5 GB
of keys and values in bf16 against the layers' 2.8 GB, and on an H200 the filled-attention kernel took 104 and
160 us a layer at 1,024 and 2,048 new tokens (decode_attention.py), 2.9 and 4.5 ms of a step's 28 layers. Here
each position's key and value head vectors are kept as float8 (e4m3) with one float32 scale each (the vector's
largest magnitude maps to 448): 132 bytes where bf16 took 256. The attention kernel widens the rows to bf16 as
it reads them and applies the scales to the scores (keys) and to the probabilities (values), so nothing wider
is written anywhere.

What a layer's `update` gives: for one new position (a decode step), `Fp8Rows` of the whole cache, which the
decode's attention (decode.grouped_decode_attention) reads with the kernel, or widens for its other paths; for
a prefill, the whole cache widened to the states' dtype, which transformers' SDPA prefill reads as it is. So
the prompt too is attended through its rounded keys and values, as every later step attends it.

Not exact: each key and value is rounded to 3 mantissa bits. The sampler records its own log-probs, and the
update weighs every token by the trained policy's probability over the sampler's, as for float8 weights
(fp8_linears.py, salon.train.update.stale_correction).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0  # e4m3's largest finite value
SCALE_BYTES = 4  # a float32 scale per position and head


class Fp8Rows(NamedTuple):
    """A layer's keys or values: `rows` (batch, kv heads, cache, dim) float8, `scales` (batch, kv heads, cache)."""

    rows: torch.Tensor
    scales: torch.Tensor

    def widened(self, dtype: torch.dtype) -> torch.Tensor:
        return (self.rows.to(torch.float32) * self.scales[..., None]).to(dtype)


def quantized(states: torch.Tensor) -> Fp8Rows:
    """Each head vector (the last dim) as float8 rows scaled so its largest magnitude is FP8_MAX."""
    wide = states.float()
    scales = wide.abs().amax(-1).clamp(min=1e-12) / FP8_MAX
    return Fp8Rows((wide / scales[..., None]).to(FP8), scales)


class Fp8CacheLayer(CacheLayerMixin):
    """A full-attention layer's static cache of max_cache_len positions, held as float8 rows and their scales;
    written in place (a captured CUDA graph reads and writes the same buffers at every replay)."""

    is_compileable = True
    is_sliding = False

    def __init__(self, max_cache_len: int, **kwargs):
        super().__init__()
        self.max_cache_len = max_cache_len
        self.cumulative_length = torch.tensor(0, dtype=torch.long)  # a tensor: moving it recompiles nothing

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device, self.dtype = key_states.device, key_states.dtype
        batch, heads = key_states.shape[:2]
        self.keys = torch.zeros((batch, heads, self.max_cache_len, key_states.shape[-1]), dtype=FP8, device=self.device)
        self.values = torch.zeros((batch, heads, self.max_cache_len, value_states.shape[-1]), dtype=FP8,
                                  device=self.device)
        self.key_scales = torch.zeros((batch, heads, self.max_cache_len), dtype=torch.float32, device=self.device)
        self.value_scales = torch.zeros_like(self.key_scales)
        self.cumulative_length = self.cumulative_length.to(self.device)
        if not torch.compiler.is_compiling():  # static addresses: the decode step's CUDA graph writes them in place
            for t in (self.keys, self.values, self.key_scales, self.value_scales, self.cumulative_length):
                torch._dynamo.mark_static_address(t)
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length = key_states.shape[-2]
        positions = torch.arange(length, device=self.device) + self.cumulative_length
        self.cumulative_length.add_(length)
        for rows, scales, states in ((self.keys, self.key_scales, key_states),
                                     (self.values, self.value_scales, value_states)):
            new = quantized(states)
            # through a byte view: index_copy_ takes no float8 on every device
            rows.view(torch.uint8).index_copy_(2, positions, new.rows.view(torch.uint8))
            scales.index_copy_(2, positions, new.scales)
        keys, values = Fp8Rows(self.keys, self.key_scales), Fp8Rows(self.values, self.value_scales)
        if length > 1:  # a prefill: transformers' SDPA reads plain tensors
            return keys.widened(key_states.dtype), values.widened(value_states.dtype)
        return keys, values

    def reset(self) -> None:
        if self.is_initialized:
            for t in (self.keys, self.values):
                t.view(torch.uint8).zero_()
            self.key_scales.zero_()
            self.value_scales.zero_()
        self.cumulative_length.zero_()

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.max_cache_len, 0  # as a static layer: masks over the whole cache

    def get_seq_length(self) -> int:
        return self.cumulative_length if self.is_initialized else 0

    def get_max_length(self) -> int:
        return self.max_cache_len


def fp8_static_cache(config, max_cache_len: int) -> Cache:
    """A static cache of float8 layers for a model whose every layer is full attention (decode.StaticDecoder
    asks decode_attention.full_attention_only first)."""
    layers = config.get_text_config(decoder=True).num_hidden_layers
    return Cache(layers=[Fp8CacheLayer(max_cache_len) for _ in range(layers)])


def bytes_per_position(head_dim: int) -> int:
    """A head vector's bytes in the float8 cache: its rows and its scale."""
    return head_dim + SCALE_BYTES
