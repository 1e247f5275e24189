"""grpo.generation=compiled on a CPU: the merged copy samples the policy's distribution inside TRL.

A tiny Qwen3 with a LoRA, trained one real GRPOTrainer step (LoRA B starts at zero, so the step is
what makes the adapter matter), generation through the engine as TRL's rollout_func. Float32 on a
CPU: the merged copy and the peft model agree to 1e-5 in log-probability (the two differ only in
the order of the additions). The static cache and the merged copy run as on a GPU; compile is off
(grpo.generation_compile=off) except in the compilation-count test, which runs dynamo's graph
capture with its eager backend. About 10 s on two cores.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from salon.pool.errors import ConfigError
from salon.train.engine.decode import StaticDecoder, check_fits, fits
from salon.train.engine.generation import CompiledGeneration, MergedPolicy, tokenize

LOGPROB_TOL = 1e-5  # float32: merged (W + BA) x against W x + B(A x)
MAX_NEW = 12
PROMPTS = [[{"role": "user", "content": text}] for text in
           ("A watercolour of a peach hibiscus.", "koi", "Compare composition, colour and finish of the two paintings.",
            "The quick brown fox")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A GRPOTrainer that ran one step generating through the engine (8 completions per generation:
    per_device_train_batch_size 4 x gradient_accumulation_steps 2), and that engine."""
    from salon.models.tiny import build_lm
    from train_support import completion_chars, tiny_grpo_trainer

    folder = build_lm(tmp_path_factory.mktemp("policy") / "tiny", "qwen3")
    engine = CompiledGeneration(compile="off", prompt_bucket=16)
    trainer = tiny_grpo_trainer(folder, tmp_path_factory.mktemp("out"), PROMPTS, engine, completion_chars, MAX_NEW)
    engine.attach(trainer)
    trainer.train()
    return trainer, engine


def logprobs(model, ids, mask):
    with torch.no_grad():
        return torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1)


def padded(trainer, prompts):
    """The prompts' ids left-padded to the longest, as TRL's transformers path pads them."""
    rows = tokenize(prompts, trainer)
    longest, pad = max(map(len, rows)), trainer.processing_class.pad_token_id
    return {"input_ids": torch.tensor([[pad] * (longest - len(r)) + r for r in rows]),
            "attention_mask": torch.tensor([[0] * (longest - len(r)) + [1] * len(r) for r in rows])}


def test_a_policy_trained_whole_is_copied_and_the_copy_follows_each_step(tmp_path):
    """No LoRA (learn_tiny.yaml trains every weight): the engine's copy is the policy's weights, copied again in
    place after an optimiser step, its tensors' addresses kept (a captured graph reads them)."""
    from salon.models.tiny import build_lm
    from train_support import completion_chars, tiny_grpo_trainer

    folder = build_lm(tmp_path / "tiny", "qwen3")
    engine = CompiledGeneration(compile="off", prompt_bucket=16)
    trainer = tiny_grpo_trainer(folder, tmp_path / "out", PROMPTS, engine, completion_chars, MAX_NEW, lora=False)
    engine.attach(trainer)
    assert engine.policy.model is not trainer.model and engine.policy.adapter is None
    addresses = [p.data_ptr() for p in engine.policy.model.parameters()]
    inputs = padded(trainer, PROMPTS)
    keep = inputs["attention_mask"].bool()
    before = logprobs(trainer.model, inputs["input_ids"], inputs["attention_mask"])
    copy = logprobs(engine.policy.model, inputs["input_ids"], inputs["attention_mask"])
    assert (copy - before)[keep].abs().max().item() < LOGPROB_TOL
    trainer.train()
    after = logprobs(trainer.model, inputs["input_ids"], inputs["attention_mask"])
    assert (after - before)[keep].abs().max() > 100 * LOGPROB_TOL  # the step moved the weights themselves
    engine(PROMPTS, trainer)
    assert engine.refreshes == 1 and [p.data_ptr() for p in engine.policy.model.parameters()] == addresses
    copy = logprobs(engine.policy.model, inputs["input_ids"], inputs["attention_mask"])
    assert (copy - after)[keep].abs().max().item() < LOGPROB_TOL


