"""How much of the KV cache a decode step reads (grpo.generation_attention), on a CPU: the grouped attention
against transformers' eager one, `filled` and `buckets` against the whole cache (greedy tokens identical,
log-probabilities within 1e-5 in float32), what `auto` picks, and the filled kernel itself under Triton's
interpreter and compiled for sm_90. The trainer is test_train_generation.py's (train_support.engine_trainer).
"""

from __future__ import annotations

import pytest
import torch

from salon.train.engine.decode import StaticDecoder
from salon.train.engine.generation import tokenize
from train_support import ENGINE_NEW, ENGINE_PROMPTS, engine_trainer, left_padded

LOGPROB_TOL = 1e-5  # float32: the same attention over fewer masked positions, summation order only


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return engine_trainer(tmp_path_factory)


def test_grouped_decode_attention_gives_eager_attentions_logits(trained):
    """The merged copy's attention (KV heads read once per group of query heads) against transformers'
    eager attention (KV heads repeated per query head, plain matmuls) on the same weights: a
    left-padded prompt, then decode steps on a static cache."""
    from transformers import StaticCache

    from salon.train.engine.decode import ATTENTION

    trainer, engine = trained
    grouped = engine.policy.model
    assert grouped.config._attn_implementation == ATTENTION and grouped.config.num_key_value_heads < \
        grouped.config.num_attention_heads  # grouped-query attention, so the grouped path runs
    eager = type(grouped)(grouped.config.__class__.from_dict(grouped.config.to_dict()))
    eager.load_state_dict(grouped.state_dict())
    eager.config._attn_implementation = "eager"
    inputs = left_padded(trainer, ENGINE_PROMPTS)
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    length = ids.shape[1] + 4
    full = torch.cat([mask, torch.zeros(len(ENGINE_PROMPTS), 4, dtype=mask.dtype)], dim=1)
    position = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
    logits = {}
    with torch.no_grad():
        for name, model in (("grouped", grouped), ("eager", eager)):
            cache = StaticCache(config=model.config, max_cache_len=length)
            model(input_ids=ids, attention_mask=mask, position_ids=position, cache=cache, use_cache=True)
            token, pos, rows = ids[:, -1:], position[:, -1:], []
            for step in range(4):
                full[:, ids.shape[1] + step] = 1
                pos = pos + 1
                rows.append(model(input_ids=token, attention_mask=full, position_ids=pos, cache=cache,
                                  use_cache=True).logits[:, -1])
                token = rows[-1].argmax(-1, keepdim=True)
            full[:, ids.shape[1]:] = 0
            logits[name] = torch.stack(rows)
    assert grouped.config._attn_implementation == ATTENTION and eager.config._attn_implementation == "eager"
    assert trainer.model.config._attn_implementation != ATTENTION  # the trained model keeps its own
    assert torch.allclose(logits["grouped"], logits["eager"], atol=1e-5, rtol=0)  # float32: summation order only



