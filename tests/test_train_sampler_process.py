"""grpo.generation_device on a CPU: the sampler in a process of its own (salon.train.engine.sampler_process),
two real processes.

- after a refresh the process's log-probs are the trainer's (TRL's log-prob pass) within 1e-5, and a refresh
  is what moves them;
- an exception in the process arrives in the parent with its message and traceback, and the process serves on;
- a real GRPOTrainer (train_support.tiny_grpo_trainer) overlapped through it (staleness 1, stale_correction):
  with learning rate 0 every importance weight is 1 within 1e-5, learning they move off 1 within the cap; the
  rollout's close ends the process (its pid is gone); a process killed is an error that says so;
- the config's refusals, and generation_engine's choice.
Two processes are started in all (each imports torch, transformers, peft and TRL: some 10 s on two cores).
"""

from __future__ import annotations

import os
import signal

import pytest
import torch

from salon.train.engine.overlap import OverlappedRollout
from salon.train.engine.sampler_process import GenerationProcessError, ProcessSampler
from salon.train.update.stale_correction import install
from train_support import largest_gap, trl_logprobs

TOL = 1e-5  # float32 on a CPU, the same modules on the same weights
MAX_NEW = 10
PROMPTS = [[{"role": "user", "content": text}] for text in
           ("A watercolour of a peach hibiscus.", "koi", "moon jellyfish at dusk", "The quick brown fox")]
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from salon.models.tiny import build_lm

    return build_lm(tmp_path_factory.mktemp("policy") / "tiny", "qwen3")


@pytest.fixture(scope="module")
def served(policy, tmp_path_factory):
    """A trainer (never trained) and a sampler process refreshed to it."""
    from train_support import completion_chars, tiny_grpo_trainer

    trainer = tiny_grpo_trainer(policy, tmp_path_factory.mktemp("served"), PROMPTS, lambda p, t: None,
                                completion_chars, MAX_NEW)
    sampler = ProcessSampler("cpu")
    sampler.refresh(trainer)
    yield trainer, sampler
    sampler.close()


def logged(trainer, name: str) -> list[float]:
    return [h[name] for h in trainer.state.log_history if name in h]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_process_scores_as_the_trainer_after_a_refresh(served):
    trainer, sampler = served
    out = sampler.generate(PROMPTS, trainer)
    assert largest_gap(out["logprobs"], trl_logprobs(trainer, out["prompt_ids"], out["completion_ids"])) < TOL
    with torch.no_grad():  # an update: the LoRA's B moves off 0, so the adapter now changes the logits
        for name, p in trainer.model.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn_like(p) * 0.5)
    trainer.state.global_step += 1
    theirs = trl_logprobs(trainer, out["prompt_ids"], out["completion_ids"])
    stale = sampler.score(out["prompt_ids"], out["completion_ids"], trainer)
    assert largest_gap(stale, theirs) > 1e-2  # not refreshed yet
    sampler.refresh(trainer)
    assert largest_gap(sampler.score(out["prompt_ids"], out["completion_ids"], trainer), theirs) < TOL


def train(policy, out, sampler: ProcessSampler, **config):
    """Three steps of a real GRPOTrainer overlapped (staleness 1) through `sampler`; its rollout is left open."""
    from train_support import completion_chars, tiny_grpo_trainer

    rollout = OverlappedRollout(sampler, staleness=1)
    trainer = tiny_grpo_trainer(policy, out, PROMPTS, rollout, completion_chars, MAX_NEW, max_steps=3, **config)
    rollout.attach(trainer)
    install(trainer, rollout, cap=3.0)
    trainer.train()
    assert logged(trainer, "salon/overlap/staleness") == [0.0, 1.0, 1.0]
    weights = logged(trainer, "salon/overlap/importance_weight_min") + logged(trainer, "salon/overlap/importance_weight_max")
    assert len(weights) == 4  # steps 2 and 3: the stale ones
    return trainer, rollout, weights


