"""Scoring rollouts: gate, length, pairwise judge, image judges, the total.

    scorer = Scorer(settings, judge=judge, references=refs, k=4, mix={"love": 0.5, "okay": 0.5})
    scored = scorer.score(samples, results, step)    # one Scored per sample, same order
    scored = scorer.score(samples, results, step, prepared)  # each painting's prepare(png), done earlier

The completions of one prompt (a group) are judged against one seeded reference draw, whichever
batch each is judged in, so their advantages reflect the paintings and not the draw; a batch may
hold paintings of several groups, each against its own draw, in one call to the judge. The rules,
per sample:

    render unavailable, or the PNG of a painting   -> total None: missing, listed in `missing`,
      that passed cannot be decoded, or a            never 0 (an infrastructure failure says
      weighted scorer could not answer               nothing about the painting)
    gate failed (static or in the browser)         -> settings.gate_penalty, an explicit score
    otherwise                                      -> sum(weight x component) over gate, length,
                                                      judge, image judges, absolute scorer

Every component is kept (None where it was not computed or its scorer failed), weighted or not.
"""

from __future__ import annotations

import io
import logging
import time
from dataclasses import dataclass, field

from PIL import Image

from salon.curate.sandbox.render import RenderResult
from salon.judges.image_judges import Composition, CompositionJudge, PaintFractionJudge, composition
from salon.judges.references import ReferenceSet
from salon.judges.verdict import Rating
from salon.judges.winrate import ReferenceDraw, draw_references, group_seed, judge_groups
from salon.train.config import RewardSettings
from salon.train.rollout import Sample

log = logging.getLogger(__name__)

IMAGE_SCALE = {"colourfulness": 100.0}  # Hasler-Suesstrunk: ~100 is extreme; components live in 0..1


def length_score(chars: int, s: RewardSettings) -> float:
    if chars < s.length_min_chars or chars > s.length_max_chars:
        return 0.0
    return min(1.0, (chars - s.length_min_chars) / (s.length_full_chars - s.length_min_chars))


def decode(png: bytes | None) -> Image.Image | None:
    if not png:
        return None
    try:
        return Image.open(io.BytesIO(png)).convert("RGB")
    except (OSError, ValueError):  # truncated or not a PNG at all
        return None


@dataclass
class Scored:
    """The scores of one sample."""

    components: dict[str, float | None]
    total: float | None
    missing: list[str]
    reason: str | None  # why the judge gave no score (or why it was not asked)
    draw: ReferenceDraw
    painting: Image.Image | None
    coverage: float | None
    absolute: Rating | None = None  # the absolute scorer's answer (HPSv3: mu, log sigma), or why none


@dataclass
class Scorer:
    settings: RewardSettings
    judge: object  # a salon.judges Judge
    references: ReferenceSet
    k: int = 4
    mix: dict | None = None
    seed: int = 0
    absolute: object | None = None  # an ImageJudge scoring 0..1 (weights.absolute); a RatingJudge keeps mu too
    image_judges: dict = field(init=False)
    last_pairwise_s: float = field(init=False, default=0.0)
    _threads: object = field(init=False, repr=False)

    def __post_init__(self):
        from concurrent.futures import ThreadPoolExecutor

        from salon.judges.registry import load_judge

        self.image_judges = {name: load_judge(name) for name in self.settings.image_judges}
        self._threads = ThreadPoolExecutor(max_workers=len(self.image_judges) + 1, thread_name_prefix="salon-image")

    @property
    def components(self) -> list[str]:
        return ["gate", "length", "judge", *self.image_judges] + (["absolute"] if self.absolute else [])

    def score(self, samples: list[Sample], results: list[RenderResult], step: int,
              prepared: list[tuple] | None = None) -> list[Scored]:
        """Samples of one group or of several, each judged against its own group's draw, all in one
        call to the judge. `prepared`: each result's `prepare(png)`, where the caller made them while
        others rendered."""
        prepared = [prepare(r.png) for r in results] if prepared is None else prepared
        images = [image for image, _ in prepared]
        passed = [i for i, r in enumerate(results) if r.ok and images[i] is not None]
        draws = {p: draw_references(self.references, self.k, self.mix, seed=group_seed(self.seed, step, p))
                 for p in dict.fromkeys(s.prompt for s in samples)}
        # the other image judges are numpy on the CPU: they run in threads while the pairwise judge keeps
        # the GPU busy, instead of after it
        measured = {name: self._threads.submit(safe_scores, j, [images[i] for i in passed])
                    for name, j in self.image_judges.items() if type(j) not in FROM_COMPOSITION}
        t0 = time.perf_counter()
        judged, reasons = judge_safely(self.judge, [images[i] for i in passed],
                                       [draws[samples[i].prompt] for i in passed])
        self.last_pairwise_s = time.perf_counter() - t0  # the pairwise judge alone (the reward logs it beside judge_s)
        composed = [c for _, c in prepared]
        coverage = {i: c.coverage for i, c in enumerate(composed) if c is not None}
        extra = {}
        for name, j in self.image_judges.items():
            field_of = FROM_COMPOSITION.get(type(j))
            extra[name] = (measured[name].result() if field_of is None
                           else [None if composed[i] is None else field_of(composed[i]) for i in passed])
        rated = []
        if self.absolute is not None:
            rated = safe_ratings(self.absolute, [images[i] for i in passed])
            extra["absolute"] = [r.score for r in rated]
        at = {i: j for j, i in enumerate(passed)}
        out = []
        for i, (sample, res) in enumerate(zip(samples, results)):
            comp = {c: None for c in self.components}
            comp["gate"] = 1.0 if i in at else 0.0
            comp["length"] = length_score(len(sample.completion), self.settings)
            missing = []
            if res.unavailable:
                missing.append("render")
                reason = "not judged: render unavailable"
            elif res.ok and images[i] is None:
                missing.append("image")  # it passed the gate: the painting exists, we failed to read it
                reason = "not judged: the rendered PNG could not be decoded"
            elif i not in at:
                reason = "not judged: gate failed"
            else:
                j = at[i]
                comp["judge"], reason = judged[j], reasons[j]
                for name, values in extra.items():
                    v = values[j]
                    comp[name] = None if v is None else min(1.0, v / IMAGE_SCALE.get(name, 1.0))
                missing += [c for c in self.components if comp[c] is None and self.settings.weight(c) > 0]
            out.append(Scored(comp, self._total(comp, missing, passed=i in at), missing, reason, draws[sample.prompt],
                              images[i], coverage.get(i), rated[at[i]] if i in at and rated else None))
        return out

    def _total(self, comp: dict, missing: list[str], passed: bool) -> float | None:
        if missing:
            return None
        if not passed:
            return self.settings.gate_penalty
        return sum(self.settings.weight(c) * comp[c] for c in self.components if self.settings.weight(c) > 0)


