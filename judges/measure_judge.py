"""A pairwise judge without a model: which of two paintings sits nearer the love tier, by image measures.

    judge = load_judge("measures")                                   # palette, layout and paint
    judge = load_judge("measures", measures=["palette"], temperature=0.05)
    verdicts = judge.judge(candidates, references)                   # the Judge protocol, both orders
    judge: {name: measures, model: null, references: DIR, k: 4}       # in a salon train config

Each painting is measured on a 96 x 96 copy (salon.pool.paint decides what is paint):

    palette   the colours of its paint: a 4 x 4 x 4 RGB histogram over the painted pixels;
              the distance of two paintings is 1 - their histograms' intersection (0..1)
    layout    where its paint lies: the paint fraction of each cell of a 4 x 4 grid; the
              distance is the mean absolute difference of the two grids (0..1)
    paint     how much is painted: the absolute difference of the paint fractions (0..1)

d(a, b) is the mean of the chosen measures' distances. Against a set of references R, a painting
x's distance to the love tier is q(x) = mean of d(x, r) over r in R. A pair (first, second) shown
with the references R is decided by P(first wins) = sigmoid((q(second) - q(first)) / temperature):
the painting nearer the tier wins, by a margin the temperature scales. When the candidate c meets
reference r, both are measured against the *other* references R - {r} (all of R when r is the only
one), so a reference is not helped by its distance to itself: a candidate as typical of the tier as
r scores 0.5 against it, a better fit more, a painting unlike every loved one near 0.

Both orders go through `verdict_from_orders` like any pairwise judge (the measure is symmetric, so
they agree: p(a beats b) + p(b beats a) = 1 exactly), and win rates come from salon.judges.winrate
as for the VLM judges. It needs no GPU and no weights, answers in milliseconds, and is what a
laptop run can learn from (`train/configs/learn_tiny.yaml`); as any fixed measure, a policy can
learn to satisfy it without painting better, so treat it as a proxy and audit what it rewards.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from PIL import Image

from salon.judges.verdict import Reference, Verdict, as_rgb, verdict_from_orders
from salon.pool import paint as pool_paint
from salon.pool.errors import ConfigError

MEASURES = ("palette", "layout", "paint")
SIDE = 96  # paintings are measured at this size: the measures are coarse, and this keeps a call in ms
GRID = 4
BINS = 4  # per RGB channel: 64 colour bins


def features(image: Image.Image) -> dict[str, np.ndarray | float]:
    """The three measures of one painting (see the module doc)."""
    rgb = np.asarray(as_rgb(image).resize((SIDE, SIDE), Image.BILINEAR))
    mask = pool_paint.paint_mask(rgb)
    painted = rgb[mask]
    hist = np.zeros(BINS ** 3)
    if len(painted):
        q = (painted.astype(np.int32) * BINS) // 256
        np.add.at(hist, (q[:, 0] * BINS + q[:, 1]) * BINS + q[:, 2], 1.0)
        hist /= hist.sum()
    cells = [np.array_split(a, GRID, axis=1) for a in np.array_split(mask, GRID, axis=0)]
    layout = np.array([[c.mean() for c in row] for row in cells])
    return {"palette": hist, "layout": layout, "paint": float(mask.mean())}


def distance(a: dict, b: dict, measures: Sequence[str]) -> float:
    """Mean over `measures` of their distances (each 0..1)."""
    parts = []
    for m in measures:
        if m == "palette":
            parts.append(1.0 - float(np.minimum(a["palette"], b["palette"]).sum()))
        elif m == "layout":
            parts.append(float(np.abs(a["layout"] - b["layout"]).mean()))
        else:
            parts.append(abs(a["paint"] - b["paint"]))
    return float(np.mean(parts))


class MeasurePairwiseJudge:
    """The pairwise image-measure judge (module doc); registered as `measures`."""

    def __init__(self, measures: Sequence[str] = MEASURES, temperature: float = 0.1, **unused):
        problems = [f"measures: {m} is unknown; use {', '.join(MEASURES)}" for m in measures if m not in MEASURES]
        if not measures:
            problems.append(f"measures is empty: name at least one of {', '.join(MEASURES)}")
        if not temperature > 0:
            problems.append(f"temperature={temperature}: must be positive")
        if unused:
            problems.append(f"unknown settings {sorted(unused)}: the measures judge takes measures and temperature")
        if problems:
            raise ConfigError(problems, "measures judge")
        self.measures, self.temperature = tuple(measures), float(temperature)
        self.name = "measures:" + "+".join(self.measures)
        self.prompt_version = f"measures-v1-t{self.temperature:g}"
        self._cache: dict[str, dict] = {}  # references are measured once per judge

    def _reference_features(self, r: Reference) -> dict:
        if r.id not in self._cache:
            self._cache[r.id] = features(r.load())
        return self._cache[r.id]

    def p_first(self, first: dict, second: dict, context: list[dict]) -> float:
        """P(first beats second): the one nearer the `context` paintings wins."""
        q1 = np.mean([distance(first, c, self.measures) for c in context])
        q2 = np.mean([distance(second, c, self.measures) for c in context])
        return 1.0 / (1.0 + math.exp(-(q2 - q1) / self.temperature))

    def judge(self, candidates: Sequence[Image.Image], references: Sequence[Reference]) -> list[list[Verdict]]:
        refs = [self._reference_features(r) for r in references]
        out = []
        for image in candidates:
            c = features(image)
            row = []
            for j, (ref, r) in enumerate(zip(references, refs)):
                context = [x for i, x in enumerate(refs) if i != j] or [r]
                row.append(verdict_from_orders(self.p_first(c, r, context), self.p_first(r, c, context),
                                               reference=ref.id, judge=self.name,
                                               prompt_version=self.prompt_version))
            out.append(row)
        return out
