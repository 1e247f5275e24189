"""The collapse alarm: the reward's mean or gate pass falling from its best window of steps.

    watch = FallWatch(AuditSettings(), run_dir="runs/x")   # run_dir: where checkpoint-N folders are
    alarms = watch.add(step, rows)       # archive rows of one reward call; the alarms that start now
    watch.falls()                        # {"reward_mean": 0.11, "gate_pass": 0.0}: best window minus the last
    watch.fallen()                       # the alarm names whose fall holds now
    falls_from_best(by_step, settings, run_dir)   # after the fact: every step's rows, in step order

Why: a learn_tiny run (issue 58, start seed 7) peaked at steps 13-16 (group mean 0.452, gate pass
0.97), then fell to 0.33 over its last eight steps as runtime errors came back, and no alarm rang:
the other alarms (salon.train.record.audit.alarms) compare the last window with the one before, and ring
only while the reward rises. This one compares the mean of the last `audit.fall_window` steps with
the best mean of as many consecutive steps so far, for the reward (over the rollouts that have one:
a missing reward is an infrastructure failure, not a bad painting) and for gate pass (over the
rollouts the gate judged: a render that was unavailable is left out). It rings once per fall, when
the fall passes its margin (`audit.reward_fall`, `audit.gate_pass_fall`) and two standard errors of
the two windows' difference (so the noise of a small window does not ring it), and rings again only
after the window has come back to within half the margin of its best.

Each alarm names the newest checkpoint-N saved at or before the best window's last step (the
policy that wrote the best rollouts, or the closest one before it) and what failed most in the
fallen window: each violation code's count of rollouts and the js error most rollouts threw. Live
(salon.train.record.recorder) and after the fact (`salon audit`) the same steps give the same alarms.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from salon.train.config import AuditSettings

# a fall raises an alarm past this many standard errors of the two windows' difference (here and in
# salon.train.record.audit's alarms): with 16 rollouts a step, gate pass alone moves by 6 % from one painting
NOISE_SE = 2.0

CHECKPOINT = re.compile(r"checkpoint-(\d+)")  # the folders TRL's Trainer saves (transformers' _re_checkpoint)
KEPT = ("step", "reward", "gate_passed", "render_unavailable", "violations", "js_errors")  # what a fallen window says


@dataclass
class StepTally:
    """One step's sums: enough for a window's means and their standard errors, without its rows."""

    step: int
    rewards: int = 0  # rollouts with a reward (a missing one is left out)
    reward_sum: float = 0.0
    reward_squares: float = 0.0
    gated: int = 0  # rollouts the gate judged (an unavailable render is left out)
    passed: int = 0

    def add(self, rows: list[dict]) -> None:
        for r in rows:
            if r.get("reward") is not None:
                self.rewards += 1
                self.reward_sum += r["reward"]
                self.reward_squares += r["reward"] ** 2
            if not r.get("render_unavailable"):
                self.gated += 1
                self.passed += bool(r.get("gate_passed"))


def reward_mean(tallies: list[StepTally]) -> tuple[float, float] | None:
    """The window's mean reward over its rollouts and its standard error; None when none has one."""
    n = sum(t.rewards for t in tallies)
    if not n:
        return None
    mean = sum(t.reward_sum for t in tallies) / n
    variance = max(0.0, sum(t.reward_squares for t in tallies) / n - mean ** 2) * n / max(1, n - 1)
    return mean, math.sqrt(variance / n)


def gate_pass(tallies: list[StepTally]) -> tuple[float, float] | None:
    """The window's share of gated rollouts that passed and its standard error; None when none was gated."""
    n = sum(t.gated for t in tallies)
    if not n:
        return None
    p = sum(t.passed for t in tallies) / n
    return p, math.sqrt(p * (1 - p) / n)


# measure -> (the alarm's name, the window's value and standard error, the setting holding its margin)
MEASURES = {"reward_mean": ("reward_falls_from_best", reward_mean, "reward_fall"),
            "gate_pass": ("gate_pass_falls_from_best", gate_pass, "gate_pass_fall")}


@dataclass
class Window:
    """A window of consecutive steps: a measure's value over it, that value's standard error, its steps."""

    value: float
    se: float
    steps: tuple[int, int]  # the first and the last


