"""What each optimiser step of a `salon train` run took, part by part, measured from outside the recipe:
the step's wall time, TRL's `_generate` (seconds, calls, rows, prompt and completion tokens), the rollout,
the cores each phase kept busy, the CUDA allocator's counts, and every salon/time/* value the reward logged.
Used by bench_train_gpu.py, which installs it in the process that runs one engine or variant:

    timings = Timings(profiled=None)
    timings.install()            # before the trainer is built: it wraps TRL's methods on the class
    ...train...
    timings.step[1], timings.reward_part(1, "judge_s")
"""

from __future__ import annotations

import time

from proctree import CpuWindows  # benchmarks/ is on sys.path when run as a script


def allocator_counts() -> dict[str, int]:
    """The CUDA caching allocator's running counts: alloc_retries (it freed its cache to satisfy a request:
    a synchronising cudaFree and cudaMalloc) and device_allocs (cudaMalloc calls); zeros on a CPU. A steady
    step that counts either churns the allocator between the phases' shapes."""
    import torch

    stats = torch.cuda.memory_stats() if torch.cuda.is_available() else {}
    return {"alloc_retries": stats.get("num_alloc_retries", 0), "device_allocs": stats.get("num_device_alloc", 0)}


class Timings:
    """Per optimiser step: its wall time, TRL's `_generate` (seconds, calls, rows, prompt and completion
    tokens) and its rollout."""

    def __init__(self, profiled=None):
        self.profiled = profiled  # a step_profile.ProfiledStep, or None
        self.step: dict[int, float] = {}
        self.generation: dict[int, float] = {}
        self.calls: dict[int, int] = {}
        self.rows: dict[int, int] = {}
        self.prompt_tokens: dict[int, int] = {}
        self.tokens: dict[int, int] = {}
        self.rollout: dict[int, float] = {}
        self.cores: dict[int, dict[str, float]] = {}  # step -> {PHASE_cores_KIND: cores busy on average}
        self.allocator: dict[int, dict[str, int]] = {}  # step -> the caching allocator's counts over it
        # step -> salon/time/* metric -> every value the reward logged in it (one a reward call: several a
        # step with grpo.update_per_group, where TRL's log would give their mean)
        self.reward_parts: dict[int, dict[str, list[float]]] = {}

    def reward_values(self, step: int, name: str) -> list[float]:
        """Every value of salon/time/NAME the step's reward calls logged, in call order."""
        return self.reward_parts.get(step, {}).get(f"salon/time/{name}", [])

    def reward_part(self, step: int, name: str) -> float:
        """A reward timing over the step: the slowest for *_max_s, the mean for *_mean_s, else the sum."""
        values = self.reward_values(step, name)
        if not values:
            return float("nan")
        if name.endswith("_max_s"):
            return max(values)
        return sum(values) / len(values) if name.endswith("_mean_s") else sum(values)

    def install(self) -> None:
        from transformers.trainer_callback import CallbackHandler
        from trl import GRPOTrainer

        timings, begun, counted = self, {}, {}
        real_begin, real_end = CallbackHandler.on_step_begin, CallbackHandler.on_step_end
        real_generate, real_rollout = GRPOTrainer._generate, GRPOTrainer._generate_and_score_completions
        real_rewards, real_log_metric = GRPOTrainer._calculate_rewards, GRPOTrainer._log_metric
        windows = CpuWindows()

        def on_step_begin(handler, args, state, control):
            if timings.profiled:
                timings.profiled.begin(state.global_step)
            begun[state.global_step] = time.perf_counter()
            counted[state.global_step] = allocator_counts()
            return real_begin(handler, args, state, control)

        def on_step_end(handler, args, state, control):
            timings.step[state.global_step - 1] = time.perf_counter() - begun[state.global_step - 1]
            before, after = counted[state.global_step - 1], allocator_counts()
            timings.allocator[state.global_step - 1] = {k: after[k] - before[k] for k in after}
            if timings.profiled:
                timings.profiled.end(state.global_step)
            return real_end(handler, args, state, control)

        def timed(real, seconds, count_tokens=False):
            def wrapped(trainer, *a, **kw):
                t0 = time.perf_counter()
                out = real(trainer, *a, **kw)
                step = trainer.state.global_step
                seconds[step] = seconds.get(step, 0.0) + time.perf_counter() - t0
                if count_tokens:  # out[0], out[1]: the prompt and completion ids
                    for counts, n in ((timings.calls, 1), (timings.rows, len(out[1])),
                                      (timings.prompt_tokens, sum(len(p) for p in out[0])),
                                      (timings.tokens, sum(len(c) for c in out[1]))):
                        counts[step] = counts.get(step, 0) + n
                return out
            return wrapped

        longest: dict[tuple[int, str], float] = {}  # (step, phase) -> its longest call's seconds

        def metered(real, phase):  # where the cores went while the phase ran: is it the CPU that holds it?
            def wrapped(trainer, *a, **kw):
                start, t0 = windows.start(), time.perf_counter()
                out = real(trainer, *a, **kw)
                step, seconds = trainer.state.global_step, time.perf_counter() - t0
                if seconds >= longest.get((step, phase), 0.0):  # several calls a step: the longest one's
                    longest[step, phase] = seconds
                    cores = timings.cores.setdefault(step, {})
                    for kind, n in windows.cores(start).items():
                        cores[f"{phase}_cores_{kind}"] = n
                return out
            return wrapped

        CallbackHandler.on_step_begin, CallbackHandler.on_step_end = on_step_begin, on_step_end
        GRPOTrainer._generate = timed(metered(real_generate, "generation"), self.generation, count_tokens=True)
        GRPOTrainer._calculate_rewards = metered(real_rewards, "reward")
        GRPOTrainer._generate_and_score_completions = timed(real_rollout, self.rollout)

        def log_metric(trainer, name, value):
            if name.startswith("salon/time/"):
                timings.reward_parts.setdefault(trainer.state.global_step, {}).setdefault(name, []).append(value)
            return real_log_metric(trainer, name, value)

        GRPOTrainer._log_metric = log_metric
