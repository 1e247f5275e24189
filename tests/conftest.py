"""Shared pytest fixtures.

Pool fixtures (tests/test_pool_*.py): ``make_png(seed, size=64, noise=0)`` draws a distinct
random-blocks PNG per seed (``noise`` > 0 perturbs a few pixels: a near-duplicate of the same
seed); ``pool`` is an empty Pool in a temporary folder, closed after the test.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from pathlib import Path

# The whole suite is offline: no Hub, no telemetry, no analytics.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# trackio reads TRACKIO_DIR once, when something first imports it (trl does, on import): set it
# before any test runs, so the smoke run's metrics land in this session's folder, not in ~/.cache
os.environ.setdefault("TRACKIO_DIR", tempfile.mkdtemp(prefix="salon-tests-trackio-"))

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # so tests can `import hubserver`


def _png(seed: int, size: int = 64, noise: int = 0) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    pixels = np.kron(blocks, np.ones((size // 8, size // 8, 1), dtype=np.uint8))
    if noise:
        jitter = np.random.default_rng(seed + 10_000 * noise)
        ys, xs = jitter.integers(0, size, noise), jitter.integers(0, size, noise)
        pixels[ys, xs] = 255 - pixels[ys, xs]
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def make_png():
    return _png


@pytest.fixture
def pool(tmp_path):
    from salon.pool import Pool

    with Pool.open(tmp_path / "pool") as p:
        yield p
