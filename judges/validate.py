"""Validate a pairwise judge against people and against reward hacks.

    report = validate(judge, labelled, choices, ValidationConfig(max_pairs=64))
    print(report.text());  report.to_dict()
    labelled, choices = pool_labels("path/to/pool")     # from the pool store

`labelled` is [(id, image or path, tier)] (paths load only when sampled), `choices` is [(left_id, right_id, winner)] with winner
"left"/"right"/"tie" (the app's compare view). Measured:

  love_vs_nope, love_vs_okay   share of pairs where the judge prefers the better tier (p > 0.5)
  human_agreement              share of people's non-tie pairwise choices the judge agrees with
  position_consistency         share of comparisons whose two presentation orders agree, and the
                               first-shown pick rate (0.5 = no position bias)
  adversarial                  per hack (adversarial.py): how often it beats a love painting

Verdicts the judge could not give are counted as `unanswered`, never as losses.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from PIL import Image

from salon.judges.adversarial import adversarial_suite
from salon.judges.verdict import Judge, Reference, Verdict
from salon.pool.errors import ConfigError, JudgeError


@dataclass
class ValidationConfig:
    max_pairs: int = 64  # per tier comparison (love x nope, love x okay)
    max_choices: int = 200  # human pairwise choices judged
    max_love_refs: int = 8  # love paintings each hack is compared with
    per_hack: int = 2  # images per adversarial hack
    seed: int = 0

    def __post_init__(self):
        problems = [f"{k}={v}: must be at least 1" for k, v in asdict(self).items() if k != "seed" and v < 1]
        if problems:
            raise ConfigError(problems, "ValidationConfig")


@dataclass
class Rate:
    """How often the judge chose as expected: `rate` over `n` answered comparisons."""

    rate: float | None
    mean_p: float | None
    n: int
    unanswered: int = 0


@dataclass
class ValidationReport:
    judge: str
    prompt_version: str
    love_vs_nope: Rate
    love_vs_okay: Rate
    human_agreement: Rate
    position_consistency: float | None
    first_pick_rate: float | None
    adversarial: dict[str, Rate] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        def pct(r: Rate) -> str:
            if r.rate is None:
                return f"n/a ({r.unanswered} unanswered)" if r.unanswered else "n/a (no pairs)"
            extra = f", {r.unanswered} unanswered" if r.unanswered else ""
            return f"{r.rate:6.1%}  (mean p {r.mean_p:.3f}, {r.n} pairs{extra})"

        def plain(x):
            return "n/a" if x is None else f"{x:6.1%}"

        lines = [f"judge {self.judge} (prompt {self.prompt_version})",
                 f"pool: " + ", ".join(f"{v} {k}" for k, v in self.counts.items()),
                 "",
                 "agreement with people (higher is better)",
                 f"  love beats nope        {pct(self.love_vs_nope)}",
                 f"  love beats okay        {pct(self.love_vs_okay)}",
                 f"  human pairwise choices {pct(self.human_agreement)}",
                 "",
                 "position bias",
                 f"  both orders agree      {plain(self.position_consistency)}",
                 f"  first shown picked     {plain(self.first_pick_rate)}   (50% = unbiased)",
                 "",
                 "reward hacks: how often each beats a love painting (lower is better)"]
        lines += [f"  {name:22s} {pct(r)}" for name, r in self.adversarial.items()]
        return "\n".join(lines)


def _rate(verdicts: Sequence[Verdict], expect_win: Sequence[bool]) -> Rate:
    answered = [(v, e) for v, e in zip(verdicts, expect_win) if v.p is not None]
    if not answered:
        return Rate(None, None, 0, len(verdicts))
    hits = sum((1.0 if (v.p > 0.5) == e else 0.0) if v.p != 0.5 else 0.5 for v, e in answered)
    mean_p = sum(v.p if e else 1.0 - v.p for v, e in answered) / len(answered)
    return Rate(hits / len(answered), mean_p, len(answered), len(verdicts) - len(answered))


def _cross(judge: Judge, better: list, worse: list, rng: random.Random, max_pairs: int) -> list[Verdict]:
    """Judge a sample of better x worse pairs (better as candidate) in one call."""
    if not better or not worse:
        return []
    a = max(1, min(len(better), int(max_pairs ** 0.5)))
    b = max(1, min(len(worse), max_pairs // a))
    cands = rng.sample(better, a)
    refs = [Reference.from_image(_image(im), id=i) for i, im, _ in rng.sample(worse, b)]
    return [v for row in judge.judge([_image(im) for _, im, _ in cands], refs) for v in row]


def _image(x) -> Image.Image:
    if isinstance(x, Image.Image):
        return x
    with Image.open(x) as im:
        return im.convert("RGB")


def validate(judge: Judge, labelled: Sequence[tuple[str, Image.Image | Path, str]],
             choices: Sequence[tuple[str, str, str]] = (), config: ValidationConfig | None = None) -> ValidationReport:
    cfg = config or ValidationConfig()
    rng = random.Random(cfg.seed)
    by_tier: dict[str, list] = {"love": [], "okay": [], "nope": []}
    for item in labelled:
        if item[2] in by_tier:
            by_tier[item[2]].append(item)
    if not by_tier["love"]:
        raise JudgeError("validation needs love-labelled paintings: label some candidates love in the app")
    all_verdicts: list[Verdict] = []

    lvn = _cross(judge, by_tier["love"], by_tier["nope"], rng, cfg.max_pairs)
    lvo = _cross(judge, by_tier["love"], by_tier["okay"], rng, cfg.max_pairs)
    all_verdicts += lvn + lvo

    images = {i: im for i, im, _ in labelled}
    usable = [c for c in choices if c[2] in ("left", "right") and c[0] in images and c[1] in images]
    usable = rng.sample(usable, min(len(usable), cfg.max_choices))
    human, expect = [], []
    by_right: dict[str, list] = {}
    for left, right, winner in usable:
        by_right.setdefault(right, []).append((left, winner))
    for right, lefts in by_right.items():
        rows = judge.judge([_image(images[left]) for left, _ in lefts],
                           [Reference.from_image(_image(images[right]), id=right)])
        human += [row[0] for row in rows]
        expect += [w == "left" for _, w in lefts]
    all_verdicts += human

    loves = by_tier["love"][: cfg.max_love_refs]
    loves = [(i, _image(im), t) for i, im, t in loves]
    love_imgs = [im for _, im, _ in loves]
    size = love_imgs[0].size
    adversarial = {}
    for name, items in adversarial_suite(love_imgs, size=size, seed=cfg.seed, per_hack=cfg.per_hack).items():
        verdicts = []
        for image, source in items:
            refs = [Reference.from_image(im, id=i) for k, (i, im, _) in enumerate(loves) if k != source]
            if refs:
                verdicts += judge.judge([image], refs)[0]
        adversarial[name] = _rate(verdicts, [True] * len(verdicts))

    answered = [v for v in all_verdicts if v.p is not None]
    consistency = (sum((v.p_first > 0.5) == (v.p_second > 0.5) for v in answered) / len(answered)
                   if answered else None)
    first_pick = (sum(0.5 * (v.p_first + 1.0 - v.p_second) for v in answered) / len(answered)
                  if answered else None)
    return ValidationReport(
        judge=judge.name, prompt_version=judge.prompt_version,
        love_vs_nope=_rate(lvn, [True] * len(lvn)), love_vs_okay=_rate(lvo, [True] * len(lvo)),
        human_agreement=_rate(human, expect), position_consistency=consistency, first_pick_rate=first_pick,
        adversarial=adversarial,
        counts={**{t: len(v) for t, v in by_tier.items()}, "pairwise choices": len(usable)},
    )


def pool_labels(pool_dir: str | Path) -> tuple[list[tuple[str, Path, str]], list[tuple[str, str, str]]]:
    """(labelled, choices) from a pool store: consensus tiers of rendered candidates, and choices."""
    from salon.pool.store import Pool

    with Pool.open(Path(pool_dir)) as pool:  # a folder holding no pool is refused, never created
        labelled = []
        for cid, tier in sorted(pool.consensus_tiers().items()):
            path = pool.image_path(cid)
            if tier is None or path is None or not path.exists():
                continue  # disagreement, or never rendered: nothing to compare
            labelled.append((cid, path, tier))
        choices = [(c.left_id, c.right_id, c.winner) for c in pool.pair_choices()]
    return labelled, choices
