"""The TRL reward adapter: render, gate and judge completions, one float or None each.

    reward = RewardAdapter(settings, judge=judge, references=refs, render=render_pool, archive=archive)
    GRPOTrainer(..., reward_funcs=[reward])          # TRL calls reward(prompts=..., completions=..., ...)
    reward(prompts=p, completions=c)                 # also callable by hand: list[float | None]

Per completion (DESIGN.md "Reward for TRL"): the sketch is extracted from the reply and checked
by the static gate at once; sketches that pass go to the render workers (other processes), all
of the batch concurrently, or already at generation time (`prefetch`). Each group (the
completions of one prompt) is judged as soon as its paintings exist, against one seeded
reference draw shared by the whole group, while other groups still render.

    gate fails                              -> settings.gate_penalty (an explicit score)
    render unavailable / a weighted scorer  -> None: missing, counted in its own metric, never 0
      could not answer (judge, absolute)
    otherwise                               -> sum(weight x component) over gate, length, judge,
                                               image judges, absolute scorer

TRL counts a None as 0 when another reward function answered, so this adapter is the only
reward function and decides the whole sample. Every component of every rollout goes to the
archive (`reward_*` columns) and, as means and stds, to TRL's metrics through `log_metric`,
with the audit statistics and alarms of salon.train.audit.
"""

from __future__ import annotations

import io
import logging
import math
import time
from concurrent.futures import FIRST_COMPLETED, wait
from datetime import datetime, timezone
from pathlib import Path

from PIL import Image

from salon.curate import gate
from salon.curate.extract import extract_code
from salon.curate.render import RenderResult
from salon.judges.winrate import draw_references, group_seed, judge_group
from salon.train import audit
from salon.train.config import AuditSettings, RewardSettings

log = logging.getLogger(__name__)

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"
IMAGE_SCALE = {"colourfulness": 100.0}  # Hasler-Suesstrunk: ~100 is extreme; components live in 0..1


