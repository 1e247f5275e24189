"""Scorer's image measures (CPU, no model): the coverage and the built-in judges that read the paint
mask come from one composition() per painting, with the values those judges give on their own."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from salon.curate.sandbox.render import RenderResult
from salon.judges import image_judges
from salon.judges.registry import load_judge
from salon.judges.references import ReferenceSet
from salon.judges.verdict import Reference
from salon.train.config import RewardSettings
from salon.train.rollout import Sample
from salon.train.scoring import Scorer


def painting(seed: int, size=(120, 90)) -> Image.Image:
    """Cream paper with a few random rectangles of paint (different coverage per seed)."""
    rng = np.random.default_rng(seed)
    arr = np.full((size[1], size[0], 3), (245, 240, 225), dtype=np.uint8)
    for _ in range(1 + seed % 4):
        x, y = rng.integers(0, size[0] - 20), rng.integers(0, size[1] - 20)
        arr[y:y + rng.integers(10, 40), x:x + rng.integers(10, 60)] = rng.integers(0, 200, 3)
    return Image.fromarray(arr)


def png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def scorer():
    refs = ReferenceSet([Reference.from_image(painting(10 + i), id=f"r{i}", tier="love") for i in range(3)],
                        source="test")
    return Scorer(RewardSettings(image_judges=["paint_fraction", "composition", "colourfulness"]),
                  judge=load_judge("measures", measures=["palette"]), references=refs, k=2)


def test_the_paint_mask_is_made_once_per_painting_and_the_judges_values_are_their_own(scorer, monkeypatch):
    images = [painting(s) for s in range(5)]
    results = [RenderResult(ok=True, png=png(im)) for im in images[:4]] + [RenderResult(ok=False, png=png(images[4]))]
    samples = [Sample(index=i, group="g", position=i, row=0, subject="s", prompt="p", completion="x" * 900,
                      code="c", seed=i) for i in range(5)]
    masks = []
    real = image_judges.paint_mask  # the image judges' and the coverage's (the pairwise judge has its own)
    monkeypatch.setattr(image_judges, "paint_mask", lambda im: masks.append(1) or real(im))
    scored = scorer.score(samples, results, step=0)
    assert len(masks) == 5  # one per painting present: 4 passed, 1 failed its gate (coverage only)
    decoded = [Image.open(io.BytesIO(r.png)).convert("RGB") for r in results]
    for name in ("paint_fraction", "composition", "colourfulness"):
        own = load_judge(name).score(decoded[:4])
        got = [s.components[name] for s in scored[:4]]
        scale = 100.0 if name == "colourfulness" else 1.0
        np.testing.assert_allclose(got, [min(1.0, v / scale) for v in own], rtol=0, atol=1e-12)
        assert scored[4].components[name] is None  # not judged: gate failed
    assert [s.coverage for s in scored] == [image_judges.composition(im).coverage for im in decoded]


def test_a_composition_that_raises_is_missing_for_that_painting_only(scorer, monkeypatch):
    images = [painting(s) for s in range(3)]
    results = [RenderResult(ok=True, png=png(im)) for im in images]
    samples = [Sample(index=i, group="g", position=i, row=0, subject="s", prompt="p", completion="x" * 900,
                      code="c", seed=i) for i in range(3)]
    real = image_judges.composition

    def composition(im):
        if im.size == (7, 7):
            raise ValueError("bad")
        return real(im)

    monkeypatch.setattr("salon.train.scoring.composition", composition)
    results[1] = RenderResult(ok=True, png=png(Image.new("RGB", (7, 7), "white")))
    scored = scorer.score(samples, results, step=0)
    assert scored[1].coverage is None and scored[1].components["composition"] is None
    assert scored[0].coverage is not None and scored[2].components["paint_fraction"] is not None


def test_groups_scored_together_get_their_own_draws_and_the_scores_they_get_alone(scorer):
    """Two prompts' samples in one score(): each faces its own prompt's draw, the judge is asked once
    (judge_many, where it has one), and every score is the one its group gets scored alone."""
    class Counted:  # the measures judge, with judge_many: one call for several groups
        def __init__(self, judge):
            self.judge_, self.name, self.prompt_version, self.calls = judge, judge.name, judge.prompt_version, []

        def judge(self, candidates, references):
            return self.judge_.judge(candidates, references)

        def judge_many(self, groups):
            self.calls.append([len(c) for c, _ in groups])
            return [self.judge_.judge(c, r) for c, r in groups]

    images = [painting(s) for s in range(6)]
    results = [RenderResult(ok=True, png=png(im)) for im in images]
    samples = [Sample(index=i, group=f"g{i % 2}", position=i // 2, row=i % 2, subject="s", prompt=f"p{i % 2}",
                      completion="x" * 900, code="c", seed=i) for i in range(6)]
    alone = {g: scorer.score([s for s in samples if s.group == g], [results[s.index] for s in samples if s.group == g],
                             step=3) for g in ("g0", "g1")}
    scorer.judge = Counted(scorer.judge)
    together = scorer.score(samples, results, step=3)
    assert scorer.judge.calls == [[3, 3]]
    assert {s.draw.seed for s in together[0::2]} != {s.draw.seed for s in together[1::2]}
    for s, got in zip(samples, together):
        want = alone[s.group][s.position]
        assert got.draw == want.draw and got.components == pytest.approx(want.components, abs=1e-12)
