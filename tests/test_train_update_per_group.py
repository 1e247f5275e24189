"""grpo.update_per_group on a CPU: the step generated at once, scored and updated a micro-batch at a
time, makes the update TRL makes from the whole batch.

Two real GRPOTrainer runs of one optimiser step from the same tiny Qwen3 and LoRA (float32): TRL's
own arrangement (the generation batch of 8 scored whole, then shuffled into two micro-batches) and
update_per_group (TRL's steps_per_generation 1; the engine generates both micro-batches at the first).
The same completions, and the same gradient at the optimiser step, within GRAD_TOL of its largest
entry: the token-normalised loss (dapo) divides by the whole step's tokens in both. (Compared before
AdamW, whose first step moves every weight by about the learning rate whatever its gradient's size.)
About 15 s on two cores.
"""

from __future__ import annotations

import pytest
import torch

from salon.train.engine.generation import CompiledGeneration

GRAD_TOL = 1e-5  # float32, relative to the largest entry: the same sums in another order and other padding
MAX_NEW = 12
PROMPTS = [[{"role": "user", "content": text}] for text in
           ("A watercolour of a peach hibiscus.", "koi", "Compare composition, colour and finish.", "The quick fox")]


LENGTHS = [3, 12, 5, 9, 12, 2, 7, 12]  # each completion cut here, so the micro-batches hold unequal tokens


def cut_to_lengths(cut):
    """The engine's EOS cut, then each row cut to LENGTHS (a tiny random model seldom ends by itself)."""
    def cut_more(completions, eos):
        return [ids[:n] for ids, n in zip(cut(completions, eos), LENGTHS)]
    return cut_more


def one_step(folder, out, per_group: bool):
    from transformers import TrainerCallback

    from salon.train.update.update_per_group import install
    from train_support import completion_chars, tiny_grpo_trainer

    torch.manual_seed(0)
    engine = CompiledGeneration(compile="off", prompt_bucket=16)
    trainer = tiny_grpo_trainer(folder, out, PROMPTS, engine, completion_chars, MAX_NEW, loss_type="dapo",
                                steps_per_generation=1 if per_group else None)
    engine.attach(trainer)
    asked, whole_step = [], []
    if per_group:
        install(trainer, engine)
        engine.on_step = lambda prompts, ids: whole_step.append((prompts, ids))
    made = engine.__call__

    def recorded(prompts, trainer):
        out = made(prompts, trainer)
        asked.append((prompts, out["completion_ids"]))
        return out

    trainer.rollout_func = recorded
    grads = {}

    class Gradients(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            grads.update({n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.grad is not None})

    trainer.add_callback(Gradients())
    trainer.train()
    return grads, asked, whole_step, engine


def test_the_update_is_the_one_trl_makes_from_the_whole_batch(tmp_path, monkeypatch):
    from salon.models.tiny import build_lm
    from salon.train.engine import generation

    monkeypatch.setattr(generation, "cut_after_eos", cut_to_lengths(generation.cut_after_eos))
    folder = build_lm(tmp_path / "tiny", "qwen3")
    whole, asked_whole, _, _ = one_step(folder, tmp_path / "whole", per_group=False)
    grouped, asked_grouped, step, engine = one_step(folder, tmp_path / "grouped", per_group=True)
    # TRL asked once for all 8 completions; per group, twice for 4, both made in the first call's batch
    assert len(asked_whole) == 1 and len(asked_whole[0][0]) == 8
    assert [len(p) for p, _ in asked_grouped] == [4, 4] and len(step) == 1
    assert [(batch, (length - MAX_NEW) % 16) for batch, length in engine.decoder.shapes] == [(8, 0)]
    assert step[0][0] == asked_whole[0][0] and [p for p, _ in asked_grouped] == [step[0][0][:4], step[0][0][4:]]
    assert step[0][1] == asked_whole[0][1] == asked_grouped[0][1] + asked_grouped[1][1]  # the same completions
    assert [len(ids) for ids in step[0][1]] == LENGTHS and engine.step_tokens == sum(LENGTHS)
    assert sorted(whole) == sorted(grouped) and any("lora_B" in n for n in whole)
    largest = max(g.abs().max().item() for g in whole.values())
    worst = max((whole[n] - grouped[n]).abs().max().item() for n in whole)
    assert largest > 0 and worst <= GRAD_TOL * largest, (worst, largest)


def test_what_update_per_group_cannot_go_with_is_refused_at_once():
    from salon.pool.errors import ConfigError
    from salon.train.config_grpo import GRPOSettings

    with pytest.raises(ConfigError) as e:
        GRPOSettings(update_per_group=True, generation="transformers", scale_rewards="batch", steps_per_generation=2,
                     per_device_train_batch_size=4, num_generations=8, gradient_accumulation_steps=2,
                     extra={"num_iterations": 2})
    text = str(e.value)
    for part in ("needs grpo.generation=compiled", "leave grpo.generation_batch_size and grpo.steps_per_generation",
                 "scale_rewards=batch", "must hold whole groups", "num_iterations=2"):
        assert part in text, text
    assert GRPOSettings(update_per_group=True).update_per_group
