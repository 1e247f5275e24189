"""The compiled engine on a device of its own (grpo.generation: compiled with grpo.generation_device, the
arrangement of train/configs/lora_2gpu_64.yaml), on a CPU: two real processes, the trainer in this one and the
compiled engine (salon.train.engine.generation_process.CompiledWorker, compile off) in a spawned one.

- a real GRPOTrainer (train_support.tiny_grpo_trainer) learns 3 steps through it, overlapped (staleness 1,
  stale_correction): staleness logged 0, 1, 1; after each refresh the process's merged copy scores given
  completions as TRL's log-prob pass scores them on the trainer (float32, within 1e-4), while the trainer's
  own scores moved between refreshes; the importance weights move off 1 (the process samples one update
  behind); the process says its weights lie on the configured device and the compiled engine samples;
- at learning rate 0 (the same process, rebuilt for a new trainer) every generation's log-probs, the ones the
  decoder recorded while sampling, are TRL's within 1e-4, and so every importance weight is 1 within 1e-4;
- lora_2gpu_64.yaml validates and resolves to the compiled engine in a process on cuda:1, staleness 1, the
  judge left on the trainer's device. This machine has no CUDA: torch.cuda.is_available, the one thing
  resolve_generation asks of it, is patched to say yes.
One process is started (it imports torch, transformers, peft and TRL: some 10 s on two cores).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from salon.train.engine.generation import tokenize
from salon.train.engine.overlap import OverlappedRollout
from salon.train.engine.sampler_process import ProcessSampler, same_card
from salon.train.update.stale_correction import install
from train_support import largest_gap, trl_logprobs

TOL = 1e-4  # float32 on a CPU: the merged copy (LoRA folded in, q/k/v fused) against the peft model
MAX_NEW = 10
PROMPTS = [[{"role": "user", "content": text}] for text in
           ("A watercolour of a peach hibiscus.", "koi", "moon jellyfish at dusk", "The quick brown fox")]
# lora_2gpu_64.yaml's engine settings, compiled off (a CPU) and prompts in buckets of 16 tokens (tiny prompts)
ENGINE = {"compile": "off", "prompt_bucket": 16, "attention": "auto", "fuse_linears": True}
CONFIG = Path(__file__).resolve().parent.parent / "train" / "configs" / "lora_2gpu_64.yaml"
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from salon.models.tiny import build_lm

    return build_lm(tmp_path_factory.mktemp("policy") / "tiny", "qwen3")


@pytest.fixture(scope="module")
def sampler():
    sampler = ProcessSampler("cpu", compiled=ENGINE)
    yield sampler
    sampler.close()


def logged(trainer, name: str) -> list[float]:
    return [h[name] for h in trainer.state.log_history if name in h]


def given_completions(trainer) -> tuple[list[list[int]], list[list[int]]]:
    """The prompts' ids and made-up completions of 3 to 6 tokens: something to score that nothing sampled."""
    vocab = trainer.model.config.vocab_size
    return tokenize(PROMPTS, trainer), [[(31 * i + 7 * j) % vocab for j in range(3 + i)] for i in range(len(PROMPTS))]


def train(policy, out, sampler: ProcessSampler, learning_rate: float):
    """Three overlapped steps through `sampler`; what each refresh and generation gave, seen as they happened:
    (global step, the process's scores of the given completions, TRL's on the trainer) right after each
    refresh (in the trainer's thread, before the update), and each generation's output."""
    from train_support import completion_chars, tiny_grpo_trainer

    rollout = OverlappedRollout(sampler, staleness=1)
    trainer = tiny_grpo_trainer(policy, out, PROMPTS, rollout, completion_chars, MAX_NEW, max_steps=3,
                                learning_rate=learning_rate)
    rollout.attach(trainer)
    install(trainer, rollout, cap=3.0)
    refreshes, generations = {}, []
    refresh, generate = sampler.refresh, sampler.generate

    def refreshing(t):
        refresh(t)
        prompt_ids, completions = given_completions(t)
        refreshes[t.state.global_step] = (sampler.score(prompt_ids, completions, t),
                                          trl_logprobs(t, prompt_ids, completions))

    def generating(prompts, t):
        generations.append(generate(prompts, t))
        return generations[-1]

    sampler.refresh, sampler.generate = refreshing, generating
    try:
        trainer.train()
    finally:
        rollout.thread.shutdown(wait=True)
        del sampler.refresh, sampler.generate
    assert logged(trainer, "salon/overlap/staleness") == [0.0, 1.0, 1.0]
    weights = logged(trainer, "salon/overlap/importance_weight_min") + logged(trainer, "salon/overlap/importance_weight_max")
    assert len(weights) == 4  # steps 2 and 3: the stale ones
    return trainer, refreshes, generations, weights


