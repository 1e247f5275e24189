"""grpo.generation=compiled on a CPU: the merged copy samples the policy's distribution inside TRL.

A tiny Qwen3 with a LoRA, trained one real GRPOTrainer step (LoRA B starts at zero, so the step is
what makes the adapter matter), generation through the engine as TRL's rollout_func. Float32 on a
CPU: the merged copy and the peft model agree to 1e-5 in log-probability (the two differ only in
the order of the additions). The static cache and the merged copy run as on a GPU; compile is off
(grpo.generation_compile=off) except in the compilation-count test, which runs dynamo's graph
capture with its eager backend. About 10 s on two cores. How much of the cache a decode step reads
(whole, filled, buckets, the filled kernel): test_train_decode_attention.py, on the same trainer.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from salon.pool.errors import ConfigError
from salon.train.engine.decode import StaticDecoder, check_fits, fits
from salon.train.engine.generation import CompiledGeneration, MergedPolicy, tokenize
from train_support import ENGINE_NEW, ENGINE_PROMPTS, completion_chars, engine_trainer, left_padded, tiny_grpo_trainer

LOGPROB_TOL = 1e-5  # float32: merged (W + BA) x against W x + B(A x)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return engine_trainer(tmp_path_factory)


def logprobs(model, ids, mask):
    with torch.no_grad():
        return torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1)


def test_a_policy_trained_whole_is_copied_and_the_copy_follows_each_step(tmp_path):
    """No LoRA (learn_tiny.yaml trains every weight): the engine's copy is the policy's weights, copied again in
    place after an optimiser step, its tensors' addresses kept (a captured graph reads them)."""
    from salon.models.tiny import build_lm

    folder = build_lm(tmp_path / "tiny", "qwen3")
    engine = CompiledGeneration(compile="off", prompt_bucket=16)
    trainer = tiny_grpo_trainer(folder, tmp_path / "out", ENGINE_PROMPTS, engine, completion_chars, ENGINE_NEW,
                                lora=False)
    engine.attach(trainer)
    assert engine.policy.model is not trainer.model and engine.policy.adapter is None
    addresses = [p.data_ptr() for p in engine.policy.model.parameters()]
    inputs = left_padded(trainer, ENGINE_PROMPTS)
    keep = inputs["attention_mask"].bool()
    before = logprobs(trainer.model, inputs["input_ids"], inputs["attention_mask"])
    copy = logprobs(engine.policy.model, inputs["input_ids"], inputs["attention_mask"])
    assert (copy - before)[keep].abs().max().item() < LOGPROB_TOL
    trainer.train()
    after = logprobs(trainer.model, inputs["input_ids"], inputs["attention_mask"])
    assert (after - before)[keep].abs().max() > 100 * LOGPROB_TOL  # the step moved the weights themselves
    engine(ENGINE_PROMPTS, trainer)
    assert engine.refreshes == 1 and [p.data_ptr() for p in engine.policy.model.parameters()] == addresses
    copy = logprobs(engine.policy.model, inputs["input_ids"], inputs["attention_mask"])
    assert (copy - after)[keep].abs().max().item() < LOGPROB_TOL


def test_the_copy_equals_the_policy_after_an_optimiser_step(trained):
    trainer, engine = trained
    assert trainer.state.global_step == 1
    assert [(batch, (length - ENGINE_NEW) % 16) for batch, length in engine.decoder.shapes] == [(8, 0)]  # 8 at once
    b = {n: p for n, p in trainer.model.named_parameters() if "lora_B" in n}
    assert b and all(p.abs().sum() > 0 for p in b.values())  # the step moved the adapter off zero
    inputs = left_padded(trainer, ENGINE_PROMPTS)
    policy = logprobs(trainer.model, inputs["input_ids"], inputs["attention_mask"])
    stale = logprobs(engine.policy.model, inputs["input_ids"], inputs["attention_mask"])
    keep = inputs["attention_mask"].bool()
    assert (stale - policy)[keep].abs().max() > 100 * LOGPROB_TOL  # before the refresh the copy is last step's

    torch.manual_seed(0)
    engine(ENGINE_PROMPTS, trainer)  # global step 1 != the copy's step 0: refreshed in place first
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
    inputs = left_padded(trainer, ENGINE_PROMPTS)
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
    engine(ENGINE_PROMPTS, trainer)  # brings the copy to the current step
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None  # every row runs the full length
    inputs = left_padded(trainer, ENGINE_PROMPTS)
    with torch.no_grad():
        want = trainer.model.generate(**inputs, generation_config=cfg)[:, inputs["input_ids"].shape[1]:]
    got = engine.decoder.generate(tokenize(ENGINE_PROMPTS, trainer), cfg)
    assert engine.decoder.last_path == "loop"
    assert got.shape == (len(ENGINE_PROMPTS), ENGINE_NEW) and torch.equal(got.cpu(), want)


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
        prompts = ENGINE_PROMPTS * 2
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
    assert max(lengths) <= ENGINE_NEW
    early = [c for c in out["completion_ids"] if len(c) < ENGINE_NEW]
    assert early and all(c[-1] in eos and not set(c[:-1]) & set(eos) for c in early)