def test_the_copy_equals_the_policy_after_an_optimiser_step(trained):
    trainer, engine = trained
    assert trainer.state.global_step == 1
    assert [(batch, (length - MAX_NEW) % 16) for batch, length in engine.decoder.shapes] == [(8, 0)]  # 8 at once
    b = {n: p for n, p in trainer.model.named_parameters() if "lora_B" in n}
    assert b and all(p.abs().sum() > 0 for p in b.values())  # the step moved the adapter off zero
    inputs = padded(trainer, PROMPTS)
    policy = logprobs(trainer.model, inputs["input_ids"], inputs["attention_mask"])
    stale = logprobs(engine.policy.model, inputs["input_ids"], inputs["attention_mask"])
    keep = inputs["attention_mask"].bool()
    assert (stale - policy)[keep].abs().max() > 100 * LOGPROB_TOL  # before the refresh the copy is last step's

    torch.manual_seed(0)
    engine(PROMPTS, trainer)  # global step 1 != the copy's step 0: refreshed in place first
    assert engine.refreshes == 1 and engine.refreshed_at == 1
    merged = logprobs(engine.policy.model, inputs["input_ids"], inputs["attention_mask"])
    assert (merged - policy)[keep].abs().max().item() == pytest.approx(0, abs=LOGPROB_TOL)


def test_a_float8_copy_reads_its_layers_products_from_float8_rows_remade_at_each_refresh(trained):
    """generation_weights=fp8: every product of the decoder layers (q/k/v and gate/up fused, o and down plain)
    reads float8 rows; the embeddings and the head do not. Its log-probs are near the policy's and not equal
    (the rounding), and a refresh after the LoRA moved remakes the rows from the new folded weights."""
    from salon.train.engine.fp8_linears import Fp8Linear, widened

    trainer, engine = trained
    copy = MergedPolicy(trainer.model, fuse_linears=True, fp8_weights=True)
    layers = copy.model.model.layers
    assert len(copy.fp8_products) == 4 * len(layers)
    assert all(isinstance(layer.self_attn.o_proj, Fp8Linear) and isinstance(layer.mlp.down_proj, Fp8Linear)
               and layer.self_attn.q_proj.stack.product is not None for layer in layers)
    assert type(copy.model.lm_head) is torch.nn.Linear
    names = {n for n, _ in copy.model.named_parameters()}
    assert names == {n for n, _ in MergedPolicy(trainer.model, fuse_linears=True).model.named_parameters()}
    inputs = padded(trainer, PROMPTS)
    keep = inputs["attention_mask"].bool()
    policy = logprobs(trainer.model, inputs["input_ids"], inputs["attention_mask"])[keep]
    rounded = logprobs(copy.model, inputs["input_ids"], inputs["attention_mask"])[keep]
    assert 100 * LOGPROB_TOL < (rounded - policy).abs().max() < 0.5
    name, lora_b = next((n, p) for n, p in trainer.model.named_parameters() if "lora_B" in n and "o_proj" in n)
    layer = int(name.split(".layers.")[1].split(".")[0])
    o_proj = copy.model.model.layers[layer].self_attn.o_proj
    before = o_proj.weight.detach().clone()
    saved = lora_b.detach().clone()
    try:
        with torch.no_grad():
            lora_b.normal_(0.0, 1.0)  # a LoRA far from the one the rows were made from
        copy.refresh()
        moved = (o_proj.weight - before).abs()
        rows = widened(o_proj.product.q, o_proj.product.scale, torch.float32)
        off = (rows - o_proj.weight).abs()
        assert (off <= o_proj.weight.abs() / 16 + o_proj.product.scale[:, None]).all() and moved.max() > 10 * off.max()
    finally:
        with torch.no_grad():
            lora_b.copy_(saved)


def test_greedy_tokens_are_the_policys(trained):
    trainer, engine = trained
    engine(PROMPTS, trainer)  # brings the copy to the current step
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None  # every row runs the full length
    inputs = padded(trainer, PROMPTS)
    with torch.no_grad():
        want = trainer.model.generate(**inputs, generation_config=cfg)[:, inputs["input_ids"].shape[1]:]
    got = engine.decoder.generate(tokenize(PROMPTS, trainer), cfg)
    assert engine.decoder.last_path == "loop"
    assert got.shape == (len(PROMPTS), MAX_NEW) and torch.equal(got.cpu(), want)


@pytest.fixture
def stopping_often(trained):
    """40 of the vocabulary's ids end a completion (instead of one that a random model never samples)."""
    trainer, engine = trained
    saved = trainer.eos_token_ids, trainer.generation_config.eos_token_id, dict(trainer.generation_kwargs)
    eos = list(range(100, 140))
    trainer.eos_token_ids = trainer.generation_config.eos_token_id = trainer.generation_kwargs["eos_token_id"] = eos
    yield trainer, engine, eos
    trainer.eos_token_ids, trainer.generation_config.eos_token_id = saved[:2]
    trainer.generation_kwargs.clear()
    trainer.generation_kwargs.update(saved[2])


