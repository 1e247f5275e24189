"""One training step under torch.profiler: what the card does, and when it waits (bench_train_gpu.py --profile).

    ranges = StepRanges()          # names the step's phases (record_function) where the bench times them
    ranges.install()
    ...                            # the step runs under torch.profiler.profile(activities=[CPU, CUDA])
    summary(prof)                  # {wall_s, card_busy_s, card_busy_share, phases, kernels_ms, kernels_ms_by_phase}

A phase is a CPU-side range (torch.profiler.record_function) around a part of TRL's step: generation
(`_generate`), the reward (salon's adapter: render wait and judging), judging alone (`Scorer.score`),
the rest of the rollout (TRL's log-prob passes), the micro-steps, and the update (the micro-steps less
the rollout: the loss's forward and backward, the optimiser). Per phase: its
wall time and how much of it the card was busy (the union of this process's kernel and copy intervals
inside the phase's windows; Chromium drawing on the card is another process and is not seen). The
card's idle time inside a phase is what the phase waits on the host for: Python, the CPU-side
scorers, the render workers. The generation's, the judge's and the update's own top kernels come
with it.
"""

from __future__ import annotations

import time

PHASES = ("salon/step", "salon/generation", "salon/reward", "salon/judge", "salon/rollout", "salon/micro_step")


class StepRanges:
    """Wraps TRL's and salon's step parts in record_function ranges named as PHASES."""

    def install(self) -> None:
        import torch
        from transformers import Trainer
        from trl import GRPOTrainer

        from salon.train.reward import RewardAdapter
        from salon.train.scoring import Scorer

        def ranged(cls, attr, name):
            real = getattr(cls, attr)

            def wrapped(*a, **kw):
                with torch.profiler.record_function(name):
                    return real(*a, **kw)
            setattr(cls, attr, wrapped)

        ranged(GRPOTrainer, "_generate", "salon/generation")
        ranged(GRPOTrainer, "_generate_and_score_completions", "salon/rollout")
        ranged(RewardAdapter, "__call__", "salon/reward")
        ranged(Scorer, "score", "salon/judge")
        ranged(Trainer, "training_step", "salon/micro_step")


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def _covered(busy: list[tuple[float, float]], windows: list[tuple[float, float]]) -> float:
    """Microseconds of `busy` (disjoint, sorted) inside `windows` (disjoint, sorted)."""
    total, j = 0.0, 0
    for start, end in windows:
        while j < len(busy) and busy[j][1] <= start:
            j += 1
        k = j
        while k < len(busy) and busy[k][0] < end:
            total += min(end, busy[k][1]) - max(start, busy[k][0])
            k += 1
    return total


def _minus(windows: list[tuple[float, float]], holes: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of `windows` outside `holes` (both disjoint and sorted)."""
    out = []
    for start, end in windows:
        for hole_start, hole_end in holes:
            if hole_end <= start or hole_start >= end:
                continue
            if hole_start > start:
                out.append((start, hole_start))
            start = max(start, hole_end)
        if start < end:
            out.append((start, end))
    return out


def _top_kernels(spans: list[tuple[float, float, str]], windows: list[tuple[float, float]], top: int) -> list[dict]:
    """The kernels that started inside `windows`, by card time (a kernel runs after its launch, so one
    launched at a phase's end can count for the next: the totals are per phase to within that)."""
    totals: dict[str, float] = {}
    for start, end, name in spans:
        if any(a <= start < b for a, b in windows):
            totals[name] = totals.get(name, 0.0) + (end - start)
    return [{"kernel": k[:160], "ms": round(v / 1e3, 2)} for k, v in sorted(totals.items(), key=lambda kv: -kv[1])[:top]]


def summary(prof, top: int = 20, top_by_phase: int = 8) -> dict:
    """The step's card time and idle time overall and per phase ("update": the micro-steps less the
    rollout), its top kernels by card time, and each phase's own."""
    import torch

    gpu, ranges, kernels, spans = [], {}, {}, []
    for e in prof.events():
        span = (e.time_range.start, e.time_range.end)
        if e.name in PHASES:  # a range shows on the CPU and, as an annotation, on the GPU's timeline: not card work
            if e.device_type == torch.autograd.DeviceType.CPU:
                ranges.setdefault(e.name, []).append(span)
        elif e.device_type == torch.autograd.DeviceType.CUDA:
            gpu.append(span)
            spans.append((*span, e.name))
            kernels[e.name] = kernels.get(e.name, 0.0) + (span[1] - span[0])
    busy = _union(gpu)
    step = _union(ranges.get("salon/step", [])) or ([(busy[0][0], busy[-1][1])] if busy else [])
    wall = sum(b - a for a, b in step)
    card = _covered(busy, step)
    windows_of = {name.removeprefix("salon/"): _union(ranges.get(name, [])) for name in PHASES[1:]}
    windows_of["update"] = _minus(windows_of["micro_step"], windows_of["rollout"])
    phases, by_phase = [], {}
    for name, windows in windows_of.items():
        if windows:
            length = sum(b - a for a, b in windows)
            inside = _covered(busy, windows)
            phases.append({"phase": name, "wall_s": round(length / 1e6, 3),
                           "card_busy_s": round(inside / 1e6, 3), "card_idle_s": round((length - inside) / 1e6, 3)})
            if name in ("generation", "judge", "update"):
                by_phase[name] = _top_kernels(spans, windows, top_by_phase)
    return {"wall_s": round(wall / 1e6, 3), "card_busy_s": round(card / 1e6, 3),
            "card_busy_share": round(card / wall, 4) if wall else None, "phases": phases,
            "kernels_ms": [{"kernel": k[:160], "ms": round(v / 1e3, 2)}
                           for k, v in sorted(kernels.items(), key=lambda kv: -kv[1])[:top]],
            "kernels_ms_by_phase": by_phase}


class ProfiledStep:
    """Profiles the optimiser step `step` (0-based, TRL's global_step at its start): `begin`/`end` are
    called from the bench's on_step_begin / on_step_end hooks."""

    def __init__(self, step: int):
        self.step, self.prof, self.result, self._range, self._t0 = step, None, None, None, 0.0

    def begin(self, global_step: int) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        if global_step != self.step:
            return
        self.prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self.prof.__enter__()
        self._range = torch.profiler.record_function("salon/step")
        self._range.__enter__()
        self._t0 = time.perf_counter()

    def end(self, global_step: int) -> None:
        import torch

        if self.prof is None or global_step - 1 != self.step:
            return
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self._range.__exit__(None, None, None)
        self.prof.__exit__(None, None, None)
        self.result = {"step": self.step + 1, "host_wall_s": round(time.perf_counter() - self._t0, 3),
                       **summary(self.prof)}
        self.prof = None
