"""`salon train` as a new user runs it, in a real process: references from a local pool folder,
a TRL-only GRPO field, `--json`. Stdout is exactly one JSON document (step, last reward, seconds,
paths); stderr has no blank lines, no per-step dicts and no deprecation warnings; the run folder
explains itself (salon's card, the references it used with their ids, one copy of each grid, one
step numbering)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from salon.apps.cli import main

SMOKE = str(Path(__file__).resolve().parent.parent / "train" / "configs" / "smoke.yaml")
SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n}\n"


def salon(*args, env=None, timeout=600) -> subprocess.CompletedProcess:
    """A real `salon` process; output decoded as written (text mode would turn a progress bar's \r into \n)."""
    done = subprocess.run([sys.executable, "-m", "salon.apps.cli", *map(str, args)], capture_output=True,
                          timeout=timeout, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})
    done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()
    return done


def labelled_pool(folder: Path, make_png) -> tuple[Path, dict[str, str]]:
    """A pool of four rendered candidates: two love, one okay, one nope (made through the CLI)."""
    rows = []
    for i in range(4):
        (folder / f"p{i}.png").write_bytes(make_png(i, size=96))
        rows.append(json.dumps({"code": SKETCH + f"//{i}\n", "image": f"p{i}.png", "model": "m:x", "subject": "koi"}))
    (folder / "rows.jsonl").write_text("\n".join(rows) + "\n")
    pool = folder / "pool"
    done = salon("pool", "import", folder / "rows.jsonl", "--pool", pool, "--json")
    ids = [json.loads(line)["id"] for line in done.stdout.splitlines()]
    tiers = dict(zip(ids, ["love", "love", "okay", "nope"]))
    for cid, tier in tiers.items():
        assert main(["pool", "label", cid, tier, "--by", "ana", "--pool", str(pool)]) == 0
    return pool, tiers


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from conftest import _png

    work = tmp_path_factory.mktemp("first-hour")
    pool, tiers = labelled_pool(work, _png)
    out = work / "run"
    done = salon("train", SMOKE, "--output-dir", out, "--max-steps", "2", "--json",
                 "--set", f"judge.references={pool}", "grpo.epsilon=0.3",
                 env={"HF_HOME": str(work / "hf"), "PYTHONWARNINGS": "default"})
    assert done.returncode == 0, done.stderr[-3000:]
    return {"done": done, "out": out, "pool": pool, "tiers": tiers}


def test_json_stdout_is_one_document(run):
    summary = json.loads(run["done"].stdout)  # the whole stdout, nothing else in it
    assert summary["global_step"] == 2 and summary["checkpoints"] == ["checkpoint-1", "checkpoint-2"]
    # the final reward (the last logged step's mean, as trainer_state.json has it) and the run's time, too
    state = json.loads((run["out"] / "checkpoint-2" / "trainer_state.json").read_text())
    logged = [h["reward"] for h in state["log_history"] if "reward" in h]
    assert summary["reward"] == pytest.approx(logged[-1], abs=1e-9)
    lines = run["done"].stderr.replace("\r", "\n").split("\n")
    trained = next(float(line.split(" in ")[1].split()[0]) for line in lines if line.startswith("trained 2 steps in "))
    assert trained <= summary["seconds"] < 600 and summary["moved_aside"] is None


def test_training_output_is_compact(run):
    err = run["done"].stderr
    lines = [line for chunk in err.split("\n") for line in chunk.split("\r")]
    assert [line for line in err.split("\n")[:-1] if not line.strip("\r ")] == [], repr(err[:400])  # no blank lines
    assert "{'loss'" not in err and "'completions/mean_length'" not in err  # no per-step dicts
    assert "Warning" not in err, err  # FutureWarning, DeprecationWarning, ResourceWarning: none
    steps = [line for line in lines if line.startswith("step ")]
    assert [s.split()[1] for s in steps] == ["1/2", "2/2"]
    assert all("reward " in s and "judge " in s and "loss " in s for s in steps)
    assert any(line.startswith("trained 2 steps in ") for line in lines)


def test_references_come_from_the_local_pool_and_are_recorded(run):
    manifest = json.loads((run["out"] / "references" / "manifest.json").read_text())
    wanted = {cid: t for cid, t in run["tiers"].items() if t in ("love", "okay")}
    assert {r["id"]: r["tier"] for r in manifest["references"]} == wanted
    assert manifest["source"] == str(run["pool"]) and manifest["copied"] is True
    assert manifest["release"].startswith(f"pool:{run['pool'].resolve()}@")
    assert all((run["out"] / "references" / r["path"]).is_file() for r in manifest["references"])
    from salon.train.record.archive import load_rollouts_dataset

    rollouts = load_rollouts_dataset(run["out"])
    assert set(rollouts["pool_release"]) == {manifest["release"]}


def test_the_run_folder_explains_itself(run):
    out = run["out"]
    card = (out / "README.md").read_text()
    assert "fine-tuned version of [None]" not in card and "# salon run: run" in card
    for needle in ("tiny:qwen3", "references/manifest.json", "2 love, 1 okay", "weights: gate 0.05, length 0.05, "
                   "judge 0.9", "`checkpoint-1`, `checkpoint-2`", "Step s is the policy after s optimiser steps",
                   f"salon eval {out}", "win rate against 2 references"):
        assert needle in card, needle
    done = salon("audit", out)
    assert done.returncode in (0, 1), done.stderr
    table = done.stdout.splitlines()
    assert "step s is the policy after s updates" in table[0] and "steps 0..1" in table[0]
    assert table[1].split() == ["per", "step", "step", "0", "step", "1"]
    assert any(line.startswith("judge/mean") for line in table) and any(line.startswith("judge/std") for line in table)
    assert not list((out / "audit").glob("grid-step-*.png"))  # one copy of each grid, under audit/grids/
    assert sorted(p.name for p in (out / "audit" / "grids").glob("*.png")) == ["step-000000.png", "step-000001.png"]


def test_trl_only_field_reached_the_trainer(run):
    import torch

    args = torch.load(run["out"] / "checkpoint-2" / "training_args.bin", weights_only=False)
    assert args.epsilon == pytest.approx(0.3) and args.activation_checkpointing is False


def test_a_compiled_update_is_announced_before_the_first_step(caplog):
    """A compiled update makes the first step sit for minutes on a GPU: the run says so when training begins."""
    from types import SimpleNamespace

    from transformers import TrainerControl, TrainerState

    from salon.train.config import load_config
    from salon.train.recipe import salon_callback

    callback = salon_callback(load_config(SMOKE), {})
    with caplog.at_level("INFO", logger="salon.train.recipe"):
        for compiled in (True, False):
            callback.on_train_begin(SimpleNamespace(torch_compile=compiled), TrainerState(), TrainerControl())
    assert caplog.text.count("the update compiles during the first step") == 1


def test_a_step_line_names_a_stale_steps_staleness_and_its_correction():
    from salon.train.progress import step_line

    stale = {"reward": 0.4, "salon/overlap/staleness": 1.0, "salon/overlap/importance_weight_mean": 0.99812,
             "step_time": 4.21}
    assert step_line(2, 3, stale) == "step 2/3  reward 0.400  stale 1  iw 0.998  4.2 s"
    assert step_line(1, 3, {"reward": 0.4, "salon/overlap/staleness": 0.0}) == "step 1/3  reward 0.400"
