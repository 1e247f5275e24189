"""Win-rate scoring: each candidate's mean win probability over k references drawn once per group.

    draw = draw_references(refs, k=4, mix={"love": 0.5, "okay": 0.5}, seed=group_seed(run_seed, step, prompt))
    scored = judge_group(judge, completion_images, draw)
    scored = judge_groups(judge, [(images_a, draw_a), (images_b, draw_b)])   # several groups, one call
    scored.scores          # one float or None per image (None: the judge could not answer)
    scored.record()        # the draw, every verdict, the scores: log it with the rollouts

All completions of one prompt face the same draw, so their advantages reflect the paintings and
not the luck of the draw (the prior art saw one painting move from 0.25 to 0.625 on a redraw).
A score is None unless every verdict against the drawn references answered: a mean over a
different subset would be a different reward function.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Sequence

from PIL import Image

from salon.judges.references import ReferenceSet
from salon.judges.verdict import Judge, Reference, Verdict
from salon.pool.errors import ConfigError

DEFAULT_MIX = {"love": 0.5, "okay": 0.5}


@dataclass(frozen=True)
class ReferenceDraw:
    references: list[Reference]  # of the ReferenceSet drawn from, which names the release
    seed: int
    k: int
    mix: dict[str, float] | None

    def record(self) -> dict:
        return {"seed": self.seed, "k": self.k, "mix": self.mix,
                "references": [{"id": r.id, "tier": r.tier} for r in self.references]}


def group_seed(*parts) -> int:
    """A stable 63-bit seed from any values (run seed, step, prompt): same parts, same draw."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _counts(k: int, mix: dict[str, float], available: dict[str, int]) -> dict[str, int]:
    """k split by the mix (largest remainder), then topped up from tiers with spare references."""
    total = sum(mix.values())
    raw = {t: k * w / total for t, w in mix.items()}
    counts = {t: min(int(v), available.get(t, 0)) for t, v in raw.items()}
    for t in sorted(raw, key=lambda t: raw[t] - int(raw[t]), reverse=True):
        if sum(counts.values()) < k and counts[t] < available.get(t, 0):
            counts[t] += 1
    for t in mix:  # a tier that ran short: fill from the others, in mix order
        while sum(counts.values()) < k and counts[t] < available.get(t, 0):
            counts[t] += 1
    return counts


def draw_references(refs: ReferenceSet | Sequence[Reference], k: int = 4, mix: dict[str, float] | None = None,
                    seed: int = 0) -> ReferenceDraw:
    """A seeded draw of k references; `mix` weights tiers (default half love, half okay).

    Fewer than k references: all are used. References without a tier (a plain folder) are drawn
    uniformly. The same (references, k, mix, seed) always gives the same draw.
    """
    pool = sorted(refs.references if isinstance(refs, ReferenceSet) else refs, key=lambda r: r.id)
    problems = []
    if k < 1:
        problems.append(f"k={k}: draw at least one reference")
    if mix is not None and (not mix or any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0):
        problems.append(f"mix={mix}: give non-negative tier weights with a positive sum, e.g. love=0.5 okay=0.5")
    if problems:
        raise ConfigError(problems, "reference draw")
    rng = random.Random(seed)
    tiered = any(r.tier for r in pool)
    if len(pool) <= k:
        chosen = pool
    elif not tiered:
        chosen = rng.sample(pool, k)
    else:
        mix = dict(mix or DEFAULT_MIX)
        by_tier: dict[str, list[Reference]] = {}
        for r in pool:
            by_tier.setdefault(r.tier or "unknown", []).append(r)
        counts = _counts(k, mix, {t: len(v) for t, v in by_tier.items() if t in mix})
        chosen = [r for t in mix for r in rng.sample(by_tier.get(t, []), counts.get(t, 0))]
    return ReferenceDraw(list(chosen), seed, k, mix if tiered else None)


def win_rate(verdicts: Sequence[Verdict]) -> float | None:
    """Mean p over the verdicts; None when there are none or any is missing."""
    if not verdicts or any(v.p is None for v in verdicts):
        return None
    return sum(v.p for v in verdicts) / len(verdicts)


@dataclass
class GroupScore:
    scores: list[float | None]
    verdicts: list[list[Verdict]]
    draw: ReferenceDraw
    judge: str
    prompt_version: str
    reasons: list[str | None] = field(default_factory=list)

    def record(self) -> dict:
        return {"judge": self.judge, "prompt_version": self.prompt_version, "draw": self.draw.record(),
                "scores": self.scores, "reasons": self.reasons,
                "verdicts": [[v.to_dict() for v in row] for row in self.verdicts]}


def judge_group(judge: Judge, images: Sequence[Image.Image], draw: ReferenceDraw) -> GroupScore:
    """Score every image of one group against the same drawn references."""
    return judge_groups(judge, [(images, draw)])[0]


def judge_groups(judge: Judge, groups: Sequence[tuple[Sequence[Image.Image], ReferenceDraw]]) -> list[GroupScore]:
    """Several groups, each against its own draw: in one call where the judge takes several at once
    (`judge_many`, as the transformers judge does), else one call a group."""
    asked = [(list(images), draw) for images, draw in groups]
    many = getattr(judge, "judge_many", None)
    todo = [(images, draw.references) for images, draw in asked if images]
    answers = iter(many(todo) if many is not None else [judge.judge(images, refs) for images, refs in todo])
    out = []
    for images, draw in asked:
        verdicts = next(answers) if images else []
        scores, reasons = [], []
        for row in verdicts:
            scores.append(win_rate(row))
            missing = [v.reason for v in row if v.p is None]
            reasons.append(missing[0] if missing else (None if row else "no references"))
        out.append(GroupScore(scores, verdicts, draw, judge.name, judge.prompt_version, reasons))
    return out