@pytest.fixture(scope="module")
def wide_heads(trained):
    """A Qwen3 on the policy's vocabulary that the filled attention applies to (head dim 16, the kernel's
    least; the trained policy's is 8), random weights, float32."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from salon.train.engine.decode_attention import filled_applies

    torch.manual_seed(0)
    vocab = trained[1].policy.model.config.vocab_size
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                         max_position_embeddings=4096, attn_implementation="salon_grouped_decode"))
    assert filled_applies(model)
    return model.eval()


def test_filled_attention_decodes_as_the_whole_cache(trained, wide_heads):
    """grpo.generation_attention=filled against today's whole-cache attention, float32 on a CPU:
    greedy tokens identical and every decode step's log-probabilities within 1e-5, on left-padded
    prompts of which some repeat (rows that read another row's prompt positions)."""
    from transformers import StaticCache

    from salon.train.engine.decode_attention import DecodeSpan

    trainer, _ = trained
    model = wide_heads
    prompts = tokenize(ENGINE_PROMPTS * 2, trainer)
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    decoders = {a: StaticDecoder(model, compile=False, prompt_bucket=16, attention=a) for a in ("filled", "whole")}
    assert decoders["filled"].attention_for(len(prompts)) == "filled"  # it runs, rather than falling back
    tokens = {a: d.generate(prompts, cfg) for a, d in decoders.items()}
    assert torch.equal(tokens["filled"], tokens["whole"]) and tokens["filled"].shape == (8, ENGINE_NEW)

    bucket = 16 * -(-max(map(len, prompts)) // 16)
    ids = torch.tensor([[0] * (bucket - len(p)) + p for p in prompts])
    mask = torch.zeros(len(prompts), bucket + ENGINE_NEW, dtype=torch.long)
    for i, p in enumerate(prompts):
        mask[i, bucket - len(p):bucket] = 1
    position = (mask[:, :bucket].cumsum(-1) - 1).clamp(min=0)
    span = DecodeSpan.start(mask, bucket, prompts)
    assert span.shared_rows == 4
    steps = {}
    with torch.no_grad():
        for attention in ("filled", "whole"):
            mask[:, bucket:] = 0
            cache = StaticCache(config=model.config, max_cache_len=bucket + ENGINE_NEW)
            model(input_ids=ids, attention_mask=mask[:, :bucket], position_ids=position, cache=cache, use_cache=True)
            pos, rows = position[:, -1:], []
            for i in range(1, ENGINE_NEW):
                mask[:, bucket + i - 1] = 1
                span.advance(bucket + i)
                pos = pos + 1
                step_mask = {"full_attention": span} if attention == "filled" else mask
                logits = model(input_ids=tokens["whole"][:, i - 1:i], attention_mask=step_mask, position_ids=pos,
                               cache=cache, use_cache=True).logits[:, -1]
                rows.append(torch.log_softmax(logits.float(), -1))
            steps[attention] = torch.stack(rows)
    assert (steps["filled"] - steps["whole"]).abs().max().item() < LOGPROB_TOL


def test_auto_attention_reads_the_filled_positions_from_8_rows(trained, wide_heads):
    """grpo.generation_attention=auto (the default): `filled` for a call of FILLED_FROM_ROWS rows or more
    where it applies, `whole` below it and where it does not apply; a call runs what it picks."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from salon.train.config_grpo import GRPOSettings
    from salon.train.engine.decode import FILLED_FROM_ROWS

    trainer, engine = trained
    assert GRPOSettings().generation_attention == "auto" and FILLED_FROM_ROWS == 8
    decoder = StaticDecoder(wide_heads, compile=False, prompt_bucket=16)
    assert decoder.attention == "auto"
    assert [decoder.attention_for(n) for n in (4, 7, 8, 64, 128)] == ["whole", "whole", "filled", "filled", "filled"]
    assert StaticDecoder(engine.policy.model, compile=False).attention_for(64) == "whole"  # head dim 8
    sliding = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=2, head_dim=4,
                                           use_sliding_window=True, sliding_window=8, max_window_layers=1,
                                           attn_implementation="salon_grouped_decode"))
    assert StaticDecoder(sliding, compile=False).attention_for(64) == "whole"
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    prompts = tokenize(ENGINE_PROMPTS, trainer) * 16  # 64 rows: filled
    assert torch.equal(decoder.generate(prompts, cfg),
                       StaticDecoder(wide_heads, compile=False, prompt_bucket=16, attention="whole").generate(prompts, cfg))


BUCKETS_NEW = 40  # new tokens for the bucket tests: with chunks of 8, the attended length crosses 5 boundaries


@pytest.fixture
def recorded(monkeypatch):
    """Per decode call of the loop: the log-probabilities it chose from and the key lengths its attention
    read (the softmax over one token's scores, decode.grouped_decode_attention's)."""
    from salon.train.engine import decode

    seen = {"logprobs": [], "keys": []}
    real_choose, real_softmax = decode.choose, torch.softmax

    def choose(logits, warpers, do_sample):
        seen["logprobs"].append(torch.log_softmax(logits, -1))
        return real_choose(logits, warpers, do_sample)

    def softmax(scores, *args, **kwargs):
        if scores.dim() == 4 and scores.shape[-2] <= 2:  # (batch, KV heads, 2 query heads each, keys): a decode step
            seen["keys"].append(scores.shape[-1])
        return real_softmax(scores, *args, **kwargs)

    monkeypatch.setattr(decode, "choose", choose)
    monkeypatch.setattr(torch, "softmax", softmax)
    return seen


@pytest.mark.parametrize("do_sample", [False, True])
def test_bucket_attention_decodes_as_the_whole_cache(trained, recorded, do_sample):
    """grpo.generation_attention=buckets against today's whole-cache attention, float32 on a CPU,
    compile off: each step reads the cache up to the filled positions rounded up to a chunk (8 here,
    so 40 new tokens cross 5 chunk boundaries), and greedy tokens are identical, the same seed samples
    the same tokens, and every token's log-probability is within 1e-5 (LOGPROB_TOL: the same masked
    attention over fewer masked positions, float rounding only)."""
    from salon.train.engine.decode_attention import bucket_keys

    trainer, engine = trained
    prompts = tokenize(ENGINE_PROMPTS, trainer)  # left-padded: four lengths
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": do_sample,
                                                         "max_new_tokens": BUCKETS_NEW})
    cfg.eos_token_id = None
    got = {}
    for attention in ("buckets", "whole", "buckets"):
        recorded["logprobs"].clear(), recorded["keys"].clear()
        torch.manual_seed(4)
        decoder = StaticDecoder(engine.policy.model, compile=False, prompt_bucket=16, attention=attention, key_chunk=8)
        tokens = decoder.generate(prompts, cfg)
        steps = torch.stack(recorded["logprobs"])  # (new tokens, batch, vocabulary)
        got.setdefault(attention, []).append((tokens, steps.gather(-1, tokens.T[..., None])[..., 0],
                                              list(recorded["keys"])))
        assert decoder.attention == attention and decoder.last_path == "loop" and tokens.shape == (4, BUCKETS_NEW)
    (tokens, logprobs, keys), (again, _, _) = got["buckets"]
    whole_tokens, whole_logprobs, whole_keys = got["whole"][0]
    assert torch.equal(tokens, whole_tokens) and torch.equal(tokens, again)
    assert (logprobs - whole_logprobs).abs().max().item() < LOGPROB_TOL
    bucket = 16 * -(-max(map(len, prompts)) // 16)
    layers = engine.policy.model.config.num_hidden_layers
    want = [bucket_keys(bucket + i, bucket + BUCKETS_NEW, 8) for i in range(1, BUCKETS_NEW) for _ in range(layers)]
    assert keys == want and len(set(want)) == 5 and max(want) == bucket + BUCKETS_NEW
    assert set(whole_keys) == {bucket + BUCKETS_NEW}


@pytest.mark.parametrize("isolated", [True, False], ids=["isolate_recompiles", "shared_dynamo_cache"])
def test_bucket_attention_compiles_once_per_length(trained, caplog, monkeypatch, request, isolated):
    """Dynamo's graph capture for real (its eager backend): one graph per attended length, each length
    its own torch.compile, none compiled again by a second call of the same shape; on a torch.compile
    without isolate_recompiles (before torch 2.14) too, where the lengths share one dynamo cache."""
    import torch._dynamo.config as dynamo_config
    from transformers import CompileConfig

    from salon.train.engine import decode

    trainer, engine = trained
    if not isolated:
        monkeypatch.setattr(decode, "isolates_recompiles", lambda: False)
        # below the 3 lengths: it must be raised. torch's own patch, which puts it back as it was (monkeypatch's
        # undo deletes it from the config module, which then hides it from every later compile)
        limit = dynamo_config.patch(recompile_limit=2)
        limit.__enter__()
        request.addfinalizer(lambda: limit.__exit__(None, None, None))
    elif not decode.isolates_recompiles():
        pytest.skip("this torch.compile has no isolate_recompiles")
    decoder = StaticDecoder(engine.policy.model, compile=True, prompt_bucket=16, key_chunk=4, attention="buckets",
                            compile_config=CompileConfig(backend="eager", mode=None, dynamic=False))
    whole = StaticDecoder(engine.policy.model, compile=False, prompt_bucket=16)
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    prompts = [list(range(10, 10 + n)) for n in (5, 9)]  # bucket 16, cache 16 + 12: keys 20, 24, 28
    with caplog.at_level("INFO", logger="salon.train.engine.decode"):
        first = decoder.generate(prompts, cfg)
        graphs = decoder.compiled_graphs
        second = decoder.generate(prompts, cfg)
    assert sorted(decoder.keyed_steps) == [20, 24, 28] and graphs == 3 and decoder.compiled_graphs == 3
    assert decoder.last_path == "loop" and decoder.attention == "buckets" and "compiled again" not in caplog.text
    assert torch.equal(first, second) and torch.equal(first, whole.generate(prompts, cfg))
    assert isolated or dynamo_config.recompile_limit >= 8 * 7  # 8 shapes of every length of 28 positions


def test_bucket_attention_falls_back_to_the_whole_cache_where_it_does_not_apply(trained, caplog, monkeypatch):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    trainer, engine = trained
    sliding = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=2, head_dim=4,
                                           use_sliding_window=True, sliding_window=8, max_window_layers=1,
                                           attn_implementation="salon_grouped_decode"))
    assert "sliding_attention" in sliding.config.layer_types
    with caplog.at_level("INFO", logger="salon.train.engine.decode"):
        assert StaticDecoder(sliding, compile=False, attention="buckets").attention == "whole"  # sliding windows
        assert StaticDecoder(trainer.model, compile=False, attention="buckets").attention == "whole"  # transformers' own
        assert StaticDecoder(engine.policy.model, compile=False, attention="buckets").attention == "buckets"
    assert caplog.text.count("attention 'buckets' does not apply") == 2


KERNEL_CHECK = """
import torch
from salon.train.engine import decode_attention as da
torch.manual_seed(0)
empty = torch.empty
def spoiled(*shape, **kw):  # the kernel's scratch starts as NaN: a slice never written must never be read
    out = empty(*shape, **kw)
    return out.fill_(float("nan")) if out.is_floating_point() else out
torch.empty, torch.empty_like = spoiled, lambda x: spoiled(x.shape, dtype=x.dtype, device=x.device)
batch, kv, groups, dim, bucket = 6, 2, 3, 32, 48
prompts = [[1] * 40, [2] * 17, [1] * 40, [3] * 5, [2] * 17, [1] * 40]
for length in (200, 600):  # one slice, and three merged (da.SPLIT positions each)
    q = torch.randn(batch, kv * groups, 1, dim)
    k, v = torch.randn(batch, kv, length, dim), torch.randn(batch, kv, length, dim)
    mask = torch.zeros(batch, length, dtype=torch.long)
    for i, p in enumerate(prompts):
        mask[i, bucket - len(p):bucket] = 1
    for row, first in ((2, 0), (4, 1), (5, 0)):  # the same prompt, the same prompt keys and values
        k[row, :, :bucket], v[row, :, :bucket] = k[first, :, :bucket], v[first, :, :bucket]
    # a tile of up to 8 rows of a prompt (the three of prompt 1 in one), and of 2 (prompt 1 in two tiles)
    for group_rows, read_from in ((da.GROUP_ROWS, {2: 0, 5: 0, 4: 1}), (2, {2: 0, 4: 1})):
        mask[:, bucket:] = 0
        span = da.DecodeSpan.start(mask, bucket, prompts, group_rows=group_rows)
        assert span.shared_rows == len(read_from)
        for end in sorted({bucket + 1, bucket + 90, length - 77, length}):
            mask[:, bucket:end] = 1
            span.advance(end)
            whole = torch.nn.functional.scaled_dot_product_attention(
                q.reshape(batch, kv, groups, dim), k, v, attn_mask=mask[:, None, None].bool(), scale=0.3)
            want = da.reference_attention(q, k, v, span, 0.3)
            assert (want - whole.reshape(batch, 1, kv * groups, dim)).abs().max() < 1e-5
            corrupt_k, corrupt_v = k.clone(), v.clone()  # rows whose prompt is read with another row's
            corrupt_k[list(read_from), :, :bucket], corrupt_v[list(read_from), :, :bucket] = 7.0, -7.0
            # today's tiling, and others benchmarks/probe_filled_attention.py may choose (positions per
            # inner step and per program; warps and stages do not change what is computed)
            for tiling in ({}, {"block": 32, "split": 64}, {"block": 128, "split": 512}, {"block": 32, "split": 1024}):
                got = da.run_kernel(da._tile_kernel, q, corrupt_k, corrupt_v, mask, span.bounds, span.slots,
                                    span.kv_row, 0.3, **tiling)
                assert got.shape == want.shape and got.dtype == q.dtype
                assert (got - want).abs().max() < 1e-5, (length, end, tiling, (got - want).abs().max())
print("kernel ok")
"""


def test_the_decode_kernel_equals_sdpa_under_tritons_interpreter():
    """The Triton kernel itself, run by Triton's CPU interpreter in float32: SDPA's result over the
    filled positions, with a prompt's positions read once for the rows of a tile, from its first row
    (the others' copies are spoiled here to show they are not read).
    benchmarks/check_decode_kernel_gpu.py runs it on a GPU."""
    import os
    import subprocess
    import sys

    pytest.importorskip("triton")
    out = subprocess.run([sys.executable, "-c", KERNEL_CHECK], env={**os.environ, "TRITON_INTERPRET": "1"},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "kernel ok" in out.stdout, out.stderr[-3000:]


def test_the_decode_kernels_compile_for_the_h200():
    """What Triton's interpreter cannot show: the tile and merge kernels at the tilings the decode runs (many
    rows, and few: da.split_for), with Qwen3-1.7B's heads in bf16 and a 2,816-position cache, compiled for
    sm_90."""
    triton = pytest.importorskip("triton")
    from salon.train.engine import decode_attention as da
    from triton_support import compile_for_sm90

    assert da.split_for(64) == da.SPLIT and da.split_for(da.FEW_ROWS) == da.FEW_ROWS_SPLIT
    for split in (da.SPLIT, da.FEW_ROWS_SPLIT):
        for rows in ("*bf16", "*fp8e4nv"):  # the cache as trained, and float8 rows with their scales (fp8_cache.py)
            compile_for_sm90(da._tile_kernel, ["*bf16", rows, rows, "*fp32", "*fp32", "*i64"] + ["*i32"] * 3
                             + ["*fp32"] * 3 + ["i32"] * 18 + ["fp32"],
                             dict(G=2, R=da.GROUP_ROWS, M=16, D=128, BLOCK=da.BLOCK_N, SLICE=split, IEEE=False,
                                  FP8=rows == "*fp8e4nv"), num_warps=da.NUM_WARPS, num_stages=da.NUM_STAGES)
        compile_for_sm90(da._merge_kernel, ["*fp32"] * 3 + ["*bf16", "*i32"] + ["i32"] * 8,
                         dict(SLICE=split, SP=triton.next_power_of_2(2 * -(-2816 // split)), D=128), num_warps=4)