@pytest.mark.parametrize("top_k, top_p", [(3, 1.0), (0, 0.5)])
def test_every_sampled_token_is_in_the_policys_top_k_or_nucleus(trained, top_k, top_p):
    trainer, engine = trained
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "temperature": 1.0,
                                                         "top_k": top_k, "top_p": top_p})
    cfg.eos_token_id = None
    engine(ENGINE_PROMPTS, trainer)
    prompt_ids = tokenize(ENGINE_PROMPTS, trainer)
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


def test_the_loss_logprobs_and_trained_weights_are_untouched(trained):
    trainer, engine = trained
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    inputs = left_padded(trainer, ENGINE_PROMPTS)
    completion = torch.randint(10, 300, (len(ENGINE_PROMPTS), 6))
    ids = torch.cat([inputs["input_ids"], completion], dim=1)
    mask = torch.cat([inputs["attention_mask"], torch.ones_like(completion)], dim=1)

    def loss_logps():
        with torch.no_grad():
            return trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, 6, batch_size=2)[0]

    first = loss_logps()
    engine.refreshed_at = None  # force a refresh, then generate
    engine(ENGINE_PROMPTS, trainer)
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
    assert decoder.shapes == {(2, 16 + ENGINE_NEW), (2, 32 + ENGINE_NEW)}


def test_dynamo_captures_a_decode_step_reading_float8_rows_in_one_graph(trained):
    """generation_weights=fp8 under the compiled loop's settings (fullgraph: a break would raise), Dynamo's
    eager backend: the float8 products (their op's fake for the trace) in the captured step, whose greedy
    tokens are the uncompiled float8 copy's."""
    from transformers import CompileConfig

    trainer, _ = trained
    copy = MergedPolicy(trainer.model, fuse_linears=True, fp8_weights=True)
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    prompts = tokenize(ENGINE_PROMPTS, trainer)
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


def test_the_loop_measures_the_hosts_own_time_a_step(trained):
    """`last_host_ms_per_step` (logged as salon/generation/host_ms_per_step): positive, and within the
    call's time a step, since it is the span of the decode steps' calls less the waits for the device."""
    trainer, engine = trained
    decoder = StaticDecoder(engine.policy.model, compile=False, prompt_bucket=16, attention="filled")
    assert decoder.last_host_ms_per_step is None
    cfg = trainer.generation_config.__class__.from_dict({**trainer.generation_config.to_dict(), "do_sample": False})
    cfg.eos_token_id = None
    out = decoder.generate(tokenize(ENGINE_PROMPTS, trainer), cfg)
    steps = out.shape[1]
    assert steps == ENGINE_NEW and decoder.last_path == "loop"
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
    cfg.eos_token_id, cfg.do_sample = None, False  # every row decodes ENGINE_NEW tokens
    calls = []
    try:
        plain = engine.generate(ENGINE_PROMPTS, trainer)["completion_ids"]
        engine.between_steps = lambda: calls.append(threading.current_thread().name)
        with ThreadPoolExecutor(1, thread_name_prefix="decoding") as thread:
            hooked = thread.submit(engine.generate, ENGINE_PROMPTS, trainer).result()["completion_ids"]
    finally:
        cfg.eos_token_id, cfg.do_sample = saved
    assert hooked == plain
    assert len(calls) == 2 * (ENGINE_NEW - 1) and all(name.startswith("decoding") for name in calls)


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
    prompts = [p for p in ENGINE_PROMPTS for _ in range(2)]  # 4 groups of 2, as TRL orders them
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
    engine([ENGINE_PROMPTS[0]] * 4, trainer)
    assert trainer.num_generations == 2 and len(handed) == 2 and handed[1][0] == [ENGINE_PROMPTS[0]] * 2


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
    prompts = [p for p in ENGINE_PROMPTS for _ in range(2)]  # 4 groups of 2, as TRL orders them
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
