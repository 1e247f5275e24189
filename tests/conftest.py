"""Shared pytest fixtures.

Pool fixtures (tests/test_pool_*.py): ``make_png(seed, size=64, noise=0)`` draws a distinct
random-blocks PNG per seed (``noise`` > 0 perturbs a few pixels: a near-duplicate of the same
seed); ``pool`` is an empty Pool in a temporary folder, closed after the test.
Run fixtures (session-wide, made once): ``smoke_run``, a 3-step CPU smoke training run, and
``smoke_eval``, `salon eval` of it.
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
# tiny: and random: models that commands build into the machine's cache (salon.models.names) land in
# this session's folder, not in ~/.cache/salon
os.environ["SALON_CACHE"] = tempfile.mkdtemp(prefix="salon-tests-cache-")

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

    with Pool.open(tmp_path / "pool", create=True) as p:
        yield p


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """One CPU smoke run shared by every test that reads a trained run (tests/test_train_*.py,
    tests/test_app_checkpoints.py): `salon train smoke.yaml` for 2 steps with metrics to trackio,
    then resumed to step 3 from the latest checkpoint. Tests add only under its eval/ and audit/,
    or work on a copy. {"out": RUN_DIR, "lora_after_2": the LoRA weights at step 2}."""
    from safetensors.torch import load_file

    from salon.apps.cli import main
    from train_support import SMOKE

    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf")))
    out = tmp_path_factory.mktemp("smoke") / "run"
    try:
        assert main(["train", SMOKE, "--output-dir", str(out), "--max-steps", "2", "--save-steps", "1",
                     "--set", "grpo.report_to=[trackio]"]) == 0
        lora_after_2 = load_file(out / "checkpoint-2" / "adapter_model.safetensors")
        assert main(["train", SMOKE, "--output-dir", str(out), "--max-steps", "3", "--resume", "latest"]) == 0
    finally:
        mp.undo()
    return {"out": out, "lora_after_2": lora_after_2}


@pytest.fixture(scope="session")
def smoke_eval(smoke_run):
    """`salon eval` of the smoke run (train_support.EVAL_ARGS: two held-out subjects, 2 samples each,
    a paint_fraction oracle and one that is always down).
    {"out": RUN_DIR, "code": exit code, "report": eval/report.json, "shards": {name: mtime_ns}}."""
    import json

    from salon.apps.cli import main
    from train_support import EVAL_ARGS

    out = smoke_run["out"]
    code = main(["eval", str(out), *EVAL_ARGS])
    shards = {p.name: p.stat().st_mtime_ns for p in (out / "eval" / "data").glob("*.parquet")}
    return {"out": out, "code": code, "report": json.loads((out / "eval" / "report.json").read_text()),
            "shards": shards}
