"""A run folder holds one run (issue 56, point 1), through real `salon` processes and a real smoke run:
a second `salon train` into it is refused in one line, `--overwrite` moves the old run aside (never
deleted) and starts over, a resume that finds no checkpoint sets the old rollouts aside, and an
archive that holds one rollout twice is refused by `salon audit`, `salon eval` and `salon compare`.

    .venv/bin/python -m pytest -q tests/test_train_run_folder.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from salon.apps.cli import main
from test_train_cli_output import salon
from train_support import EVAL_ARGS, SMOKE, write_synthetic_run


def shards(run: Path) -> list[str]:
    return sorted(p.name for p in (run / "rollouts" / "data").glob("step-*.parquet"))


def one_run(run: Path, steps: int) -> None:
    """The archive holds `steps` steps of smoke.yaml's 4 rollouts, each once."""
    from salon.train.record.archive import load_rollouts
    from salon.train.record.run_folder import duplicated_keys

    frame = load_rollouts(run, images=False)
    assert sorted(frame["step"].unique()) == list(range(steps)) and len(frame) == 4 * steps
    assert duplicated_keys(frame) == []


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """A one-step smoke run, trained by a real `salon train`."""
    work = tmp_path_factory.mktemp("run-folder")
    out = work / "run"
    done = salon("train", SMOKE, "--output-dir", out, "--max-steps", "1", env={"HF_HOME": str(work / "hf")})
    assert done.returncode == 0, done.stderr[-3000:]
    return {"out": out, "work": work}


def test_a_second_run_into_the_same_folder_is_refused_in_one_line(first):
    out = first["out"]
    before = shards(out)
    done = salon("train", SMOKE, "--output-dir", out, "--max-steps", "1", timeout=120)
    err = done.stderr.strip()
    assert done.returncode == 2 and "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"salon train: {out} already holds a run (1 checkpoint(s), 1 rollout shard(s))")
    for way in ("--resume latest", "a new --output-dir", "--overwrite"):
        assert way in err
    assert shards(out) == before and sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1"]


def test_overwrite_and_resume_together_are_refused(first):
    assert main(["train", SMOKE, "--output-dir", str(first["out"]), "--overwrite", "--resume", "latest"]) == 2


@pytest.fixture(scope="module")
def overwritten(first):
    """A copy of the first run, trained over with --overwrite (gradient checkpointing on, warnings shown)."""
    out = first["work"] / "over"
    shutil.copytree(first["out"], out)
    done = salon("train", SMOKE, "--output-dir", out, "--max-steps", "2", "--overwrite",
                 "--set", "grpo.gradient_checkpointing=true",
                 env={"HF_HOME": str(first["work"] / "hf"), "PYTHONWARNINGS": "default"})
    assert done.returncode == 0, done.stderr[-3000:]
    return {"out": out, "done": done, "old": shards(first["out"])}


def test_overwrite_moves_the_old_run_aside_and_says_where(overwritten):
    out = overwritten["out"]
    aside = [p for p in out.parent.iterdir() if p.name.startswith("over.old-")]
    assert len(aside) == 1
    assert shards(aside[0]) == overwritten["old"] and (aside[0] / "checkpoint-1" / "trainer_state.json").is_file()
    one_run(aside[0], 1)
    one_run(out, 2)  # the new run from step 0, nothing of the old one in its archive
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    assert f"is now in {aside[0]}" in overwritten["done"].stdout
    assert f"moved to {aside[0]}" in overwritten["done"].stderr  # said when it happened, too


def test_gradient_checkpointing_warns_nothing(overwritten):
    err = overwritten["done"].stderr
    assert "Warning" not in err and "deprecated" not in err, err  # TRL's generation toggles it every step


def test_resume_without_a_checkpoint_sets_the_old_rollouts_aside(first):
    """A run stopped before its first checkpoint, resumed with --resume latest: it starts at step 0 again,
    and the rollouts of the first try move to superseded/ instead of standing beside the new ones."""
    out = first["work"] / "no-checkpoint"
    shutil.copytree(first["out"], out)
    shutil.rmtree(out / "checkpoint-1")
    old = shards(out)
    done = salon("train", SMOKE, "--output-dir", out, "--max-steps", "1", "--resume", "latest",
                 env={"HF_HOME": str(first["work"] / "hf")})
    assert done.returncode == 0, done.stderr[-3000:]
    one_run(out, 1)
    assert sorted(p.name for p in (out / "rollouts" / "superseded").iterdir()) == old


def test_a_mixed_archive_is_refused_by_audit_eval_and_compare(tmp_path, capsys):
    run = write_synthetic_run(tmp_path / "mixed", collapse=False, steps=3)
    first_shard = sorted((run / "rollouts" / "data").glob("step-000000-*.parquet"))[0]
    shutil.copy(first_shard, first_shard.with_name("step-000000-p00-secondrun.parquet"))  # a second run's step 0
    shutil.copy(SMOKE, run / "salon_train.yaml")  # what salon eval reads first
    for argv in (["audit", str(run)], ["compare", str(run)], ["eval", str(run), *EVAL_ARGS]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"salon {argv[0]}: {run}: the rollout archive holds 8 rollout(s) more than once "
                              "(step 0, group 0-0, position 0, process 0;"), err
        assert "a new --output-dir" in err and "--overwrite" in err and "\n" not in err.strip()
    assert not (run / "eval").exists()  # refused before anything was evaluated


def test_a_folder_without_rollouts_is_one_sentence(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for folder, what in ((tmp_path / "empty", "holds no rollouts (no rollouts/data/step-*.parquet)"),
                         (tmp_path / "absent", "does not exist")):
        assert main(["audit", str(folder)]) == 2
        assert capsys.readouterr().err == (f"salon audit: {folder} {what}: give the --output-dir of a `salon train` "
                                           "run that trained at least one step\n")
