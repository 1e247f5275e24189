"""Image judges: measurements of a painting on its own, and of a group's diversity (numpy only).

    paint_fraction(img)      share of the canvas that differs from the paper (0..1), the pool's measure
    colourfulness(img)       Hasler-Suesstrunk colourfulness (0 grey; ~33 moderate; >80 extreme)
    composition(img)         where the paint sits: 4x4 grid, coverage, upper/lower half, centroid
    hard_edge_share(img)     share of painted pixels on a hard edge (text and line work; washes are soft)
    diversity(imgs)          mean pairwise distance of small thumbnails (0 identical .. 1)

`composition(...).coverage` is the share of 4x4 cells holding paint: the collapsed template of
the reward-hacking studies (sky band, small sun, horizon, tiny subject, blank lower half) scores
about a third, a fully painted canvas near 1, and `lower_half` tells them apart on its own.
The `*Judge` classes wrap them behind the `ImageJudge` protocol for the registry.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
from PIL import Image

from salon.judges.verdict import as_rgb
from salon.pool import paint as pool_paint

GRID = 4
CELL_PAINTED = 0.15  # a cell counts as painted when this share of it is paint
THUMB = 24


def _rgb(image: Image.Image) -> np.ndarray:
    return np.asarray(as_rgb(image), dtype=np.int16)


def paint_mask(image: Image.Image) -> np.ndarray:
    """Painted pixels by the pool's one measure (`salon.pool.paint`), transparency on white."""
    return pool_paint.paint_mask(as_rgb(image))


def paint_fraction(image: Image.Image) -> float:
    return float(paint_mask(image).mean())


def colourfulness(image: Image.Image) -> float:
    arr = _rgb(image).astype(float)
    rg = arr[..., 0] - arr[..., 1]
    yb = 0.5 * (arr[..., 0] + arr[..., 1]) - arr[..., 2]
    return float(np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean()))


HARD_EDGE = 60  # grey levels between neighbouring pixels: a drawn edge, not a wash's soft border


def hard_edge_share(image: Image.Image) -> float:
    """Share of the painted pixels that sit on a hard edge (a jump of more than HARD_EDGE grey
    levels to the right or lower neighbour). Watercolour washes have soft edges: the bundled
    examples score 0-0.16 as rendered, words drawn on the canvas (judges.adversarial) about 0.5."""
    grey = np.asarray(as_rgb(image).convert("L"), dtype=np.int16)
    jump = np.maximum(np.abs(np.diff(grey, axis=1))[:-1, :], np.abs(np.diff(grey, axis=0))[:, :-1])
    painted = paint_mask(image)[:-1, :-1]
    return float((jump > HARD_EDGE).sum() / painted.sum()) if painted.any() else 0.0


@dataclass(frozen=True)
class Composition:
    grid: list[list[float]]  # paint fraction per cell, rows top to bottom
    coverage: float  # share of cells with paint
    upper_half: float  # paint fraction of the upper half
    lower_half: float  # paint fraction of the lower half
    centroid: tuple[float, float]  # paint's centre of mass (x, y), 0..1 from the top left
    paint_fraction: float

    def to_dict(self) -> dict:
        return asdict(self)


def composition(image: Image.Image) -> Composition:
    mask = paint_mask(image)
    h, w = mask.shape
    rows = np.array_split(np.arange(h), GRID)
    cols = np.array_split(np.arange(w), GRID)
    grid = [[float(mask[np.ix_(r, c)].mean()) for c in cols] for r in rows]
    ys, xs = np.nonzero(mask)
    centroid = (float(xs.mean() / w), float(ys.mean() / h)) if len(xs) else (0.5, 0.5)
    return Composition(
        grid=grid,
        coverage=float(np.mean(np.array(grid) >= CELL_PAINTED)),
        upper_half=float(mask[: h // 2].mean()),
        lower_half=float(mask[h // 2:].mean()),
        centroid=centroid,
        paint_fraction=float(mask.mean()),
    )


def _thumb(image: Image.Image) -> np.ndarray:
    return np.asarray(as_rgb(image).resize((THUMB, THUMB), Image.BILINEAR), dtype=float) / 255.0


def distance_matrix(images: Sequence[Image.Image]) -> np.ndarray:
    """Mean absolute difference between 24x24 colour thumbnails (0 identical, 1 opposite)."""
    thumbs = np.stack([_thumb(im) for im in images]) if images else np.zeros((0, THUMB, THUMB, 3))
    flat = thumbs.reshape(len(thumbs), -1)
    return np.abs(flat[:, None, :] - flat[None, :, :]).mean(axis=-1)


def diversity(images: Sequence[Image.Image]) -> float | None:
    """Mean pairwise distance within a group; None for fewer than two images."""
    if len(images) < 2:
        return None
    d = distance_matrix(images)
    n = len(images)
    return float(d.sum() / (n * (n - 1)))


class PaintFractionJudge:
    name = "image:paint_fraction"

    def score(self, images):
        return [paint_fraction(im) for im in images]


class ColourfulnessJudge:
    name = "image:colourfulness"

    def score(self, images):
        return [colourfulness(im) for im in images]


class CompositionJudge:
    """Scores coverage (share of the 4x4 grid that holds paint)."""

    name = "image:composition"

    def score(self, images):
        return [composition(im).coverage for im in images]


class DiversityJudge:
    """Scores each image by its mean distance to the other images of the same call (a group)."""

    name = "image:diversity"

    def score(self, images):
        if len(images) < 2:
            return [None] * len(images)
        d = distance_matrix(images)
        return [float(row.sum() / (len(images) - 1)) for row in d]
