"""What `salon train` prints while it trains: TRL's progress bar and one short line per logging step,
on stderr, in place of transformers' ~60-key dict per step on stdout.

    step 2/3  reward 0.412 ±0.050  judge 0.518  gate_pass 50%  none 0  loss 0.0000  grad_norm 0.016  lr 1.0e-03  stale 1  iw 0.998  4.2 s
    trained 3 steps in 31.0 s

Every number is still logged in full (trainer_state.json, the trackers in grpo.report_to, the audit).
"""

from __future__ import annotations

import sys
import warnings

from transformers import TrainerCallback

# (log key, label, format): the ones a person watches; the rest are in trainer_state.json
LINE = [("reward", "reward", "{:.3f}"), ("reward_std", "±", "{:.3f}"), ("salon/judge/mean", "judge", "{:.3f}"),
        ("salon/absolute/mean", "absolute", "{:.3f}"), ("salon/gate_pass", "gate_pass", "{:.0%}"),
        ("salon/none", "none", "{:.0f}"), ("loss", "loss", "{:.4f}"), ("grad_norm", "grad_norm", "{:.3f}"),
        ("learning_rate", "lr", "{:.1e}"), ("kl", "kl", "{:.4f}"),
        # the overlapped step (grpo.max_staleness): the updates between the sampler and the step, and the mean
        # importance weight that corrects for them (near 1: the sampler was close to the policy)
        ("salon/overlap/staleness", "stale", "{:.0f}"), ("salon/overlap/importance_weight_mean", "iw", "{:.3f}")]
# keys whose zero says nothing: a staleness of 0 is a step generated when TRL asked for it
SILENT_AT_ZERO = {"salon/overlap/staleness"}


def step_line(step: int, max_steps: int, logs: dict) -> str:
    parts = [f"step {step}/{max_steps}"]
    for key, label, fmt in LINE:
        value = logs.get(key)
        if isinstance(value, (int, float)) and not (value == 0 and key in SILENT_AT_ZERO):
            text = fmt.format(value)
            parts.append(f"{label}{text}" if label == "±" else f"{label} {text}")
    if isinstance(logs.get("step_time"), (int, float)):
        parts.append(f"{logs['step_time']:.1f} s")
    return "  ".join(parts).replace("  ±", " ±")


class CompactProgress(TrainerCallback):
    def __init__(self):
        self.bar = None

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=state.max_steps, initial=state.global_step, file=sys.stderr,
                            dynamic_ncols=True, desc="train")

    def on_step_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.bar is None or not logs:
            return
        if "train_runtime" in logs:
            line = f"trained {state.global_step} steps in {logs['train_runtime']:.1f} s"
        else:
            line = step_line(state.global_step, state.max_steps, logs)
        self.bar.write(line, file=sys.stderr)

    def on_train_end(self, args, state, control, **kwargs):
        self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def close_progress(trainer) -> None:
    """End the bar's line where a run stops mid-step, so what it stopped with starts on a line of its own."""
    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, CompactProgress):
            callback.close()


def compact_output(trainer) -> None:
    """Swap transformers' progress printer for CompactProgress on `trainer`."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(CompactProgress())


def quiet_library_warnings() -> None:
    """Deprecations salon does not cause and cannot fix at their source. TRL 1.16 reads
    model.is_gradient_checkpointing, and calls gradient_checkpointing_disable / _enable, around every
    generation (trl/models/utils.py), and peft reads the property when it wraps the model
    (peft_model.py): names transformers 5 deprecated, so with grpo.gradient_checkpointing on, each
    step warned and buried the step lines. salon's own use is fixed where it was (activation_checkpointing)."""
    for name in ("is_gradient_checkpointing", "gradient_checkpointing_disable", "gradient_checkpointing_enable"):
        warnings.filterwarnings("ignore", message=f"`{name}` is deprecated", category=FutureWarning)
