"""Validate an absolute scorer (HPSv3) against people's tiers and against reward hacks.

    report = validate_scorer(judge, labelled, subjects, ScorerValidationConfig(max_per_tier=64))
    print(report.text());  report.to_dict()
    salon judge validate --scorer hpsv3 --model CKPT --pool DIR [--json]

`labelled` is [(id, image or path, tier)] (validate.pool_labels), `subjects` {id: subject}
(pool_subjects). Everything is measured twice: with the scorer's own prompt (HPSv3's default,
"a loose watercolour flower") and with a prompt naming each painting's subject
("a {subject} painted in loose watercolour"). Per prompt:

  tiers         mean and spread of score and mu for love / okay / nope
  auc           P(a love painting outscores an okay one), and a nope one (ties count half): 0.5 is
                no separation. The prior art found HPSv3 cannot tell love from okay (love +3.5,
                okay +3.6 mu), so love_vs_okay near 0.5 is that finding, measured on this pool
  adversarial   the hacks of adversarial.py a scorer must not like: blank canvas, the sky-band
                template, painted words, one blob
  span          mean mu of love minus mu of a blank canvas: how far the prompt lets the score move
                (the prior art: +9.04 with the flower prompt, +4.76 naming the hibiscus)

Images the scorer could not rate are counted as `failed`, never as low scores.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from salon.judges.adversarial import adversarial_suite
from salon.models.hpsv3_prompt import SUBJECT_PROMPT
from salon.judges.validate import _image
from salon.pool.errors import ConfigError, JudgeError
from salon.pool.models import TIERS

HACKS = {"blank": "blank canvas", "template": "sky band", "words": "painted words", "blob": "one blob"}


@dataclass
class ScorerValidationConfig:
    max_per_tier: int = 64  # paintings sampled per tier
    per_hack: int = 2  # images per adversarial hack
    subject_prompt: str = SUBJECT_PROMPT  # "{subject}" is the painting's subject
    seed: int = 0

    def __post_init__(self):
        p = [f"{k}={getattr(self, k)}: must be at least 1" for k in ("max_per_tier", "per_hack")
             if getattr(self, k) < 1]
        if "{subject}" not in self.subject_prompt:
            p.append(f"subject_prompt={self.subject_prompt!r}: write {{subject}} where the subject goes")
        if p:
            raise ConfigError(p, "ScorerValidationConfig")


@dataclass
class Spread:
    n: int
    failed: int
    score_mean: float | None = None
    score_std: float | None = None
    mu_mean: float | None = None
    mu_std: float | None = None


@dataclass
class PromptReport:
    prompt: str
    tiers: dict[str, Spread]
    love_vs_okay: float | None  # AUC on mu
    love_vs_nope: float | None
    adversarial: dict[str, Spread]
    span: float | None  # love mu mean - blank mu


@dataclass
class ScorerReport:
    scorer: str
    counts: dict[str, int]
    plain: PromptReport
    subject: PromptReport
    mu_shift: dict[str, float | None] = field(default_factory=dict)  # per tier: subject mu - plain mu

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        def cell(s: Spread) -> str:
            if s.score_mean is None:
                return f"{'n/a':>28s}" + (f" ({s.failed} failed)" if s.failed else "")
            out = f"{s.score_mean:.3f} ±{s.score_std:.3f}  mu {s.mu_mean:+6.2f} ±{s.mu_std:5.2f}"
            return out + (f" ({s.failed} failed)" if s.failed else "")

        def num(x, fmt):
            return "n/a" if x is None else format(x, fmt)

        a, b = self.plain, self.subject
        lines = [f"scorer {self.scorer}", "pool: " + ", ".join(f"{v} {k}" for k, v in self.counts.items()), "",
                 f"{'':16s}{'A: ' + repr(a.prompt):40s}  B: {b.prompt!r}", "mean and spread per tier"]
        lines += [f"  {t:6s} n={a.tiers[t].n:<4d} {cell(a.tiers[t]):40s}  {cell(b.tiers[t])}" for t in TIERS]
        lines += ["separation, AUC on mu (0.5 = cannot tell apart)",
                  f"  {'love > okay':14s}{num(a.love_vs_okay, '.3f'):40s}  {num(b.love_vs_okay, '.3f')}",
                  f"  {'love > nope':14s}{num(a.love_vs_nope, '.3f'):40s}  {num(b.love_vs_nope, '.3f')}",
                  "reward hacks (lower is better)"]
        lines += [f"  {HACKS[h]:14s}{cell(a.adversarial[h]):40s}  {cell(b.adversarial[h])}" for h in HACKS]
        lines += ["the prompt naming the subject",
                  f"  span love - blank (mu)  A {num(a.span, '+.2f')}   B {num(b.span, '+.2f')}",
                  "  mu shift B - A per tier " + ", ".join(f"{t} {num(v, '+.2f')}" for t, v in self.mu_shift.items())]
        return "\n".join(lines)


def auc(better: Sequence[float], worse: Sequence[float]) -> float | None:
    """P(a value of `better` exceeds one of `worse`), ties counted half (Mann-Whitney)."""
    if not better or not worse:
        return None
    wins = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in better for y in worse)
    return wins / (len(better) * len(worse))


def _spread(ratings) -> Spread:
    ok = [r for r in ratings if r.ok]
    s = Spread(n=len(ok), failed=len(ratings) - len(ok))
    if ok:
        scores, mus = [r.score for r in ok], [r.mu for r in ok]
        s.score_mean, s.mu_mean = statistics.fmean(scores), statistics.fmean(mus)
        s.score_std = statistics.pstdev(scores)
        s.mu_std = statistics.pstdev(mus)
    return s


def _report(prompt: str, tier_ratings: dict, hack_ratings: dict) -> PromptReport:
    mus = {t: [r.mu for r in tier_ratings[t] if r.ok] for t in TIERS}
    tiers = {t: _spread(tier_ratings[t]) for t in TIERS}
    hacks = {h: _spread(hack_ratings[h]) for h in HACKS}
    love, blank = tiers["love"].mu_mean, hacks["blank"].mu_mean
    return PromptReport(prompt=prompt, tiers=tiers, love_vs_okay=auc(mus["love"], mus["okay"]),
                        love_vs_nope=auc(mus["love"], mus["nope"]), adversarial=hacks,
                        span=None if love is None or blank is None else love - blank)


def validate_scorer(judge, labelled: Sequence[tuple], subjects: dict[str, str | None],
                    config: ScorerValidationConfig | None = None) -> ScorerReport:
    """The report of the module doc for a RatingJudge (anything with `rate(images, prompts)`)."""
    cfg = config or ScorerValidationConfig()
    rng = random.Random(cfg.seed)
    by_tier = {t: [x for x in labelled if x[2] == t] for t in TIERS}
    if not by_tier["love"]:
        raise JudgeError("validation needs love-labelled paintings: label some candidates love in the app")
    sample = {t: rng.sample(v, min(len(v), cfg.max_per_tier)) for t, v in by_tier.items()}
    images = {t: [_image(im) for _, im, _ in v] for t, v in sample.items()}
    named = Counter(s for s in subjects.values() if s)
    common = named.most_common(1)[0][0] if named else "flower"  # the hacks' subject under prompt B
    suite = adversarial_suite(images["love"], size=images["love"][0].size, seed=cfg.seed, per_hack=cfg.per_hack)
    hacks = {h: [im for im, _ in suite[h]] for h in HACKS}

    def subject_prompt(subject):
        return cfg.subject_prompt.format(subject=subject or common)

    plain = _report(getattr(getattr(judge, "config", None), "prompt", "the scorer's own prompt"), {t: judge.rate(images[t]) for t in TIERS},
                    {h: judge.rate(hacks[h]) for h in HACKS})
    subject = _report(cfg.subject_prompt,
                      {t: judge.rate(images[t], [subject_prompt(subjects.get(i)) for i, _, _ in sample[t]])
                       for t in TIERS},
                      {h: judge.rate(hacks[h], [subject_prompt(common)] * len(hacks[h])) for h in HACKS})
    shift = {t: None if plain.tiers[t].mu_mean is None or subject.tiers[t].mu_mean is None
             else subject.tiers[t].mu_mean - plain.tiers[t].mu_mean for t in TIERS}
    return ScorerReport(scorer=judge.name, counts={t: len(v) for t, v in by_tier.items()}, plain=plain,
                        subject=subject, mu_shift=shift)


def pool_subjects(pool_dir: str | Path, ids: Sequence[str]) -> dict[str, str | None]:
    """{candidate id: its subject} from a pool store."""
    from salon.pool.store import Pool

    with Pool.open(Path(pool_dir)) as pool:
        return {i: (c.subject if (c := pool.get(i)) else None) for i in ids}