@pytest.mark.parametrize("sampling, path", [(dict(temperature=0.7, top_p=0.9, top_k=20), "loop"),
                                            (dict(temperature=1.5, top_p=1.0, top_k=0), "loop"),
                                            (dict(temperature=1.0, top_p=0.6, top_k=5, repetition_penalty=1.3),
                                             "generate")])
def test_sampling_is_trls_own(stopping_often, sampling, path):
    """Same seed, same settings: the engine's completions are those of TRL's transformers path, cut
    after the first EOS the same way (TRL pads both alike), early-ending ones included."""
    trainer, engine, eos = stopping_often
    saved = {k: getattr(trainer.generation_config, k) for k in sampling}
    for k, v in sampling.items():
        setattr(trainer.generation_config, k, v)
        trainer.generation_kwargs[k] = v
    try:
        prompts = PROMPTS * 2
        prompt_ids = trainer._tokenize_prompts(prompts)[0]
        assert tokenize(prompts, trainer) == prompt_ids  # the prompts TRL would have generated from
        engine(prompts, trainer)  # copy up to date before the seeded calls
        torch.manual_seed(1)
        want, _ = trainer._generate_single_turn(prompt_ids, None, {}, 2)
        torch.manual_seed(1)
        out = engine(prompts, trainer)
    finally:
        for k, v in saved.items():
            setattr(trainer.generation_config, k, v)
            trainer.generation_kwargs[k] = v
    assert engine.decoder.last_path == path  # the decode loop, or generate for what the loop does not implement
    assert out["prompt_ids"] == prompt_ids and out["completion_ids"] == want
    assert [len(x) for x in out["logprobs"]] == [len(c) for c in want]  # each token's, for the importance weight
    lengths = [len(c) for c in out["completion_ids"]]
    assert max(lengths) <= MAX_NEW
    early = [c for c in out["completion_ids"] if len(c) < MAX_NEW]
    assert early and all(c[-1] in eos and not set(c[:-1]) & set(eos) for c in early)


@pytest.mark.parametrize("top_k, top_p", [(3, 1.0), (0, 0.5)])
def test_every_sampled_token_is_in_the_policys_top_k_or_nucleus(trained, top_k, top_p):
    trainer, engine = trained
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "temperature": 1.0,
                                                         "top_k": top_k, "top_p": top_p})
    cfg.eos_token_id = None
    engine(PROMPTS, trainer)
    prompt_ids = tokenize(PROMPTS, trainer)
    torch.manual_seed(2)
    completions = engine.decoder.generate(prompt_ids, cfg)
    for p, c in zip(prompt_ids, completions.tolist()):
        seq = torch.tensor([p + c])
        probs = logprobs(trainer.model, seq, torch.ones_like(seq))[0, len(p) - 1:-1].exp()
        for step, token in enumerate(c):
            order = probs[step].argsort(descending=True)
            if top_k:
                allowed = order[:top_k]
            else:  # the smallest set of most likely tokens whose mass reaches top_p
                mass = probs[step][order].cumsum(0)
                allowed = order[:int((mass < top_p).sum()) + 1]
            assert token in allowed.tolist(), (step, token)


@pytest.mark.parametrize("temperature, top_k, top_p", [(0.7, 20, 0.9), (1.0, 5, 1.0), (1.3, 50, 0.3), (1.0, 1, 0.95)])
def test_the_fused_warper_gives_transformers_scores(temperature, top_k, top_p):
    from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    from salon.train.engine.decode_sampling import TopKTopP

    scores = torch.randn(16, 1000, generator=torch.Generator().manual_seed(top_k)) * 3
    kth = scores[0].topk(top_k).values[-1]
    scores[0, (scores[0] < kth).nonzero()[:top_k, 0]] = kth  # k more scores tie with the k-th: all kept
    warpers = [TopKLogitsWarper(top_k)] + ([TopPLogitsWarper(top_p)] if top_p < 1 else [])
    want = LogitsProcessorList([TemperatureLogitsWarper(temperature), *warpers])(None, scores)
    got = TopKTopP(temperature, top_k, top_p)(None, scores)
    assert torch.isfinite(want[0]).sum() == 2 * top_k or top_p < 1
    rows = slice(None) if top_p == 1 else slice(1, None)  # which of tied tokens top-p cuts is either's pick
    assert torch.equal(got[rows], want[rows])


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
    inputs = padded(trainer, PROMPTS)
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    length = ids.shape[1] + 4
    full = torch.cat([mask, torch.zeros(len(PROMPTS), 4, dtype=mask.dtype)], dim=1)
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