# built-in image judges whose score is a field of salon.judges.image_judges.composition
FROM_COMPOSITION = {CompositionJudge: lambda c: c.coverage, PaintFractionJudge: lambda c: c.paint_fraction}


def prepare(png: bytes | None) -> tuple[Image.Image | None, Composition | None]:
    """A painting's PNG decoded (None: none, or not a PNG) and its composition() (None where there is no
    image or it raised: a missing measure, never a bad painting). The coverage and the built-in judges
    that read the paint mask come from this one composition (computed three times, they took about as
    long as the other image judges together, on CPUs the renderer keeps busy)."""
    image = decode(png)
    if image is None:
        return None, None
    try:
        return image, composition(image)
    except Exception as e:
        log.warning("composition failed: %s", e)
        return image, None


def judge_safely(judge, images, draws) -> tuple[list, list]:
    """A pairwise judge's scores of `images`, each against its own draw (`draws`, one an image; images of
    one draw are one group), and their reasons; None for each when it raised."""
    if not images:
        return [], []
    groups: dict[int, list[int]] = {}
    for i, draw in enumerate(draws):
        groups.setdefault(id(draw), []).append(i)
    try:
        scored = judge_groups(judge, [([images[i] for i in idx], draws[idx[0]]) for idx in groups.values()])
    except Exception as e:  # a judge that raises is down: missing, never a bad painting
        log.warning("judge %s failed on a batch: %s", getattr(judge, "name", judge), e)
        return [None] * len(images), [f"judge failed: {type(e).__name__}: {e}"] * len(images)
    scores, reasons = [None] * len(images), [None] * len(images)
    for idx, group in zip(groups.values(), scored):
        for i, score, reason in zip(idx, group.scores, group.reasons):
            scores[i], reasons[i] = score, reason
    return scores, reasons


def safe_ratings(judge, images, prompts: list[str] | None = None) -> list[Rating]:
    """The scorer's Ratings: a reward model's `rate` (with `prompts` when given), an image judge's scores;
    None-scored with the reason where it failed or gave no score."""
    if not images:
        return []
    try:
        if hasattr(judge, "rate"):
            ratings = list(judge.rate(images) if prompts is None else judge.rate(images, prompts))
        else:
            ratings = [Rating(v, reason="no score given" if v is None else None) for v in judge.score(images)]
        if len(ratings) == len(images):
            return ratings
        reason = f"{len(ratings)} ratings for {len(images)} images"
    except Exception as e:  # a scorer that raises could not answer: missing
        reason = f"{type(e).__name__}: {e}"
    log.warning("scorer %s failed: %s", getattr(judge, "name", judge), reason)
    return [Rating(None, reason=reason)] * len(images)


def safe_scores(judge, images) -> list:
    """An ImageJudge's scores of `images`, or None for each where it raised or answered short (missing)."""
    if not images:
        return []
    try:
        values = list(judge.score(images))
        return values if len(values) == len(images) else [None] * len(images)
    except Exception as e:  # a scorer that raises could not answer: missing
        log.warning("image judge %s failed: %s", getattr(judge, "name", judge), e)
        return [None] * len(images)
