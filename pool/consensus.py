"""How several labelers' tiers become one tier, and how much the labelers agree.

Consensus rule: each labeler's *current* tier counts as one vote (their latest label row; an
undo removes their vote). The tier with the most votes wins; a tie goes to the lowest of the
tied tiers (nope < okay < love), because a reference the judge rewards must be clearly loved:
love+okay -> okay, love+nope -> nope, love+love+okay -> love, love+okay+nope -> nope.

Agreement is chance-corrected, over candidates with at least two current labels:
Cohen's kappa when the pool has exactly two labelers, Fleiss' kappa (the variable-raters form:
each candidate's agreement uses its own number of raters) when it has more. Kappa is None when
no candidate has two labels; when the labels agree perfectly and all fall in one tier (chance
agreement is 1, kappa 0/0) it is reported as 1.0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from salon.pool.models import TIERS

_RANK = {t: i for i, t in enumerate(TIERS)}  # 0 = love (best) ... 2 = nope


def consensus(tiers: list[str]) -> str | None:
    """The consensus of labelers' current tiers (see module docstring); None if no votes."""
    if not tiers:
        return None
    counts = Counter(tiers)
    best = max(counts.values())
    return max((t for t, n in counts.items() if n == best), key=_RANK.__getitem__)


@dataclass
class Agreement:
    method: str | None  # "cohen", "fleiss" or None (fewer than two labelers)
    kappa: float | None
    candidates: int  # candidates labelled by at least two people

    def to_dict(self) -> dict:
        return asdict(self)


def agreement(current: dict[str, dict[str, str]]) -> Agreement:
    """Agreement from {candidate_id: {labeler: tier}} (current labels only)."""
    labelers = {who for by in current.values() for who in by}
    shared = [by for by in current.values() if len(by) >= 2]
    if len(labelers) < 2:
        return Agreement(None, None, len(shared))
    if len(labelers) == 2:
        a, b = sorted(labelers)
        return Agreement("cohen", cohen_kappa([(by[a], by[b]) for by in shared]), len(shared))
    return Agreement("fleiss", fleiss_kappa([list(by.values()) for by in shared]), len(shared))


def _kappa(observed: float, chance: float) -> float:
    if chance >= 1.0:  # everyone used one tier for everything: perfect agreement
        return 1.0
    return (observed - chance) / (1.0 - chance)


def cohen_kappa(pairs: list[tuple[str, str]]) -> float | None:
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    chance = sum(first[t] * second[t] for t in TIERS) / (n * n)
    return _kappa(observed, chance)


def fleiss_kappa(items: list[list[str]]) -> float | None:
    """Fleiss' kappa for items rated by a varying number (>= 2) of raters."""
    items = [tiers for tiers in items if len(tiers) >= 2]
    if not items:
        return None
    per_item, totals, ratings = [], Counter(), 0
    for tiers in items:
        counts = Counter(tiers)
        n = len(tiers)
        per_item.append((sum(c * c for c in counts.values()) - n) / (n * (n - 1)))
        totals.update(counts)
        ratings += n
    observed = sum(per_item) / len(per_item)
    chance = sum((totals[t] / ratings) ** 2 for t in TIERS)
    return _kappa(observed, chance)