def test_the_loss_logprobs_and_trained_weights_are_untouched(trained):
    trainer, engine = trained
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    inputs = padded(trainer, PROMPTS)
    completion = torch.randint(10, 300, (len(PROMPTS), 6))
    ids = torch.cat([inputs["input_ids"], completion], dim=1)
    mask = torch.cat([inputs["attention_mask"], torch.ones_like(completion)], dim=1)

    def loss_logps():
        with torch.no_grad():
            return trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, 6, batch_size=2)[0]

    first = loss_logps()
    engine.refreshed_at = None  # force a refresh, then generate
    engine(PROMPTS, trainer)
    assert torch.equal(loss_logps(), first)
    assert all(torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())


def test_a_compiled_decode_step_is_compiled_once_per_shape(trained, caplog):
    """Dynamo's graph capture for real (its eager backend: no C++ compiler on a CPU runner); each shape's
    compile is announced before it starts, once."""
    from transformers import CompileConfig

    trainer, _ = trained
    compile_config = CompileConfig(backend="eager", mode=None, dynamic=False)
    decoder = StaticDecoder(MergedPolicy(trainer.model).model, compile=True, prompt_bucket=16,
                            compile_config=compile_config)
    cfg = trainer.generation_config
    graphs = []
    with caplog.at_level("INFO", logger="salon.train.engine.decode"):
        for lengths in ([5, 9], [3, 16], [20, 4], [7, 8], [30, 2]):  # buckets 16, 16, 32, 16, 32
            decoder.generate([list(range(10, 10 + n)) for n in lengths], cfg)
            graphs.append(decoder.compiled_graphs)
    assert caplog.text.count("compiling the decode step for batch 2 x cache") == 2
    assert graphs[0] >= 1 and graphs[1] == graphs[0]  # another prompt length in the same bucket: none
    assert graphs[2] > graphs[1] and graphs[4] == graphs[3] == graphs[2]  # a new bucket once, then none
    assert decoder.shapes == {(2, 16 + MAX_NEW), (2, 32 + MAX_NEW)}


def test_dynamo_captures_a_decode_step_reading_float8_rows_in_one_graph(trained):
    """generation_weights=fp8 under the compiled loop's settings (fullgraph: a break would raise), Dynamo's
    eager backend: the float8 products (their op's fake for the trace) in the captured step, whose greedy
    tokens are the uncompiled float8 copy's."""
    from transformers import CompileConfig

    trainer, _ = trained
    copy = MergedPolicy(trainer.model, fuse_linears=True, fp8_weights=True)
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    prompts = tokenize(PROMPTS, trainer)
    plain = StaticDecoder(copy.model, compile=False, prompt_bucket=16).generate(prompts, cfg)
    compiled = StaticDecoder(copy.model, compile=True, prompt_bucket=16,
                             compile_config=CompileConfig(backend="eager", mode=None, dynamic=False, fullgraph=True))
    out = compiled.generate(prompts, cfg)
    assert compiled.last_path == "loop" and compiled.loop_error is None and compiled.compiled_graphs >= 1
    assert torch.equal(out, plain)


def test_what_does_not_fit_is_refused_with_what_to_do():
    gib = 2**30
    assert fits(10 * gib, "cpu") and fits(2 * gib, "cuda:0", free=4 * gib)
    with pytest.raises(ConfigError) as e:
        check_fits(10 * gib, "cuda:0", "a merged copy of the policy", free=4 * gib)
    assert "10.0 GiB for a merged copy" in str(e.value) and "grpo.generation=transformers" in str(e.value)


