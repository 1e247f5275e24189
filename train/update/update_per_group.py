"""grpo.update_per_group: a micro-batch's update runs while the step's later paintings still render.

TRL scores the whole generation batch before its first backward pass: at 64 completions the card
waits for paintings through the reward, then the CPUs wait through the update. With
`update_per_group: true` TRL's generation batch is one micro-batch (steps_per_generation 1) and the
compiled engine (salon.train.engine.generation) generates every micro-batch of the optimiser step at the
first one (the Trainer has fetched them all for gradient accumulation before it starts), every
painting starts rendering then, and TRL gets each micro-batch's completions in turn: it scores one
micro-batch and updates on it while the next one's paintings render.

    install(trainer, engine)   # the recipe does, after building the trainer, before trainer.train()

The update is the one TRL makes from the whole batch at once: the advantages are per group
(`scale_rewards` group or none; refused otherwise), nothing is off-policy (the optimiser steps only
after the last micro-batch, and every completion came from the policy before it), and the losses
that divide by the batch's tokens (dapo, cispo, vespo) are given the whole step's count, as TRL
counts it, in place of the micro-batch's (`num_items_in_batch`). Rows pad to their micro-batch's
longest rather than the step's, which moves nothing but masked positions.
"""

from __future__ import annotations

import functools

# GRPOConfig fields a user may give under grpo.extra that this arrangement cannot honour
_REFUSED_EXTRA = {
    "num_iterations": (1, "each generation feeds one optimiser step"),
    "multi_objective_aggregation": ("sum_then_normalize", "normalize_then_sum scales by the whole batch"),
}


def config_problems(g) -> list[str]:
    """What grpo.update_per_group cannot go with (GRPOSettings lists them with its other problems)."""
    if not g.update_per_group:
        return []
    p = []
    if g.generation not in ("compiled", "auto"):
        p.append(f"grpo.update_per_group needs grpo.generation=compiled (not {g.generation}): it generates the "
                 "whole step at its first micro-batch")
    if g.generation_batch_size is not None or g.steps_per_generation is not None:
        p.append("grpo.update_per_group sets TRL's steps_per_generation to 1 itself: leave "
                 "grpo.generation_batch_size and grpo.steps_per_generation unset")
    if g.scale_rewards == "batch":
        p.append("grpo.update_per_group scores one micro-batch at a time: grpo.scale_rewards=batch needs the whole "
                 "batch (use group or none)")
    if g.per_device_train_batch_size % g.num_generations:
        p.append(f"grpo.update_per_group: grpo.per_device_train_batch_size={g.per_device_train_batch_size} must hold "
                 f"whole groups of grpo.num_generations={g.num_generations}")
    for name, (allowed, why) in _REFUSED_EXTRA.items():
        if name in g.extra and g.extra[name] != allowed:
            p.append(f"grpo.update_per_group: grpo.extra.{name}={g.extra[name]!r} cannot be honoured ({why})")
    return p


def install(trainer, engine) -> None:
    """Hand the engine each optimiser step's prompts as the Trainer fetches them, and give TRL's
    token-normalised losses the whole step's token count."""
    import torch

    if trainer.accelerator.num_processes != 1:
        from salon.pool.errors import ConfigError

        raise ConfigError(["grpo.update_per_group runs in one process (the step's token count is this "
                           "process's): drop it, or run one process"], "salon train")
    fetch = trainer.get_batch_samples

    @functools.wraps(fetch)
    def fetching(epoch_iterator, num_batches, device):
        batches, count = fetch(epoch_iterator, num_batches, device)
        if trainer.model.training:
            engine.ahead = [[row["prompt"] for row in batch] for batch in batches]
        return batches, count

    score = trainer._generate_and_score_completions

    @functools.wraps(score)
    def scored(inputs):
        out = score(inputs)
        if trainer.model.training and engine.step_tokens is not None:
            # TRL divides by num_items_in_batch x accumulation steps / steps_per_generation(1)
            per_step = engine.step_tokens / trainer.current_gradient_accumulation_steps
            out["num_items_in_batch"] = out["num_items_in_batch"].new_tensor(per_step, dtype=torch.float32)
        return out

    trainer.get_batch_samples = fetching
    trainer._generate_and_score_completions = scored


def loss_tokens(completion_ids: list[list[int]], trainer) -> int:
    """The tokens TRL's loss counts in these completions: every completion token, but none of a
    truncated completion's with mask_truncated_completions (TRL's loss_mask, summed)."""
    if not trainer.mask_truncated_completions:
        return sum(len(ids) for ids in completion_ids)
    ends = {*trainer.eos_token_ids, trainer._tokenizer.pad_token_id}
    return sum(len(ids) for ids in completion_ids if ids and ids[-1] in ends)