def completion_text(completion) -> str:
    """TRL gives a string (standard) or a list of messages (conversational)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if isinstance(m, dict))


def prompt_key(prompt) -> str:
    return prompt if isinstance(prompt, str) else "\x1e".join(str(m.get("content")) for m in prompt)


def length_score(chars: int, s: RewardSettings) -> float:
    if chars < s.length_min_chars or chars > s.length_max_chars:
        return 0.0
    return min(1.0, (chars - s.length_min_chars) / (s.length_full_chars - s.length_min_chars))


class RewardAdapter:
    """A TRL reward function (see module doc). `__name__` is what TRL logs it as."""

    def __init__(self, settings: RewardSettings, *, judge, references, render, archive=None, k: int = 4,
                 mix: dict | None = None, seed: int = 0, run: str = "run", audit_settings: AuditSettings | None = None,
                 audit_dir: str | Path | None = None, process_index: int = 0, absolute=None):
        from salon.judges.registry import load_judge

        self.__name__ = "salon_reward"
        self.s, self.judge, self.refs, self.render, self.archive = settings, judge, references, render, archive
        self.k, self.mix, self.seed, self.run = k, mix, seed, run
        self.audit_settings = audit_settings or AuditSettings()
        self.audit_dir = Path(audit_dir) if audit_dir else None
        self.process_index = process_index
        self.image_judges = {name: load_judge(name) for name in settings.image_judges}
        self.absolute = absolute
        self.components = ["gate", "length", "judge", *settings.image_judges] + (["absolute"] if absolute else [])
        self.history: list[dict] = []  # per-step audit stats, for the alarms
        self._recent: list[dict] = []  # rollouts of the last audit window (no images), for correlations
        self._prefetched: dict = {}
        names = settings.smoke_example_files
        self._examples = ([EXAMPLES / n for n in names] if names else sorted(EXAMPLES.glob("*.js"))) \
            if settings.smoke_examples else []
        self.calls = 0

    @property
    def reward_columns(self) -> list[str]:
        return [f"reward_{c}" for c in self.components]

    # ---- planning: which code, which seed, for each completion --------------------------------
    def _plan(self, prompts, texts, step: int, rows=None, substitute: bool = True) -> list[dict]:
        """Code and seed per completion. A group is one dataset row (TRL repeats a row
        num_generations times); the render seed and the reference draw depend on the prompt only,
        so rows of one subject in a step share them."""
        plans, seen, sizes = [], {}, {}
        keys = [(None if rows is None else rows[i], prompt_key(p)) for i, p in enumerate(prompts)]
        for key in keys:
            sizes[key] = sizes.get(key, 0) + 1
        for key, text in zip(keys, texts):
            position = seen[key] = seen.get(key, -1) + 1
            plan = {"key": key, "prompt": key[1], "position": position, "text": text, "example": None,
                    "seed": group_seed(self.seed, "render", step, key[1]) & 0xFFFFFFFF,
                    "group": f"{step}-{group_seed(*key) % 16**8:08x}"}
            if substitute and self._examples and position < math.ceil(self.s.smoke_examples * sizes[key]):
                example = self._examples[group_seed(self.seed, step, *key, position) % len(self._examples)]
                plan["example"], plan["code"] = example.name, example.read_text()
            else:
                plan["code"] = extract_code(text)
            plans.append(plan)
        return plans

    def _start(self, plan: dict):
        """The static gate now; a render future for sketches that pass it."""
        static = gate.static_violations(plan["code"])
        if static:
            return RenderResult(ok=False, violations=static)
        fut = self._prefetched.pop((plan["code"], plan["seed"]), None)
        return fut if fut is not None else self.render.submit(plan["code"], plan["seed"])

    def prefetch(self, prompts, completions, step: int) -> None:
        """Start rendering the policy's sketches right after generation (TRL computes log-probs
        before it asks for rewards); the reward call picks the futures up by (code, seed)."""
        self._prefetched.clear()
        texts = [completion_text(c) for c in completions]
        for plan in self._plan(prompts, texts, step, substitute=False):
            if not gate.static_violations(plan["code"]):
                self._prefetched[(plan["code"], plan["seed"])] = self.render.submit(plan["code"], plan["seed"])

    # ---- the TRL reward function ---------------------------------------------------------------
    def __call__(self, prompts, completions, trainer_state=None, log_metric=None, **columns) -> list[float | None]:
        t0 = time.perf_counter()
        step = trainer_state.global_step if trainer_state is not None else self.calls
        self.calls += 1
        texts = [completion_text(c) for c in completions]
        plans = self._plan(prompts, texts, step, columns.get("row"))
        started = [self._start(p) for p in plans]
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(plans):
            groups.setdefault(p["key"], []).append(i)
        rows: list[dict] = [{} for _ in plans]
        timing = {"render_wait_s": 0.0, "judge_s": 0.0}
        pending = dict(groups)
        while pending:
            futures = [started[i] for idx in pending.values() for i in idx if not isinstance(started[i], RenderResult)]
            tw = time.perf_counter()
            if futures and not any(f.done() for f in futures):
                wait(futures, return_when=FIRST_COMPLETED)
            timing["render_wait_s"] += time.perf_counter() - tw
            for key in [k for k, idx in pending.items() if all(_ready(started[i]) for i in idx)]:
                idx = pending.pop(key)
                tj = time.perf_counter()
                self._score_group([plans[i] for i in idx], [_result(started[i]) for i in idx], step,
                                  [rows[i] for i in idx], columns, idx)
                timing["judge_s"] += time.perf_counter() - tj
        rewards = [row["reward"] for row in rows]
        self._record(rows, step, log_metric, timing, time.perf_counter() - t0)
        return rewards

    def _score_group(self, plans, results, step, rows, columns, idx) -> None:
        images = [_image(r) for r in results]
        passed = [i for i, r in enumerate(results) if r.ok and images[i] is not None]
        draw = draw_references(self.refs, self.k, self.mix, seed=group_seed(self.seed, step, plans[0]["prompt"]))
        judged: list = [None] * len(plans)
        reasons: list = [None] * len(plans)
        if passed:
            try:
                scored = judge_group(self.judge, [images[i] for i in passed], draw)
                for j, i in enumerate(passed):
                    judged[i], reasons[i] = scored.scores[j], scored.reasons[j]
            except Exception as e:  # a judge that raises is down: missing, never a bad painting
                log.warning("judge failed on a group: %s", e)
                for i in passed:
                    reasons[i] = f"judge failed: {type(e).__name__}: {e}"
        extra = {name: _safe_scores(j, [images[i] for i in passed]) for name, j in self.image_judges.items()}
        if self.absolute is not None:
            extra["absolute"] = _safe_scores(self.absolute, [images[i] for i in passed])
        present = [i for i, im in enumerate(images) if im is not None]
        coverage = dict(zip(present, _safe_scores(_Coverage(), [images[i] for i in present])))
        at = {i: j for j, i in enumerate(passed)}
        for i, (plan, res, row) in enumerate(zip(plans, results, rows)):
            comp = {c: None for c in self.components}
            comp["gate"] = 1.0 if i in at else 0.0
            comp["length"] = length_score(len(plan["text"]), self.s)
            missing = []
            if res.unavailable:
                missing.append("render")
            if i in at:
                comp["judge"] = judged[i]
                for name, values in extra.items():
                    v = values[at[i]]
                    comp[name] = None if v is None else min(1.0, v / IMAGE_SCALE.get(name, 1.0))
                missing += [c for c in self.components if comp[c] is None and self.s.weight(c) > 0]
            if missing:
                total = None
            elif i not in at:
                total = self.s.gate_penalty
            else:
                total = sum(self.s.weight(c) * comp[c] for c in self.components if self.s.weight(c) > 0)
            row.update(self._row(plan, res, comp, total, missing, draw, step, idx[i], columns,
                                 reasons[i] if i in at else ("not judged: gate failed" if not res.unavailable
                                                             else "not judged: render unavailable"),
                                 coverage.get(i), images[i]))

    def _row(self, plan, res, comp, total, missing, draw, step, index, columns, reason, coverage, image) -> dict:
        subject = columns.get("subject", [None] * (index + 1))[index]
        row_id = columns.get("row", [None] * (index + 1))[index]
        return {
            "run": self.run, "step": step, "checkpoint": f"checkpoint-{step}" if step else "base",
            "group": plan["group"], "row": row_id, "position": plan["position"], "process": self.process_index,
            "subject": subject, "prompt": plan["prompt"], "completion": plan["text"],
            "completion_chars": len(plan["text"]), "code": plan["code"], "seed": plan["seed"], "image": res.png,
            "gate_passed": comp["gate"] == 1.0, "violations": list(res.violations), "js_errors": list(res.js_errors),
            "render_ms": res.render_ms, "render_unavailable": bool(res.unavailable),
            "paint_fraction": res.paint_fraction, "coverage": coverage, "reward": total, "missing": missing,
            "judge_reason": reason, "references": [r.id for r in draw.references],
            "reference_tiers": [r.tier or "" for r in draw.references], "draw_seed": draw.seed,
            "pool_release": self.refs.release, "judge": self.judge.name,
            "judge_version": getattr(self.judge, "prompt_version", None), "substituted_example": plan["example"],
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            **{f"reward_{c}": comp[c] for c in self.components}, "_pil": image,
        }

    # ---- archive, metrics, audit ---------------------------------------------------------------
    def _record(self, rows, step, log_metric, timing, total_s) -> None:
        images = [row.pop("_pil") for row in rows]
        if self.archive is not None:
            self.archive.write(rows, step)
        stats = audit.batch_stats(rows, images, self.components)
        self._recent = [r for r in self._recent if r["step"] > step - self.audit_settings.window] + rows
        checks = audit.window_checks(self._recent, self.components, self.audit_settings)
        stats.update({f"corr/{k}": v for k, v in checks["correlation"].items()})
        stats.update({f"alarm/correlated/{k}": 1.0 for k in checks["correlated"]})
        stats.update({f"alarm/saturated/{c}": 1.0 for c in checks["saturated"]})
        stats.update({f"time/{k}": v for k, v in timing.items()}, **{"time/reward_s": total_s})
        self._remember(step, stats)
        alarms = audit.alarms(self.history, self.audit_settings)
        for alarm in alarms:
            if alarm["step"] == step:
                log.warning("audit alarm at step %d: %s", step, alarm["message"])
        stats.update({f"alarm/{a['name']}": 1.0 for a in alarms if a["step"] == step})
        if log_metric is not None:
            for name, value in stats.items():
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    log_metric(f"salon/{name}", float(value))
        every = self.audit_settings.grid_every
        if self.audit_dir is not None and every and step % every == 0 and self.process_index == 0:
            audit.save_grid(images, rows, self.audit_dir / "grids" / f"step-{step:06d}.png")

    def _remember(self, step: int, stats: dict) -> None:
        if self.history and self.history[-1]["step"] == step:
            self.history[-1] = {**self.history[-1], **stats}  # another call of the same step
        else:
            self.history.append({"step": step, **stats})


class _Coverage:
    def score(self, images):
        from salon.judges.image_judges import composition

        return [composition(im).coverage for im in images]


def _ready(x) -> bool:
    return isinstance(x, RenderResult) or x.done()


def _result(x) -> RenderResult:
    return x if isinstance(x, RenderResult) else x.result()


def _image(result: RenderResult):
    if not result.png:
        return None
    try:
        return Image.open(io.BytesIO(result.png)).convert("RGB")
    except OSError:
        return None


def _safe_scores(judge, images) -> list:
    if not images:
        return []
    try:
        values = list(judge.score(images))
        return values if len(values) == len(images) else [None] * len(images)
    except Exception as e:  # a scorer that raises could not answer: missing
        log.warning("image judge %s failed: %s", getattr(judge, "name", judge), e)
        return [None] * len(images)


def prefetching(generate, adapter: RewardAdapter, trainer):
    """Wrap a GRPOTrainer's `_generate` so rendering starts the moment completions exist."""
    def wrapped(prompts):
        out = generate(prompts)
        adapter.prefetch(prompts, out[3], trainer.state.global_step)  # out[3]: the decoded completions
        return out

    return wrapped
