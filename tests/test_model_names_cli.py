"""One way to name a model: every command that takes one reads it through salon.models.names, so a
name means the same (and a wrong one is refused the same way) in `salon judge`, `judge validate`,
`judge --scorer`, `curate generate --model hf:NAME`, `eval --oracle ...,model=`, `train` and
`env serve`. The real `salon` command in a subprocess, offline; tiny: models are built into
$SALON_CACHE/models once and reused by the next command that names them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures_models import flat_image

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "train" / "configs" / "smoke.yaml"
UNKNOWN = ("unknown tiny model; use tiny:qwen2, tiny:qwen3, tiny:qwen2_vl, tiny:qwen2_5_vl, tiny:qwen3_vl, "
           "tiny:hpsv3")


def salon(*args, cwd: Path, cache: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "SALON_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "salon.apps.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A working folder with a painting, a reference folder (love/, okay/), a labelled pool and a run
    folder holding only its config; and the models cache every command of this module shares."""
    from salon.pool.models import Candidate
    from salon.pool.store import Pool

    root = tmp_path_factory.mktemp("names")
    flat_image(200, seed=1, size=(96, 96)).save(root / "painting.png")
    for tier, levels in (("love", (210, 190)), ("okay", (120,))):
        (root / "refs" / tier).mkdir(parents=True)
        for level in levels:
            flat_image(level, seed=level, size=(96, 96)).save(root / "refs" / tier / f"{level}.png")
    with Pool.open(root / "pool", create=True) as pool:
        for tier, level in (("love", 220), ("love", 200), ("okay", 130), ("nope", 40)):
            c = Candidate(code=f"// {tier} {level}", seed=level, ok=True, png=_png(level))
            pool.add_candidate(c)
            pool.label(c.id, tier, by="ana")
    (root / "run").mkdir()
    (root / "run" / "salon_train.yaml").write_text(SMOKE.read_text())
    return {"root": root, "cache": root / "cache"}


def _png(level: int) -> bytes:
    import io

    buf = io.BytesIO()
    flat_image(level, seed=level, size=(96, 96)).save(buf, format="PNG")
    return buf.getvalue()


COMMANDS = {  # every command that takes a model, given the same unknown name
    "judge": ["judge", "--model", "tiny:qwen9", "--refs", "refs", "painting.png"],
    "judge validate": ["judge", "validate", "--pool", "pool", "--model", "tiny:qwen9"],
    "judge --scorer": ["judge", "--scorer", "hpsv3", "--model", "tiny:qwen9", "painting.png"],
    "curate generate": ["curate", "generate", "--subject", "koi", "--model", "hf:tiny:qwen9", "-n", "1", "--pool",
                        "new-pool"],
    "eval --oracle": ["eval", "run", "--oracle", "transformers,model=tiny:qwen9"],
    "train": ["train", SMOKE, "--output-dir", "train-run", "--set", "policy.model=tiny:qwen9"],
    "env serve": ["env", "serve", "--judge", "transformers", "--judge-model", "tiny:qwen9", "--refs", "tiny:refs"],
}


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_every_command_refuses_an_unknown_name_the_same_way_before_it_starts(place, command):
    t0 = time.perf_counter()
    done = salon(*COMMANDS[command], cwd=place["root"], cache=place["cache"], timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"tiny:qwen9: {UNKNOWN}" in done.stderr, done.stderr
    assert time.perf_counter() - t0 < 60  # refused up front: nothing rendered, built or served
    assert not (place["root"] / "new-pool").exists() and not (place["root"] / "train-run").exists()
    assert not (place["root"] / "run" / "eval").exists()


def test_a_tiny_judge_scores_and_validates_offline_built_once(place):
    root, cache = place["root"], place["cache"]
    done = salon("judge", "--model", "tiny:qwen2_5_vl", "--refs", "refs", "painting.png", "--json", cwd=root,
                 cache=cache)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["image"] == "painting.png" and 0 <= line["score"] <= 1 and len(line["verdicts"]) == 3
    built = cache / "models" / "tiny-qwen2_5_vl"
    assert (built / "config.json").is_file() and f"transformers:{built}" in done.stderr
    stamp = (built / "config.json").stat().st_mtime_ns
    done = salon("judge", "validate", "--pool", "pool", "--model", "tiny:qwen2_5_vl", "--json", cwd=root, cache=cache)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["judge"] == f"transformers:{built}" and report["love_vs_nope"]["n"] > 0
    assert (built / "config.json").stat().st_mtime_ns == stamp  # the same name, the same model: reused


def test_the_measures_judge_runs_without_a_model_and_says_it_takes_none(place):
    root, cache = place["root"], place["cache"]
    done = salon("judge", "--backend", "measures", "--refs", "refs", "painting.png", "--json", cwd=root, cache=cache)
    assert done.returncode == 0, done.stderr
    assert 0 <= json.loads(done.stdout)["score"] <= 1
    done = salon("judge", "--backend", "measures", "--model", "tiny:qwen2_5_vl", "--refs", "refs", "painting.png",
                 cwd=root, cache=cache)
    assert done.returncode == 2 and done.stderr.strip() == (
        "salon judge: --model=tiny:qwen2_5_vl: the measures judge takes no model; leave it out (in a config: null)")
    done = salon("judge", "--refs", "refs", "painting.png", cwd=root, cache=cache)
    assert done.returncode == 2 and "--model is required by the transformers judge" in done.stderr


@pytest.mark.browser
def test_curate_generate_paints_with_a_tiny_model_by_name(place):
    done = salon("curate", "generate", "--subject", "koi", "--model", "hf:tiny:qwen3", "-n", "1", "--max-tokens", "16",
                 "--pool", "tiny-pool", "--browsers", "1", "--json", cwd=place["root"], cache=place["cache"])
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)["models"]["hf:tiny:qwen3"]
    assert counts["failed"] == 0 and counts["ok"] + counts["rejected"] == 1 and counts["stopped"] is None
    assert (place["cache"] / "models" / "tiny-qwen3" / "config.json").is_file()