@dataclass
class FallWatch:
    """Follows one run's steps as they come (several calls of one step add up) and says when a
    measure's last window falls from its best."""

    settings: AuditSettings = field(default_factory=AuditSettings)
    run_dir: str | Path | None = None  # where the checkpoint-N folders are; None names none
    tallies: list[StepTally] = field(default_factory=list)
    recent: list[dict] = field(default_factory=list)  # rows of the last fall_window steps, slimmed to KEPT
    best: dict[str, Window] = field(default_factory=dict)  # each measure's best window so far
    last: dict[str, Window] = field(default_factory=dict)  # each measure's last window that had a value
    ringing: set[str] = field(default_factory=set)  # measures whose fall has rung and not recovered

    def add(self, step: int, rows: list[dict]) -> list[dict]:
        """Count one reward call's rows (of `step`); the alarms that start at this step."""
        if not self.tallies or self.tallies[-1].step != step:
            self.tallies.append(StepTally(step))
        self.tallies[-1].add(rows)
        w = self.settings.fall_window
        first = self.tallies[-w:][0].step
        self.recent = [r for r in self.recent if r["step"] >= first] + [{k: r.get(k) for k in KEPT} for r in rows]
        if len(self.tallies) < w:
            return []
        window = self.tallies[-w:]
        out = []
        for measure, (name, of, margin_key) in MEASURES.items():
            got = of(window)
            if got is None:
                continue
            now = self.last[measure] = Window(*got, (window[0].step, window[-1].step))
            best = self.best.get(measure)
            if best is None or now.value > best.value:
                self.best[measure] = best = now
            margin = getattr(self.settings, margin_key)
            fall, limit = best.value - now.value, max(margin, NOISE_SE * math.hypot(best.se, now.se))
            if fall > limit and measure not in self.ringing:
                self.ringing.add(measure)
                out.append(self.alarm(measure, name, best, now, limit))
            elif fall <= margin / 2:  # back near its best: the next fall is a new one (half: no ringing on the edge)
                self.ringing.discard(measure)
        return out

    def falls(self) -> dict[str, float]:
        """Each measure's best window minus its last one (0 at a new best), for the training log."""
        return {m: self.best[m].value - self.last[m].value for m in self.last}

    def fallen(self) -> list[str]:
        """The alarm names whose fall has rung and not recovered."""
        return [MEASURES[m][0] for m in sorted(self.ringing)]

    def alarm(self, measure: str, name: str, best: Window, now: Window, limit: float) -> dict:
        failures = what_failed(self.recent)
        checkpoint = checkpoint_at_or_before(self.run_dir, best.steps[1]) if self.run_dir is not None else None
        kept = (f"the last checkpoint before it: {checkpoint}" if checkpoint else
                f"no checkpoint saved at or before step {best.steps[1]}")
        message = (f"{measure} {best.value:.3f} over steps {best.steps[0]}..{best.steps[1]} -> {now.value:.3f} over "
                   f"steps {now.steps[0]}..{now.steps[1]} (fell {best.value - now.value:.3f}, past {limit:.3f}); "
                   f"{kept}; what failed most in steps {now.steps[0]}..{now.steps[1]}: {failures['summary']}")
        return {"name": name, "step": now.steps[1], "message": message, "measure": measure,
                "best": {"value": best.value, "steps": list(best.steps)},
                "fallen": {"value": now.value, "steps": list(now.steps)},
                "checkpoint": checkpoint, "failures": failures}


def what_failed(rows: list[dict]) -> dict:
    """The violation codes of `rows` by how many rollouts carry each (most first), the js error most
    rollouts threw, and a line that says both ("runtime_error in 25 of 80 rollouts, timeout in 3; ...")."""
    codes = Counter(code for r in rows for code in set(r.get("violations") or []))
    errors = Counter(message for r in rows for message in set(r.get("js_errors") or []))
    failed = sum(not r.get("gate_passed") and not r.get("render_unavailable") for r in rows)
    ranked = codes.most_common()
    summary = ", ".join(f"{code} in {n}" + (f" of {len(rows)} rollouts" if i == 0 else "")
                        for i, (code, n) in enumerate(ranked)) or f"no violation in {len(rows)} rollouts"
    top_error = None
    if errors:
        message, n = errors.most_common(1)[0]
        top_error = {"message": message, "rollouts": n}
        summary += f"; the most common js error ({n} rollouts): {message!r}"
    return {"rollouts": len(rows), "failed": failed, "violations": dict(ranked), "js_error": top_error,
            "summary": summary}


def checkpoint_at_or_before(run_dir: str | Path, step: int) -> str | None:
    """The newest checkpoint-N folder of `run_dir` with N <= step (the policy after N updates), or None."""
    run_dir = Path(run_dir)
    found = [(int(m[1]), p) for p in (run_dir.iterdir() if run_dir.is_dir() else [])
             if (m := CHECKPOINT.fullmatch(p.name)) and p.is_dir() and int(m[1]) <= step]
    return str(max(found)[1]) if found else None


def falls_from_best(by_step: dict[int, list[dict]], settings: AuditSettings, run_dir: str | Path | None) -> list[dict]:
    """The collapse alarms of a recorded run: its rows step by step (in step order), as the run saw them."""
    watch = FallWatch(settings, run_dir)
    return [a for step, rows in by_step.items() for a in watch.add(step, rows)]
