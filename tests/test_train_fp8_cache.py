"""The decode's KV cache in float8 (grpo.generation_kv_cache=fp8, salon.train.engine.fp8_cache), on a CPU: the
rounding's bound, the cache layer's writes and what it gives a prefill and a decode step, the decode reading it
(filled and whole attention alike, near the cache as trained but not it), the attention kernel over float8 rows
under Triton's interpreter, and a decode step captured by Dynamo in one graph. The kernel's sm_90 compile is in
test_train_decode_attention.py, the config's refusals in test_train_fp8_linears.py, the trainer's correction at every
step in test_train_overlap.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

from salon.train.engine.decode import StaticDecoder
from salon.train.engine.fp8_cache import FP8, FP8_MAX, Fp8CacheLayer, Fp8Rows, fp8_static_cache, quantized

MAX_NEW = 12
LOGPROB_TOL = 1e-5  # float32 on a CPU: the same widened keys and values through two attention paths

KERNEL_CHECK = """
import torch
from salon.train.engine import decode_attention as da
from salon.train.engine.fp8_cache import quantized

torch.manual_seed(0)
batch, kv, groups, dim, bucket, length = 6, 2, 2, 16, 64, 200
prompts = [[1] * 30, [2] * 50, [1] * 30, [3] * 64, [2] * 50, [1] * 30]
q = torch.randn(batch, kv * groups, 1, dim)
k = torch.randn(batch, kv, length, dim) * torch.rand(batch, kv, length, 1) * 4  # positions of many sizes
v = torch.randn(batch, kv, length, dim)
mask = torch.zeros(batch, length, dtype=torch.long)
for i, p in enumerate(prompts):
    mask[i, bucket - len(p):bucket] = 1
for row, first in ((2, 0), (4, 1), (5, 0)):  # one prompt, one prompt's keys and values
    k[row, :, :bucket], v[row, :, :bucket] = k[first, :, :bucket], v[first, :, :bucket]
keys, values = quantized(k), quantized(v)
span = da.DecodeSpan.start(mask, bucket, prompts)
for end in (bucket + 1, bucket + 90, length):
    mask[:, bucket:end] = 1
    span.advance(end)
    want = da.reference_attention(q, keys, values, span, 0.3)  # SDPA over the widened rows
    assert (want - da.reference_attention(q, k, v, span, 0.3)).abs().max() > 1e-3  # rounded: not the exact one
    for tiling in ({}, {"block": 32, "split": 64}):
        got = da.run_kernel(da._tile_kernel, q, keys.rows, values.rows, mask, span.bounds, span.slots, span.kv_row,
                            0.3, key_scales=keys.scales, value_scales=values.scales, **tiling)
        assert got.shape == want.shape and (got - want).abs().max() < 1e-5, (end, tiling, (got - want).abs().max())