def test_config_exposes_the_generation_batch(tmp_path):
    from salon.train.config import config_from_dict
    from salon.train.engine.choice import generation_engine, resolve_generation
    from salon.train.recipe import grpo_args

    cfg = config_from_dict({"grpo": {"use_cpu": True, "bf16": False, "num_generations": 8,
                                     "per_device_train_batch_size": 8, "gradient_accumulation_steps": 8,
                                     "report_to": []}})
    resolve_generation(cfg)
    assert cfg.grpo.generation == "transformers" and cfg.grpo.max_staleness == 0  # auto on a CPU
    assert type(generation_engine(cfg)).__name__ == "TransformersSampler"  # TRL's generate, through salon's rollout
    args = grpo_args(cfg, tmp_path)
    assert args.generation_batch_size == 64 and args.steps_per_generation == 8  # 8 prompts x 8 per step
    args = grpo_args(config_from_dict({"grpo": {"use_cpu": True, "bf16": False, "num_generations": 8,
                                                "per_device_train_batch_size": 8, "steps_per_generation": 4,
                                                "report_to": []}}), tmp_path)
    assert args.generation_batch_size == 32
    compiled = config_from_dict({"grpo": {"generation": "compiled", "generation_compile": False,
                                          "generation_attention": "buckets"}})
    assert generation_engine(compiled).compile == "off" and generation_engine(compiled).attention == "buckets"
    with pytest.raises(ConfigError) as e:
        config_from_dict({"grpo": {"generation_batch_size": 12, "steps_per_generation": 2,
                                   "generation_compile": "fast"}})
    assert len(e.value.problems) == 3


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
    prompts = tokenize(PROMPTS * 2, trainer)
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    decoders = {a: StaticDecoder(model, compile=False, prompt_bucket=16, attention=a) for a in ("filled", "whole")}
    assert decoders["filled"].attention_for(len(prompts)) == "filled"  # it runs, rather than falling back
    tokens = {a: d.generate(prompts, cfg) for a, d in decoders.items()}
    assert torch.equal(tokens["filled"], tokens["whole"]) and tokens["filled"].shape == (8, MAX_NEW)

    bucket = 16 * -(-max(map(len, prompts)) // 16)
    ids = torch.tensor([[0] * (bucket - len(p)) + p for p in prompts])
    mask = torch.zeros(len(prompts), bucket + MAX_NEW, dtype=torch.long)
    for i, p in enumerate(prompts):
        mask[i, bucket - len(p):bucket] = 1
    position = (mask[:, :bucket].cumsum(-1) - 1).clamp(min=0)
    span = DecodeSpan.start(mask, bucket, prompts)
    assert span.shared_rows == 4
    steps = {}
    with torch.no_grad():
        for attention in ("filled", "whole"):
            mask[:, bucket:] = 0
            cache = StaticCache(config=model.config, max_cache_len=bucket + MAX_NEW)
            model(input_ids=ids, attention_mask=mask[:, :bucket], position_ids=position, cache=cache, use_cache=True)
            pos, rows = position[:, -1:], []
            for i in range(1, MAX_NEW):
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
    prompts = tokenize(PROMPTS, trainer) * 16  # 64 rows: filled
    assert torch.equal(decoder.generate(prompts, cfg),
                       StaticDecoder(wide_heads, compile=False, prompt_bucket=16, attention="whole").generate(prompts, cfg))


def test_the_loop_measures_the_hosts_own_time_a_step(trained):
    """`last_host_ms_per_step` (logged as salon/generation/host_ms_per_step): positive, and within the
    call's time a step, since it is the span of the decode steps' calls less the waits for the device."""
    trainer, engine = trained
    decoder = StaticDecoder(engine.policy.model, compile=False, prompt_bucket=16, attention="filled")
    assert decoder.last_host_ms_per_step is None
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    out = decoder.generate(tokenize(PROMPTS, trainer), cfg)
    steps = out.shape[1]
    assert steps == MAX_NEW and decoder.last_path == "loop"
    assert 0 < decoder.last_host_ms_per_step <= 1e3 * decoder.last_seconds / (steps - 2)


def test_the_engine_calls_between_steps_before_each_decode_step_in_every_wave(trained):
    """between_steps (the overlapped step's move to the whole card): once before each decode step after the
    prefill, in each wave, in the decoding thread, and the tokens are those of a call without it."""
    import threading

    trainer, engine = trained
    engine = CompiledGeneration(compile="off", prompt_bucket=16, waves=2)
    engine.attach(trainer)
    cfg = trainer.generation_config
    saved = cfg.eos_token_id, cfg.do_sample
    cfg.eos_token_id, cfg.do_sample = None, False  # every row decodes MAX_NEW tokens
    calls = []
    try:
        plain = engine.generate(PROMPTS, trainer)["completion_ids"]
        engine.between_steps = lambda: calls.append(threading.current_thread().name)
        with ThreadPoolExecutor(1, thread_name_prefix="decoding") as thread:
            hooked = thread.submit(engine.generate, PROMPTS, trainer).result()["completion_ids"]
    finally:
        cfg.eos_token_id, cfg.do_sample = saved
    assert hooked == plain
    assert len(calls) == 2 * (MAX_NEW - 1) and all(name.startswith("decoding") for name in calls)


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
    prompts = tokenize(PROMPTS, trainer)  # left-padded: four lengths
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


def test_generation_in_waves_gives_each_group_whole_and_the_same_tokens(trained):
    """grpo.generation_waves=2: the batch generated in two parts of whole groups, the first part handed
    to on_wave as soon as it exists; greedy, the same completions as one wave."""
    from salon.train.engine.generation import waves_of

    assert waves_of(["a", "a", "b", "b", "c", "c"], 2) == [[0, 1, 2, 3], [4, 5]]
    assert waves_of(["a", "b", "a", "b"], 2) == [[0, 2], [1, 3]]  # a group is whole wherever its rows are
    assert waves_of(["a", "a"], 4) == [[0, 1]] and waves_of(["a", "b", "c"], 1) == [[0, 1, 2]]
    # one subject in several rows: each row's completions are a group of their own (TRL's num_generations)
    assert waves_of(["a"] * 8, 2, group_size=4) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert waves_of(["a", "a", "b", "b", "a", "a"], 2, group_size=2) == [[0, 1, 2, 3], [4, 5]]
    trainer, _ = trained
    greedy = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    greedy.eos_token_id = None
    prompts = [p for p in PROMPTS for _ in range(2)]  # 4 groups of 2, as TRL orders them
    saved, trainer.generation_config = trainer.generation_config, greedy
    try:
        outs, handed = {}, []
        for waves in (1, 2):
            engine = CompiledGeneration(compile="off", prompt_bucket=16, waves=waves)
            engine.attach(trainer)
            engine.on_wave = lambda p, ids: handed.append((p, ids))
            outs[waves] = engine(prompts, trainer)
    finally:
        trainer.generation_config = saved
    assert outs[2]["completion_ids"] == outs[1]["completion_ids"] and outs[2]["prompt_ids"] == outs[1]["prompt_ids"]
    assert len(handed) == 1 and handed[0][0] == prompts[:4] and handed[0][1] == outs[2]["completion_ids"][:4]
    # one prompt in two rows (trainer.num_generations == 2): two groups, so two waves
    engine = CompiledGeneration(compile="off", prompt_bucket=16, waves=2)
    engine.attach(trainer)
    engine.on_wave = lambda p, ids: handed.append((p, ids))
    engine([PROMPTS[0]] * 4, trainer)
    assert trainer.num_generations == 2 and len(handed) == 2 and handed[1][0] == [PROMPTS[0]] * 2


@pytest.mark.parametrize("waves", [1, 2])
def test_rows_that_end_early_are_handed_over_while_the_others_decode(stopping_often, monkeypatch, waves):
    """on_finished: the loop's checks (every SYNC_EVERY steps, 4 here) hand over the rows that ended since
    the last one, each once, by their row in the whole batch (in two waves too), with the prompt and the
    completion the batch gives it after; rows still going at the last check come only with the batch."""
    from salon.train.engine import decode

    trainer, engine, eos = stopping_often
    if waves > 1:
        engine = CompiledGeneration(compile="off", prompt_bucket=16, waves=waves)
        engine.attach(trainer)
    monkeypatch.setattr(decode, "SYNC_EVERY", 4)
    prompts = [p for p in PROMPTS for _ in range(2)]  # 4 groups of 2, as TRL orders them
    engine(prompts, trainer)  # copy up to date
    for seed in range(8):
        handed = []
        engine.on_finished = lambda p, ids, rows: handed.append((p, ids, rows))
        try:
            torch.manual_seed(seed)
            out = engine(prompts, trainer)["completion_ids"]
        finally:
            engine.on_finished = None
        assert engine.decoder.last_path == "loop"
        rows = [r for _, _, batch_rows in handed for r in batch_rows]
        assert len(rows) == len(set(rows))
        for p, ids, batch_rows in handed:
            assert p == [prompts[r] for r in batch_rows] and ids == [out[r] for r in batch_rows]
            assert all(i[-1] in eos and len(i) <= 8 for i in ids)  # ended by the second check
        if handed and len(rows) < len(prompts):
            break
    else:
        pytest.fail("no seed ended some rows early and not all")