def test_the_compiled_engine_in_a_process_samples_from_the_trainers_weights(policy, sampler, tmp_path):
    trainer, refreshes, generations, weights = train(policy, tmp_path / "learning", sampler, learning_rate=0.05)
    # before the first step and after each update that a generation follows (none for a fourth step)
    assert sorted(refreshes) == [0, 1]
    for step, (process, trainers) in refreshes.items():
        assert largest_gap(process, trainers) < TOL, step
    assert largest_gap(refreshes[0][1], refreshes[1][1]) > 1e-3  # the trainer moved: the refreshes carried it
    assert max(abs(w - 1) for w in weights) > 1e-3 and all(0 < w <= 3.0 for w in weights)  # one update behind
    assert sampler.placement["device"] == "cpu" and sampler.placement["engine"] == "compiled"
    assert sampler.placement["compile"] is False and sampler.placement["fused_groups"] > 0
    assert sampler.placement["pid"] == sampler.pid != os.getpid()
    assert set(logged(trainer, "salon/generation/decode_loop")) == {1.0}  # the static decoder's loop sampled
    assert logged(trainer, "salon/generation/refresh_s") and logged(trainer, "salon/generation/decode_s")
    assert len(generations) == 3 and all(len(g["completion_ids"]) == 8 for g in generations)

    pid = sampler.pid
    still, _, generations, weights = train(policy, tmp_path / "still", sampler, learning_rate=0.0)
    assert sampler.pid == pid  # the same process, its policy rebuilt for another trainer
    for out in generations:  # the decoder's own log-probs: no second pass in the process
        assert largest_gap(out["logprobs"], trl_logprobs(still, out["prompt_ids"], out["completion_ids"])) < TOL
    assert all(abs(w - 1) < TOL for w in weights)


def test_lora_2gpu_64_places_the_engine_on_the_second_card(monkeypatch):
    from salon.pool.errors import ConfigError
    from salon.train.config import load_config
    from salon.train.engine.choice import generation_engine, resolve_generation

    for staleness in ([], ["grpo.max_staleness=auto"]):  # as written, and auto: 1 on a card of its own
        cfg = load_config(CONFIG, staleness)
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        resolve_generation(cfg)
        monkeypatch.undo()
        assert (cfg.grpo.generation, cfg.grpo.generation_device, cfg.grpo.max_staleness) == ("compiled", "cuda:1", 1)
    sampler = generation_engine(cfg)
    assert type(sampler) is ProcessSampler and sampler.device == "cuda:1" and sampler.pid is None
    assert sampler.compiled == {"compile": "auto", "prompt_bucket": 256, "attention": "filled", "fuse_linears": True,
                                "fp8_weights": False, "fp8_cache": False}
    # the judge goes where build_judge puts it, the trainer's device (cuda:0), not a device of its own
    assert cfg.judge.name == "transformers" and "device" not in cfg.judge.kwargs and not cfg.grpo.use_cpu
    with pytest.raises(ConfigError, match="is the card the trainer runs on"):
        load_config(CONFIG, ["grpo.generation_device=cuda:0"])
    assert same_card("cuda:0", torch.device("cuda:0")) and not same_card("cuda:1", torch.device("cuda:0"))
    assert not same_card("cpu", torch.device("cpu"))  # a CPU process beside a CPU trainer: the tests' arrangement