print("kernel ok")
"""


@pytest.fixture(scope="module")
def model():
    """A Qwen3 whose heads the filled attention takes (head dim 16), random weights, float32."""
    torch.manual_seed(0)
    return Qwen3ForCausalLM(Qwen3Config(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                        max_position_embeddings=4096,
                                        attn_implementation="salon_grouped_decode")).eval()


def greedy() -> GenerationConfig:
    return GenerationConfig(do_sample=False, max_new_tokens=MAX_NEW, pad_token_id=0, eos_token_id=None)


def prompts() -> list[list[int]]:
    """Left padding of different lengths, and rows with the same prompt (read once for a group's rows)."""
    return [[5, 6, 7, 8, 9], [10, 11, 12], [5, 6, 7, 8, 9], [20, 21, 22, 23, 24, 25, 26], [10, 11, 12],
            [5, 6, 7, 8, 9], [30, 31], [40, 41, 42, 43]]


def test_each_key_and_value_is_rounded_within_a_sixteenth_and_fills_the_range():
    torch.manual_seed(0)
    states = torch.randn(2, 3, 5, 16) * torch.logspace(-3, 2, 5)[:, None]  # positions of very different sizes
    rows = quantized(states)
    assert rows.rows.dtype == FP8 and rows.scales.shape == (2, 3, 5)
    assert torch.allclose(rows.rows.float().abs().amax(-1), torch.full((2, 3, 5), FP8_MAX))
    back = rows.widened(torch.float32)
    tiny = rows.scales[..., None] * 2.0 ** -9  # below e4m3's smallest normal the step is absolute
    assert ((back - states).abs() <= states.abs() / 16 + tiny).all()


def test_the_layer_keeps_float8_rows_gives_them_to_a_decode_step_and_widened_to_a_prefill():
    layer = Fp8CacheLayer(max_cache_len=10)
    prefill_k, prefill_v = torch.randn(2, 2, 4, 16), torch.randn(2, 2, 4, 16)
    k, v = layer.update(prefill_k, prefill_v)
    assert k.dtype == v.dtype == torch.float32 and k.shape == (2, 2, 10, 16)
    assert torch.equal(k[:, :, :4], quantized(prefill_k).widened(torch.float32)) and not k[:, :, 4:].any()
    assert (k[:, :, :4] - prefill_k).abs().max() > 0  # rounded
    step_k, step_v = torch.randn(2, 2, 1, 16), torch.randn(2, 2, 1, 16)
    k, v = layer.update(step_k, step_v)
    assert isinstance(k, Fp8Rows) and k.rows.dtype == FP8 and k.rows is layer.keys  # the buffers, read in place
    assert torch.equal(v.widened(torch.float32)[:, :, 4:5], quantized(step_v).widened(torch.float32))
    assert int(layer.get_seq_length()) == 5 and layer.get_mask_sizes(1) == (10, 0)
    layer.reset()
    assert int(layer.get_seq_length()) == 0 and not layer.keys.float().any() and not layer.value_scales.any()
    cache = fp8_static_cache(Qwen3Config(num_hidden_layers=3), 10)
    assert len(cache.layers) == 3 and cache.is_compileable


def test_a_float8_cache_decodes_alike_through_every_attention_and_near_the_cache_as_trained(model):
    """Filled attention over float8 rows against the whole cache widened: the same greedy tokens and every step's
    log-probs within LOGPROB_TOL; against the cache as trained, close but not the same; and its bytes."""
    cfg = greedy()
    decoders = {(a, fp8): StaticDecoder(model, compile=False, prompt_bucket=16, attention=a, fp8_cache=fp8)
                for a in ("filled", "whole") for fp8 in (True, False)}
    assert decoders["filled", True].attention_for(8) == "filled"
    auto = StaticDecoder(model, compile=False, attention="auto", fp8_cache=True)
    assert auto.attention_for(2) == "filled"  # the kernel reads float8 rows as they are; the whole cache widens them
    tokens, logps = {}, {}
    for key, decoder in decoders.items():
        tokens[key] = decoder.generate(prompts(), cfg)
        logps[key] = decoder.last_logprobs
        assert decoder.last_path == "loop"
    assert type(decoders["filled", True].caches[8, 16 + MAX_NEW].layers[0]) is Fp8CacheLayer
    assert torch.equal(tokens["filled", True], tokens["whole", True]) and tokens["filled", True].shape == (8, MAX_NEW)
    assert (logps["filled", True] - logps["whole", True]).abs().max() < LOGPROB_TOL
    gap = (logps["filled", True] - logps["filled", False]).abs().max()
    assert 1e-6 < gap < 0.2, gap  # rounded keys and values: near the exact decode, not it
    plain, fp8 = decoders["whole", False], decoders["whole", True]
    assert fp8.cache_bytes(8, 100) * 64 == plain.cache_bytes(8, 100) * (16 + 4)  # 16 fp32 against 16 fp8 + a scale


def test_a_decode_step_over_a_float8_cache_is_captured_in_one_graph(model):
    """The compiled loop's settings (fullgraph: a break would raise), Dynamo's eager backend: the cache's float8
    writes and the attention over its rows in the captured step, whose greedy tokens are the uncompiled ones."""
    from transformers import CompileConfig

    cfg = greedy()
    plain = StaticDecoder(model, compile=False, prompt_bucket=16, attention="filled", fp8_cache=True)
    compiled = StaticDecoder(model, compile=True, prompt_bucket=16, attention="filled", fp8_cache=True,
                             compile_config=CompileConfig(backend="eager", mode=None, dynamic=False, fullgraph=True))
    out = compiled.generate(prompts(), cfg)
    assert compiled.last_path == "loop" and compiled.loop_error is None and compiled.compiled_graphs >= 1
    assert compiled.attention == "filled"  # not fallen back to the whole cache
    assert torch.equal(out, plain.generate(prompts(), cfg))


def test_the_attention_kernel_reads_float8_rows_as_sdpa_reads_them_widened():
    """The Triton kernel under Triton's CPU interpreter, float32 queries: SDPA over the widened rows, with a
    prompt's positions read once for a tile's rows, at two tilings."""
    pytest.importorskip("triton")
    out = subprocess.run([sys.executable, "-c", KERNEL_CHECK], env={**os.environ, "TRITON_INTERPRET": "1"},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "kernel ok" in out.stdout, out.stderr[-3000:]


def test_a_model_with_other_layers_is_refused_a_float8_cache():
    from salon.pool.errors import ConfigError

    sliding = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=2, head_dim=4,
                                           use_sliding_window=True, sliding_window=8, max_window_layers=1,
                                           attn_implementation="salon_grouped_decode"))
    with pytest.raises(ConfigError, match="generation_kv_cache=fp8 keeps full-attention layers"):
        StaticDecoder(sliding, compile=False, fp8_cache=True)
