"""What `salon train` says when a step runs out of card memory: the part of the step that asked, what
the card held, and the settings that lower that part, in place of a CUDA traceback that may come after
minutes of compiling.

    with out_of_memory_explained(cfg, trainer, judge):
        trainer.train(resume_from_checkpoint=checkpoint)

The part is read from the modules the error passed through: salon's decode loop or transformers'
`generate` (generation), TRL's log-probabilities before the update, or the loss and autograd (the update).
"""

from __future__ import annotations

import contextlib
import traceback
from pathlib import Path

import torch

from salon.pool.errors import CardMemoryError
from salon.train.checkpoints import latest_checkpoint
from salon.train.engine.decode import GIB

GENERATION_MODULES = ("salon.train.engine.", "transformers.generation")  # salon's engine, or generate's
UPDATE_FUNCTIONS = ("compute_loss", "_compute_loss", "backward")


def part_of_step(error: BaseException) -> str:
    """'generation', 'log-probabilities', 'update' or 'step': where in a GRPO step `error` was raised."""
    frames = [(frame.f_globals.get("__name__", ""), frame.f_code.co_name)
              for frame, _ in traceback.walk_tb(error.__traceback__)]
    if any(module.startswith(GENERATION_MODULES) or (module.startswith("trl.") and name == "_generate")
           for module, name in frames):
        return "generation"
    if any(name in UPDATE_FUNCTIONS or module.startswith("torch.autograd") for module, name in frames):
        return "update"
    if any(name == "_get_per_token_logps_and_entropies" for _, name in frames):
        return "log-probabilities"
    return "step"


def advice(cfg, part: str, judge_bytes: int = 0) -> list[str]:
    """The settings that lower what `part` holds, for this config (figures: results/ on an H200)."""
    g = cfg.grpo
    tips = []
    if part in ("generation", "step"):
        per_generation = g.steps_per_generation or g.gradient_accumulation_steps
        rows = g.per_device_train_batch_size * per_generation
        if g.generation == "compiled" and g.generation_waves == 1 and rows >= 2 * g.num_generations:
            tips.append(f"grpo.generation_waves=2: the {rows} completions generated in two waves of whole groups, "
                        "each with half the KV cache (on an H200 at 64 x 2,048 tokens: 91 GiB at the peak "
                        "against 103)")
        elif (g.generation != "compiled" and per_generation % 2 == 0 and not g.update_per_group
              and (rows // 2) % g.num_generations == 0):
            tips.append(f"grpo.steps_per_generation={per_generation // 2}: the step's {rows} completions generated "
                        f"in two batches of {rows // 2}")
        tips.append(f"a shorter grpo.max_completion_length (now {g.max_completion_length}): the KV cache grows "
                    "with it")
    if part in ("update", "step"):
        if not g.gradient_checkpointing:
            tips.append("grpo.gradient_checkpointing=true: activations recomputed in the backward pass, not kept "
                        "(on an H200 at 8 x 2,048 tokens: 32 GiB at the peak against 83 with it off and the "
                        "update compiled)")
        elif g.gradient_checkpointing_layers < 1.0:
            tips.append(f"grpo.gradient_checkpointing_layers=1.0 (now {g.gradient_checkpointing_layers}): every "
                        "layer recomputed, none kept")
    if part in ("update", "log-probabilities", "step"):
        b, a = g.per_device_train_batch_size, g.gradient_accumulation_steps
        if b % 2 == 0 and g.steps_per_generation is None and not g.update_per_group:  # the same generation batch
            tips.append(f"grpo.per_device_train_batch_size={b // 2} grpo.gradient_accumulation_steps={a * 2}: the "
                        "same optimiser step in micro-steps of half as many completions")
    if judge_bytes:
        tips.append(f"judge.kwargs.device=cuda:1: the judge's {judge_bytes / GIB:.1f} GiB of weights on a card "
                    "of their own")
    return tips


def message(cfg, part: str, error: BaseException, step: int, judge_bytes: int = 0) -> str:
    where = {"generation": "generating the completions", "log-probabilities":
             "computing the completions' log-probabilities", "update": "the update (the loss and its backward "
             "pass)", "step": "a training step"}[part]
    lines = [f"the card ran out of memory in {where}, step {step}: {str(error).splitlines()[0][:200]}"]
    if torch.cuda.is_available():
        card = torch.cuda.current_device()
        total = torch.cuda.get_device_properties(card).total_memory
        lines.append(f"{torch.cuda.get_device_name(card)}: {total / GIB:.1f} GiB, {torch.cuda.max_memory_allocated(card) / GIB:.1f} "
                     "GiB allocated at the peak so far")
    lines.append("settings that lower it (--set KEY=VALUE):")
    lines += [f"  - {tip}" for tip in advice(cfg, part, judge_bytes)]
    kept = latest_checkpoint(Path(cfg.output_dir))
    lines.append(f"the run goes on from {Path(kept).name} with --set resume=latest" if kept else
                 "no checkpoint was written yet: the run starts again from step 0")
    return "\n".join(lines)


def judge_bytes_on(judge, device) -> int:
    """The bytes of the judge's weights on `device` (0: another card, a server, or no weights)."""
    model = getattr(judge, "model", None)
    if model is None or not hasattr(model, "parameters") or device is None:
        return 0
    return sum(p.numel() * p.element_size() for p in model.parameters() if str(p.device) == str(device))


@contextlib.contextmanager
def out_of_memory_explained(cfg, trainer, judge=None, device=None):
    """Turn a CUDA out-of-memory error inside the block into a CardMemoryError that says what to change."""
    try:
        yield
    except torch.cuda.OutOfMemoryError as e:  # torch.OutOfMemoryError from torch 2.5 on: the same class
        raise CardMemoryError(message(cfg, part_of_step(e), e, trainer.state.global_step + 1,
                                      judge_bytes_on(judge, device))) from e
