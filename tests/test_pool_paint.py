"""One paint measure and one blank threshold: the gate, the image judges and the audit agree."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from salon.curate.sandbox.gate import verdict
from salon.judges.image_judges import composition, paint_fraction as judge_paint_fraction
from salon.pool.paint import BLANK_FRACTION, paint_fraction
from salon.train.record.audit import batch_stats


def pale_wash(size: int = 120) -> bytes:
    """Cream paper with a pale wash 20 levels off it (a peach petal), both slightly noisy."""
    rng = np.random.default_rng(3)
    rgb = np.empty((size, size, 3), dtype=np.int16)
    rgb[:] = (250, 244, 230)
    rgb[30:70, 20:100] = (250, 224, 214)
    rgb += rng.integers(-3, 4, rgb.shape, dtype=np.int16)
    out = io.BytesIO()
    Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8)).save(out, format="PNG")
    return out.getvalue()


def test_image_judges_measure_paint_as_the_pool_does():
    png = pale_wash()
    pool = paint_fraction(png)
    assert pool == pytest.approx(40 * 80 / 120**2, abs=0.01)  # the wash is paint, the paper noise is not
    image = Image.open(io.BytesIO(png))
    assert judge_paint_fraction(image) == pytest.approx(pool, abs=1e-12)
    assert composition(image).paint_fraction == pytest.approx(pool, abs=1e-12)


def _audited_blank_share(fraction: float) -> float:
    row = {"reward": 0.0, "missing": [], "gate_passed": False, "render_unavailable": False, "group": "g",
           "coverage": 0.0, "paint_fraction": fraction, "violations": verdict([], [], fraction)}
    return batch_stats([row], [Image.new("RGB", (8, 8))], [])["blank_share"]


@pytest.mark.parametrize("fraction", [0.0, BLANK_FRACTION / 2, BLANK_FRACTION, 0.007, 0.009, 0.3])
def test_gate_and_audit_agree_on_blank(fraction):
    gate_says_blank = "blank_canvas" in verdict([], [], fraction)
    assert gate_says_blank == (fraction < BLANK_FRACTION)
    assert _audited_blank_share(fraction) == float(gate_says_blank)
