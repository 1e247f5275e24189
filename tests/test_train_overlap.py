"""The overlapped step (grpo.max_staleness) on a CPU: exact where it must be.

Real GRPOTrainers on a tiny Qwen3 with a rank-4 LoRA, float32 (train_support.tiny_grpo_trainer: 8
completions a step, 4 prompts x 2), a reward that is a plain function of the text:

- staleness 0 through salon's rollout (TransformersSampler in the engine's thread) against TRL's own
  transformers path: the same completions token for token, rewards and the updated weights within 1e-5;
- staleness 1 with an unchanged policy (learning rate 0): every importance weight is 1 within 1e-5;
- staleness 1 learning: the weights move off 1, within the cap; each step but an epoch's first was
  generated a step ahead; the data order is the synchronous loop's;
- staleness 2: two steps' prompts decoded as one batch, the steps 1 then 2 updates stale (1 where an epoch
  ends first); every weight 1 with an unchanged policy, off 1 when it learns; the data order kept;
- the compiled engine's recorded log-probs are TRL's log-prob pass's within 1e-5;
- a stale micro-batch is weighed by its loss's own forward, never by a sampler thread's log-prob pass;
- importance_weights' cap and the config's refusals.
About a minute on two cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from salon.train.engine.overlap import OverlappedRollout
from salon.train.engine.transformers_sampler import TransformersSampler
from salon.train.update.stale_correction import figures, importance_weights, install, merged

CONFIGS = Path(__file__).resolve().parent.parent / "train" / "configs"

TOL = 1e-5  # float32 on a CPU: the same operations in the same order, or a KV cache against a full pass
MAX_NEW = 10
PROMPTS = [[{"role": "user", "content": text}] for text in
           ("A watercolour of a peach hibiscus.", "koi", "moon jellyfish at dusk", "The quick brown fox")]


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from salon.models.tiny import build_lm

    return build_lm(tmp_path_factory.mktemp("policy") / "tiny", "qwen3")


def run(policy, out, staleness: int | None, steps: int, hook=None, **config):
    """`steps` optimiser steps; staleness None: TRL's own transformers path (no rollout_func); `hook(trainer,
    rollout)` before training. Returns the trainer, the completions and prompts each reward call saw, and the
    rollout."""
    from train_support import tiny_grpo_trainer

    seen = []

    def chars(prompts, completions, **kwargs):
        seen.append(([p[-1]["content"] for p in prompts], [c[0]["content"] for c in completions]))
        return [float(len(c[0]["content"]) % 7) for c in completions]

    rollout = None if staleness is None else OverlappedRollout(TransformersSampler(copy=bool(staleness)), staleness)
    trainer = tiny_grpo_trainer(policy, out, PROMPTS, rollout, chars, MAX_NEW, max_steps=steps, **config)
    if rollout is not None:
        rollout.attach(trainer)
        if staleness:
            install(trainer, rollout, cap=3.0)
    if hook is not None:
        hook(trainer, rollout)
    try:
        trainer.train()
    finally:
        if rollout is not None:
            rollout.close()
    return trainer, seen, rollout


def logged(trainer, name: str) -> list[float]:
    return [h[name] for h in trainer.state.log_history if name in h]


def weights(trainer) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}


def test_staleness_0_is_trls_loop(policy, tmp_path):
    trl, trl_seen, _ = run(policy, tmp_path / "trl", None, steps=3)
    mine, my_seen, rollout = run(policy, tmp_path / "mine", 0, steps=3)
    assert my_seen == trl_seen  # prompts and completions, token for token, at every step
    assert len({c for _, cs in my_seen for c in cs}) > 4  # sampled, not one reply
    assert logged(mine, "reward") == pytest.approx(logged(trl, "reward"), abs=TOL)
    assert logged(mine, "loss") == pytest.approx(logged(trl, "loss"), abs=TOL)
    after, theirs = weights(mine), weights(trl)
    assert max((after[n] - theirs[n]).abs().max().item() for n in after) < TOL
    assert max(after[n].abs().max().item() for n in after if "lora_B" in n) > 100 * TOL  # it learned (B starts at 0)
    assert rollout.steps == {"overlapped": 0, "synchronous": 3}
    assert logged(mine, "salon/overlap/staleness") == [0.0, 0.0, 0.0]


def test_staleness_1_with_an_unchanged_policy_weighs_every_token_1(policy, tmp_path):
    trainer, seen, rollout = run(policy, tmp_path / "still", 1, steps=3, learning_rate=0.0)
    assert logged(trainer, "salon/overlap/staleness") == [0.0, 1.0, 1.0]
    assert rollout.steps == {"overlapped": 2, "synchronous": 1}
    low, high = logged(trainer, "salon/overlap/importance_weight_min"), logged(trainer, "salon/overlap/importance_weight_max")
    assert len(low) == len(high) == 2  # steps 2 and 3: the stale ones
    assert all(abs(w - 1) < TOL for w in low + high)


def test_staleness_1_learning_keeps_the_data_order_and_corrects(policy, tmp_path):
    sync, sync_seen, _ = run(policy, tmp_path / "sync", 0, steps=5)
    stale, stale_seen, rollout = run(policy, tmp_path / "stale", 1, steps=5)
    assert [p for p, _ in stale_seen] == [p for p, _ in sync_seen]  # peeking ahead moves no prompt
    # 4 steps an epoch here (16 rows, 8 a generation, each twice): step 5 starts an epoch, generated when asked
    assert logged(stale, "salon/overlap/staleness") == [0.0, 1.0, 1.0, 1.0, 0.0]
    assert rollout.steps == {"overlapped": 3, "synchronous": 2}
    low, high = logged(stale, "salon/overlap/importance_weight_min"), logged(stale, "salon/overlap/importance_weight_max")
    assert max(abs(w - 1) for w in low + high) > 1e-3  # the sampler was one update behind
    assert all(0 < w <= 3.0 for w in low + high)
    assert all(s > 0 for s in logged(stale, "salon/overlap/overlap_s")[1:4])
    assert stale_seen[1][1] != sync_seen[1][1]  # step 2 was sampled by the policy before step 1's update


def test_a_stale_steps_weights_are_taken_in_its_losss_forward_as_a_pass_of_their_own_would_take_them(
        policy, tmp_path, monkeypatch):
    """No log-prob pass of the correction's own (a forward of the step's whole batch): the weights come from the
    loss's forward, detached, and are the ones a separate no-grad pass at theta_n gives, micro-batch by
    micro-batch, within 1e-5."""
    from trl import GRPOTrainer

    real = GRPOTrainer._get_per_token_logps_and_entropies
    passes = []  # forwards of the trained policy without a gradient, in training: a log-prob pass (the sampler's
    # own, recording its log-probs, runs on its copy)

    def counting(self, model, *args, **kwargs):
        if model is self.model and model.training and not torch.is_grad_enabled():
            passes.append(self.state.global_step)
        return real(self, model, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", counting)
    separate: dict[int, dict] = {}  # step -> the tally of a pass of their own, over the step's micro-batches

    def with_a_pass_beside(trainer, rollout):
        loss = trainer._compute_loss

        def checked(model, inputs):
            if model.training and rollout.handed_staleness:
                with torch.no_grad():  # `real` directly: not counted
                    current, _, _ = real(trainer, model, torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
                                         torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1),
                                         inputs["completion_ids"].size(1))
                tally = importance_weights(current, inputs["sampling_per_token_logps"], inputs["completion_mask"],
                                           3.0)[1]
                step = trainer.state.global_step
                separate[step] = merged(separate[step], tally) if step in separate else tally
            return loss(model, inputs)

        trainer._compute_loss = checked

    trainer, _, _ = run(policy, tmp_path / "stale", 1, steps=4, hook=with_a_pass_beside)
    assert logged(trainer, "salon/overlap/staleness") == [0.0, 1.0, 1.0, 1.0]
    assert passes == []
    assert sorted(separate) == [1, 2, 3]  # steps 2-4 (global_step counts those done)
    for name in ("importance_weight_mean", "importance_weight_min", "importance_weight_max", "log_ratio_abs_mean"):
        theirs = [figures(separate[step])[name] for step in sorted(separate)]
        assert logged(trainer, f"salon/overlap/{name}") == pytest.approx(theirs, abs=TOL), name
    assert max(abs(w - 1) for w in logged(trainer, "salon/overlap/importance_weight_max")) > 1e-3  # it learned


def test_staleness_2_with_an_unchanged_policy_weighs_every_token_1(policy, tmp_path):
    trainer, seen, rollout = run(policy, tmp_path / "still", 2, steps=5, learning_rate=0.0)
    # step 1 generated when asked; steps 2 and 3 as one batch beside it; step 4 alone beside step 3 (its epoch
    # ends there: 4 steps an epoch); step 5 starts an epoch
    assert logged(trainer, "salon/overlap/staleness") == [0.0, 1.0, 2.0, 1.0, 0.0]
    assert rollout.steps == {"overlapped": 3, "synchronous": 2}
    low, high = logged(trainer, "salon/overlap/importance_weight_min"), logged(trainer, "salon/overlap/importance_weight_max")
    assert len(low) == len(high) == 3
    assert all(abs(w - 1) < TOL for w in low + high)
    # the batch's seconds shared by its two steps: step 3 took the half kept from step 2's batch (how long it
    # waited for it is a clock reading, not checked: a busy machine can pause any thread)
    seconds = logged(trainer, "salon/overlap/generation_s")
    assert seconds[1] == pytest.approx(seconds[2], rel=1e-6) and seconds[1] > 0


def test_staleness_2_learning_keeps_the_data_order_and_corrects(policy, tmp_path):
    sync, sync_seen, _ = run(policy, tmp_path / "sync", 0, steps=4)
    stale, stale_seen, rollout = run(policy, tmp_path / "stale", 2, steps=4)
    assert [p for p, _ in stale_seen] == [p for p, _ in sync_seen]  # peeking two steps ahead moves no prompt
    assert logged(stale, "salon/overlap/staleness") == [0.0, 1.0, 2.0, 1.0]
    low, high = logged(stale, "salon/overlap/importance_weight_min"), logged(stale, "salon/overlap/importance_weight_max")
    # step 3's rows were sampled by the policy before step 1's update: two updates behind when learned from
    assert max(abs(w - 1) for w in (low[1], high[1])) > 1e-3
    assert all(0 < w <= 3.0 for w in low + high)
    assert stale_seen[2][1] != sync_seen[2][1]


def test_nothing_is_generated_ahead_for_steps_past_the_last(policy, tmp_path, monkeypatch):
    rows = []
    generate = TransformersSampler.generate

    def counting(self, prompts, trainer):
        rows.append(len(prompts))
        return generate(self, prompts, trainer)

    monkeypatch.setattr(TransformersSampler, "generate", counting)
    run(policy, tmp_path / "two", 2, steps=3)
    assert rows == [8, 16]  # step 1 when asked, steps 2 and 3 as one batch, nothing for a step 4
    rows.clear()
    run(policy, tmp_path / "one", 2, steps=2)
    assert rows == [8, 8]  # one step left after the first: its rows alone
    rows.clear()
    run(policy, tmp_path / "stale1", 1, steps=2)
    assert rows == [8, 8]


def test_a_batch_generated_for_two_steps_is_cut_between_them():
    from salon.train.engine.overlap import split_generation

    whole = {"prompt_ids": [[1], [2], [3], [4]], "completion_ids": [[5], [6], [7], [8]],
             "logprobs": [[-0.1], [-0.2], [-0.3], [-0.4]], "metrics": {"seconds": 6.0, "tokens_per_s": 2.0}}
    first, second = split_generation(whole, [["a", "a"], ["b", "b"]], wait=1.0)
    assert first.out["completion_ids"] == [[5], [6]] and second.out["completion_ids"] == [[7], [8]]
    assert second.out["logprobs"] == [[-0.3], [-0.4]] and second.out["prompt_ids"] == [[3], [4]]
    assert (first.staleness, second.staleness) == (1, 2)
    assert first.seconds == second.seconds == pytest.approx(3.0, abs=1e-9)
    assert first.overlap == second.overlap == pytest.approx(2.5, abs=1e-9)  # (6 - 1) / 2
    assert first.out["metrics"] == {"seconds": 6.0, "tokens_per_s": 2.0} and second.out["metrics"] == {}


def test_compiled_engine_records_trls_log_probs(policy, tmp_path):
    from salon.train.engine.generation import CompiledGeneration
    from salon.train.engine.transformers_sampler import sampler_logprobs
    from train_support import completion_chars, tiny_grpo_trainer
    from trl.trainer.utils import pad

    engine = CompiledGeneration(compile="off", prompt_bucket=16)
    trainer = tiny_grpo_trainer(policy, tmp_path, PROMPTS, engine, completion_chars, MAX_NEW)
    engine.attach(trainer)
    torch.manual_seed(0)
    out = engine.generate(PROMPTS, trainer)
    rows = [torch.tensor(r) for r in out["prompt_ids"]]
    ids = pad(rows, padding_value=trainer._tokenizer.pad_token_id, padding_side="left")
    mask = pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side="left")
    theirs = sampler_logprobs(trainer, trainer.model, ids, mask, out["completion_ids"], trainer._tokenizer.pad_token_id)
    assert [len(x) for x in out["logprobs"]] == [len(c) for c in out["completion_ids"]]
    gap = max(abs(a - b) for mine, their in zip(out["logprobs"], theirs) for a, b in zip(mine, their))
    assert gap < TOL


@pytest.mark.parametrize("rounds", [("fp8_weights",), ("fp8_cache",), ("fp8_weights", "fp8_cache")])
def test_a_float8_sampler_is_corrected_at_every_step_fresh_ones_too(policy, tmp_path, rounds):
    """grpo.generation_weights or generation_kv_cache fp8 at staleness 0 (the recipe's wiring: every_step): the
    compiled engine samples from float8 rows, so with an unchanged policy the weights are off 1 at every step (the
    first, fresh, included), within the cap; the same run with the policy's own weights and cache logs none."""
    from salon.train.engine.generation import CompiledGeneration
    from train_support import completion_chars, tiny_grpo_trainer

    ranges = {}
    for fp8 in (True, False):
        engine = CompiledGeneration(compile="off", prompt_bucket=16, **dict.fromkeys(rounds, fp8))
        rollout = OverlappedRollout(engine, staleness=0)
        trainer = tiny_grpo_trainer(policy, tmp_path / str(fp8), PROMPTS, rollout, completion_chars, MAX_NEW,
                                    max_steps=2, learning_rate=0.0)
        engine.attach(trainer)
        rollout.attach(trainer)
        install(trainer, rollout, cap=3.0, every_step=fp8)
        try:
            trainer.train()
        finally:
            rollout.close()
        assert logged(trainer, "salon/overlap/staleness") == [0.0, 0.0]
        ranges[fp8] = (logged(trainer, "salon/overlap/importance_weight_min"),
                       logged(trainer, "salon/overlap/importance_weight_max"))
    low, high = ranges[True]
    assert len(low) == len(high) == 2
    assert all(0 < w <= 3.0 for w in low + high) and min(low) < 1 - 1e-4 < 1 + 1e-4 < max(high)
    assert ranges[False] == ([], [])


def test_importance_weights_are_cut_at_the_cap():
    current = torch.tensor([[0.0, -1.0, -5.0, 0.0]])
    sampler = torch.tensor([[0.0, -3.0, -1.0, float("nan")]])
    mask = torch.tensor([[1, 1, 1, 0]])
    w, tally = importance_weights(current, sampler, mask, cap=3.0)
    assert w.tolist()[0][:3] == pytest.approx([1.0, 3.0, torch.exp(torch.tensor(-4.0)).item()], abs=1e-6)
    assert w[0, 3].item() == 1.0  # padding: no weight
    assert figures(tally)["truncated_share"] == pytest.approx(1 / 3)
    assert figures(tally)["importance_weight_max"] == pytest.approx(3.0)


def test_a_steps_figures_are_over_all_its_micro_batches_tokens():
    one = importance_weights(torch.tensor([[0.0, 0.5]]), torch.zeros(1, 2), torch.tensor([[1, 1]]), cap=3.0)[1]
    two = importance_weights(torch.tensor([[-1.0, 0, 0, 0]]), torch.zeros(1, 4), torch.tensor([[1, 1, 1, 0]]), 3.0)[1]
    step = figures(merged(one, two))
    e = torch.exp(torch.tensor([0.5, -1.0])).tolist()
    assert step["importance_weight_mean"] == pytest.approx((1 + e[0] + e[1] + 1 + 1) / 5, abs=1e-6)  # by token
    assert step["importance_weight_min"] == pytest.approx(e[1], abs=1e-6)
    assert step["importance_weight_max"] == pytest.approx(e[0], abs=1e-6)
    assert step["log_ratio_abs_mean"] == pytest.approx(1.5 / 5, abs=1e-6)


def test_a_samplers_log_prob_pass_in_its_own_thread_does_not_take_the_losss_weighing():
    """generation: transformers decodes ahead in a thread of its own and scores its rows by the trainer's log-prob
    forward, which the correction wraps: a pass of 8 sampler rows while a 2-row loss waits is not the loss's."""
    import threading
    from collections import defaultdict
    from types import SimpleNamespace

    def forward(model, ids, *args, **kwargs):  # TRL's log-prob forward: (B, T) log-probs, entropies
        return torch.full(ids.shape, -0.5 if model == "policy" else -3.0), None, None

    def loss(model, inputs):  # TRL's loss: a sampler's pass in its thread comes first, then the loss's own forward
        sampler = threading.Thread(target=trainer._get_per_token_logps_and_entropies, args=("sampler",
                                                                                             torch.zeros(8, 3)))
        sampler.start()
        sampler.join()
        trainer._get_per_token_logps_and_entropies("policy", inputs["completion_mask"])
        return (inputs["advantages"] * inputs["completion_mask"]).sum()

    trainer = SimpleNamespace(_generate_and_score_completions=lambda inputs: inputs, _compute_loss=loss,
                              _get_per_token_logps_and_entropies=forward, model=SimpleNamespace(training=True),
                              state=SimpleNamespace(global_step=1), _metrics={"train": defaultdict(list)})
    install(trainer, SimpleNamespace(handed_staleness=1), cap=3.0)
    step = trainer._generate_and_score_completions({"sampling_per_token_logps": torch.full((2, 3), -1.0),
                                                    "completion_mask": torch.ones(2, 3),
                                                    "advantages": torch.tensor([1.0, -2.0])})
    out = trainer._compute_loss(SimpleNamespace(training=True), step)
    w = torch.exp(torch.tensor(0.5)).item()  # exp(-0.5 - -1.0): weighed by the policy's pass, not the sampler's
    assert out.item() == pytest.approx(3 * w * (1.0 - 2.0), abs=1e-6)
    assert trainer._metrics["train"]["salon/overlap/importance_weight_mean"] == pytest.approx([w], abs=1e-6)


def test_the_config_refuses_what_staleness_1_cannot_go_with():
    from salon.pool.errors import ConfigError
    from salon.train.config_grpo import GRPOSettings

    with pytest.raises(ConfigError) as refused:
        GRPOSettings(max_staleness=1, generation="continuous_batching", update_per_group=True,
                     steps_per_generation=2, extra={"num_iterations": 2})
    text = str(refused.value)
    for words in ("not continuous_batching", "update_per_group both", "steps_per_generation unset",
                  "num_iterations must be 1"):
        assert words in text
    GRPOSettings(max_staleness=1, generation="transformers")  # and this is fine


def test_the_card_splits_only_for_a_decode_beside_the_step():
    from salon.pool.errors import ConfigError
    from salon.train.config_grpo import GRPOSettings

    with pytest.raises(ConfigError, match="generation_sms=48 splits the card.*max_staleness 1 or 2"):
        GRPOSettings(max_staleness=0, generation_sms=48)
    with pytest.raises(ConfigError, match="generation_device='cuda:1' already gives"):
        GRPOSettings(max_staleness=1, generation_sms=48, generation_device="cuda:1")
    for wrong in (0, "half", True):
        with pytest.raises(ConfigError, match="generation_sms.*give auto, null, or a number"):
            GRPOSettings(max_staleness=1, generation_sms=wrong)
    GRPOSettings(max_staleness=1, generation_sms=48)  # fine, and so is staleness auto (it may resolve to 1)
    GRPOSettings(generation_sms=48)
    GRPOSettings(max_staleness=0)  # auto, the default, splits only where a decode runs beside the step
    GRPOSettings(max_staleness=1, generation_device="cuda:1")


def test_the_trainer_takes_the_whole_card_back_once_the_generation_ahead_is_done(monkeypatch):
    """Where the step outlasts the decode, the trainer leaves its part of the card at its next micro-batch or judge
    call, not at the next rollout call; never while the decode runs, nor when it is not on its part. The streams are
    stood in for (a split needs a card); what decides the switch is salon's."""
    from concurrent.futures import Future

    rollout = OverlappedRollout(sampler=None, staleness=1)
    switched = []
    monkeypatch.setattr(rollout, "_trainer_on_whole_card", lambda: switched.append(len(switched)))
    decoding = Future()
    rollout.ahead = ([["a prompt"]], decoding)
    rollout.whole_card_if_done()  # on the whole card already
    rollout.whole_stream = "the stream it had"  # from here on its part
    rollout.whole_card_if_done()  # the decode still runs
    assert switched == []
    decoding.set_result({})
    rollout.whole_card_if_done()
    assert switched == [0]
    rollout.ahead = None
    rollout.close()


def test_the_decode_moves_to_the_whole_card_only_while_the_trainer_waits_for_it(monkeypatch):
    """With the card split, the decode's later steps go to a stream of the whole card once the trainer's thread
    waits for it (its part idles then), after what the decode queued on its part; once per generation, and it
    says how long it ran there. The streams are stood in for (a split needs a card); when to move is salon's."""
    import threading
    import time
    import types
    from concurrent.futures import Future

    events = []

    class Stream:
        def __init__(self, name="the whole card", priority=0):
            self.name = name

        def wait_stream(self, other):
            events.append(("wait", self.name, other.name))

    part = Stream("its part")
    current = [part]
    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: current[0])
    monkeypatch.setattr(torch.cuda, "set_stream", lambda stream: (current.__setitem__(0, stream),
                                                                   events.append(("on", stream.name))))
    rollout = OverlappedRollout(sampler=None, staleness=1)
    rollout.partition = types.SimpleNamespace(first=part)
    rollout._decode_on_whole_card_once_free()  # the trainer works: the decode stays on its part
    assert events == [] and current == [part]

    generation, seen = Future(), []

    def decode_a_while():  # the engine's thread, before each step, until the trainer's thread has waited
        while not rollout.trainer_waits.is_set():
            time.sleep(0.001)
        for _ in range(3):
            rollout._decode_on_whole_card_once_free()
        seen.append(rollout.trainer_waits.is_set())
        time.sleep(0.05)
        generation.set_result({"completion_ids": []})

    decoding = threading.Thread(target=decode_a_while)
    decoding.start()
    assert rollout._wait_for(generation) == {"completion_ids": []}
    decoding.join()
    assert seen == [True] and not rollout.trainer_waits.is_set()
    assert events == [("wait", "the whole card", "its part"), ("on", "the whole card")]
    sampler = types.SimpleNamespace(generate=lambda prompts, trainer: {"metrics": {}})
    rollout.sampler = sampler
    assert rollout.on_whole_card_since is not None
    ran = rollout._generate_ahead([["a prompt"]], trainer=None, step=1)["metrics"]["whole_card_s"]
    assert 0.04 < ran < 60 and rollout.on_whole_card_since is None
    assert rollout._generate_ahead([["a prompt"]], trainer=None, step=1)["metrics"]["whole_card_s"] == 0.0
    rollout.close()


def test_auto_splits_no_card_on_a_cpu():
    from salon.train.config import load_config
    from salon.train.engine.choice import resolve_generation

    cfg = load_config(CONFIGS / "smoke.yaml", ["grpo.use_cpu=true"])
    assert cfg.grpo.generation_sms == "auto"
    resolve_generation(cfg)
    assert cfg.grpo.max_staleness == 0 and cfg.grpo.generation_sms is None


def test_a_card_that_cannot_split_fails_a_number_in_words_and_auto_shares_it(monkeypatch, caplog):
    """The driver is stood in for (a split needs a card); what salon asks of it and does with its answer is real."""
    import types

    from salon.train.engine import overlap, sm_partition

    asked = []

    def refuse(first_sms, device):
        asked.append(first_sms)
        raise sm_partition.PartitionError("CUDA driver: CUDA_ERROR_NOT_SUPPORTED")

    monkeypatch.setattr(sm_partition, "partitioned_streams", refuse)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: types.SimpleNamespace(
        multi_processor_count=132))
    with pytest.raises(sm_partition.PartitionError, match="generation_sms=48: CUDA driver.*auto or null"):
        overlap.split_card(48, "cuda")
    with caplog.at_level("WARNING"):
        assert overlap.split_card("auto", "cuda") is None
    assert asked == [48, 64]  # auto asks for half the card's 132, in granules of 8
    assert "not split" in caplog.text and "NOT_SUPPORTED" in caplog.text