def test_errors_in_the_process_reach_the_parent(served):
    trainer, sampler = served
    with pytest.raises(GenerationProcessError) as raised:
        sampler.score([[10**7]], [[1]], trainer)  # a token id the vocabulary does not have
    assert "IndexError: index out of range" in str(raised.value) and "Traceback" in str(raised.value)
    assert len(sampler.generate(PROMPTS, trainer)["completion_ids"]) == len(PROMPTS)  # it serves on


def test_a_trainer_overlapped_through_the_process(policy, served, tmp_path):
    sampler, pid = served[1], served[1].pid  # a process that served another trainer: rebuilt for this one
    _, rollout, still = train(policy, tmp_path / "still", sampler, learning_rate=0.0)
    assert sampler.pid == pid and not gone(pid)
    assert all(abs(w - 1) < TOL for w in still)
    rollout.close()
    assert gone(pid) and sampler.pid is None  # the rollout's close ended the process
    with pytest.raises(GenerationProcessError, match="closed"):
        sampler.score([[1]], [[1]], served[0])

    sampler = ProcessSampler("cpu")
    trainer, rollout, learning = train(policy, tmp_path / "learning", sampler, learning_rate=0.05)
    assert max(abs(w - 1) for w in learning) > 1e-3  # the process was one update behind
    assert all(0 < w <= 3.0 for w in learning)
    rollout.thread.shutdown(wait=True)  # nothing runs ahead past the last step: the engine is idle
    pid = sampler.pid
    os.kill(pid, signal.SIGKILL)  # a process that dies (the kernel's out-of-memory killer, say)
    with pytest.raises(GenerationProcessError) as dead:
        sampler.generate(PROMPTS, trainer)
    assert f"(pid {pid}) ended during 'generate', exit code -9" in str(dead.value)
    assert "generation_device=null" in str(dead.value)
    rollout.close()
    assert gone(pid) and sampler.pid is None


def test_the_config_refuses_what_a_generation_process_cannot_run():
    from salon.pool.errors import ConfigError
    from salon.train.config import config_from_dict
    from salon.train.config_grpo import GRPOSettings
    from salon.train.engine.choice import generation_engine, resolve_generation

    for device in ("gpu1", "cuda1", "cuda:x", "CPU"):
        with pytest.raises(ConfigError, match="a device such as cpu, cuda or cuda:1"):
            GRPOSettings(generation_device=device)
    for engine in ("continuous_batching", "vllm_colocate"):
        with pytest.raises(ConfigError, match=f"not {engine}"):
            GRPOSettings(generation_device="cuda:1", generation=engine)
    with pytest.raises(ConfigError, match="update_per_group in the compiled engine of the training process"):
        GRPOSettings(generation_device="cuda:1", generation="compiled", update_per_group=True)
    for device in ("cuda", "cuda:0"):  # the trainer's own card
        with pytest.raises(ConfigError, match="is the card the trainer runs on"):
            GRPOSettings(generation_device=device)
    with pytest.raises(ConfigError, match="a process of its own decodes the batch at once"):
        GRPOSettings(generation_device="cuda:1", generation="compiled", generation_waves=2)
    compiled = generation_engine(config_from_dict({"grpo": {"generation": "compiled", "generation_device": "cuda:1"}}))
    assert type(compiled) is ProcessSampler and compiled.compiled["compile"] == "auto" and compiled.pid is None
    cfg = config_from_dict({"grpo": {"generation_device": "cpu", "use_cpu": True, "bf16": False, "report_to": []}})
    resolve_generation(cfg)
    sampler = generation_engine(cfg)
    assert cfg.grpo.generation == "transformers" and type(sampler) is ProcessSampler and sampler.pid is None
    assert cfg.grpo.max_staleness == 0  # auto: on the CPU's own cores a step ahead is not faster
    card = config_from_dict({"grpo": {"generation_device": "cuda:1", "report_to": []}})
    resolve_generation(card)
    assert card.grpo.generation == "transformers" and card.grpo.max_staleness == 1  # a card of its own: overlapped
    GRPOSettings(generation_device="cuda", use_cpu=True, max_staleness=1, generation="transformers")  # these are fine
    GRPOSettings(generation_device="cuda:3")
