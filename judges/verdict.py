"""The judge interfaces: `Reference`, `Verdict`, `Rating`, the `Judge`, `ImageJudge` and `RatingJudge` protocols.

A pairwise judge compares each candidate with each reference in both presentation orders:

    verdicts = judge.judge(candidates, references)   # list (per candidate) of list (per reference)
    verdicts[i][j].p          # P(candidate i beats reference j), mean of the two orders, or None
    verdicts[i][j].reason     # why p is None (timeout, parse failure, service down)

`p_first` is the candidate's win probability when shown first, `p_second` when shown second, and
`p` their mean, so p(a beats b) + p(b beats a) = 1 for any judge (`verdict_from_orders`). A judge
that cannot answer returns a Verdict with p None and a reason, never 0.
"""

from __future__ import annotations

import base64
import io
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from PIL import Image


@dataclass(frozen=True)
class Reference:
    """A reference painting: `id` is the pool id, or the path when it comes from a plain folder."""

    id: str
    path: Path | None = None
    tier: str | None = None  # love / okay for a pool release; None for an untiered folder
    image: Image.Image | None = field(default=None, compare=False, repr=False)

    def load(self) -> Image.Image:
        if self.image is not None:
            return self.image
        if self.path is None:
            raise ValueError(f"reference {self.id} has neither an image nor a path")
        image = Image.open(self.path)
        image.load()  # reads the pixels and closes the file (a lazy image kept it open: ResourceWarning)
        return image

    @classmethod
    def from_image(cls, image: Image.Image, id: str, tier: str | None = None) -> "Reference":
        return cls(id=id, tier=tier, image=image)


@dataclass(frozen=True)
class Verdict:
    """One candidate against one reference; `p` is None exactly when the judge could not answer."""

    reference: str
    judge: str
    prompt_version: str
    p: float | None = None
    p_first: float | None = None
    p_second: float | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.p is not None

    def to_dict(self) -> dict:
        return asdict(self)


def verdict_from_orders(
    p_cand_first: float | None,
    p_ref_first: float | None,
    *,
    reference: str,
    judge: str,
    prompt_version: str,
    reason: str | None = None,
) -> Verdict:
    """Combine P(first shown wins) of the two presentations into one verdict.

    `p_cand_first` = P(first wins) with the candidate first; `p_ref_first` = P(first wins) with the
    reference first. Either missing makes the verdict missing: half a comparison carries the
    position bias we average out, so it is not a score.
    """
    if p_cand_first is None or p_ref_first is None:
        return Verdict(reference=reference, judge=judge, prompt_version=prompt_version,
                       reason=reason or "no answer for one presentation order")
    p_first = float(p_cand_first)
    p_second = 1.0 - float(p_ref_first)
    return Verdict(reference=reference, judge=judge, prompt_version=prompt_version,
                   p=0.5 * (p_first + p_second), p_first=p_first, p_second=p_second)


@runtime_checkable
class Judge(Protocol):
    """A pairwise judge. Backends set `name` (backend:model) and `prompt_version`. A backend that can
    judge several groups (each with its own references) in one batch also has
    `judge_many([(candidates, references), ...]) -> [judge(candidates, references), ...]`
    (winrate.judge_groups uses it where it exists)."""

    name: str
    prompt_version: str

    def judge(self, candidates: Sequence[Image.Image], references: Sequence[Reference]) -> list[list[Verdict]]:
        ...


@runtime_checkable
class ImageJudge(Protocol):
    """A judge that scores images on their own (paint fraction, composition, diversity...)."""

    name: str

    def score(self, images: Sequence[Image.Image]) -> list[float | None]:
        ...


@dataclass(frozen=True)
class Rating:
    """An absolute reward model's answer for one image: `score` in 0..1, or None with a `reason`
    when it could not answer (timeout, service down, a failed forward), never 0. `mu` and
    `log_sigma` are the model's own numbers (HPSv3: the Bradley-Terry mean and its log std)."""

    score: float | None
    mu: float | None = None
    log_sigma: float | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.score is not None


@runtime_checkable
class RatingJudge(Protocol):
    """An image judge that is a reward model: `score` gives the 0..1 scores, `rate` the Ratings."""

    name: str

    def score(self, images: Sequence[Image.Image]) -> list[float | None]:
        ...

    def rate(self, images: Sequence[Image.Image], prompts: Sequence[str] | None = None) -> list[Rating]:
        ...


def as_rgb(image: Image.Image, background=(255, 255, 255)) -> Image.Image:
    """RGB copy; transparent pixels land on `background` (a rendered canvas may carry alpha)."""
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA", "P"):
        rgba = image.convert("RGBA")
        out = Image.new("RGB", rgba.size, background)
        out.paste(rgba, mask=rgba.getchannel("A"))
        return out
    return image.convert("RGB")


def png_base64(image: Image.Image) -> str:
    """The image as RGB PNG bytes in base64 (what HTTP scorers and data URLs carry)."""
    buf = io.BytesIO()
    as_rgb(image).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()
