"""benchmarks/bench_train_gpu.py's --variant and its files written after each run, at the parse level:
no training, no GPU (the end-to-end check is the script's own --cpu run)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))  # as when run as a script

import bench_train_gpu as bench  # noqa: E402


def test_variants_map_names_to_their_pairs_in_order():
    named = bench.variants_of(["compiled"], [["fast", "grpo.generation_attention=buckets", "a.b=c=d"],
                                             ["plain"]])
    assert list(named) == ["fast", "plain"]
    assert named == {"fast": ["grpo.generation_attention=buckets", "a.b=c=d"], "plain": []}


@pytest.mark.parametrize("engines, variants, says", [
    (["compiled"], [["compiled", "x=1"]], "taken by an engine"),
    ([], [["a", "x=1"], ["a", "y=2"]], "taken by an earlier --variant"),
    ([], [["a/b", "x=1"]], "letters, digits"),
    ([], [["", "x=1"]], "letters, digits"),
    ([], [["a", "x"]], "KEY=VALUE"),
    ([], [["a", "=1"]], "KEY=VALUE"),
])
def test_variants_refused(engines, variants, says):
    with pytest.raises(ValueError, match=says):
        bench.variants_of(engines, variants)


@pytest.mark.parametrize("argv, says", [
    (["--engines", "compiled", "--variant", "compiled", "x=1"], "taken by an engine"),
    (["--variant", "a", "x"], "overrides are KEY=VALUE"),
    (["--engines", ""], "nothing to run"),
])
def test_main_refuses_at_parse_time(argv, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_reports_hold_the_finished_runs_and_the_earlier_engines(tmp_path):
    args = argparse.Namespace(json=str(tmp_path / "r.json"), steps_json=str(tmp_path / "s.json"), render_json="",
                              render_paths="", profile="", tokens=32, prompts_per_step=1)
    head = {"device": "CPU, 2 cores", "trl": "0", "num_generations": 8, "max_completion_length": 32}
    finished = bench.Finished()
    finished.engines["fast"] = {"step_s": 1.0}
    finished.steps["fast@render.gpu=off"] = [{"step": 1}]
    bench.write_reports(args, head, {"compiled": {"step_s": 2.0}}, finished)
    assert json.loads(Path(args.json).read_text()) == {**head, "engines": {"compiled": {"step_s": 2.0},
                                                                           "fast": {"step_s": 1.0}}}
    assert json.loads(Path(args.steps_json).read_text()) == {"device": head["device"],
                                                             "runs": {"fast@render.gpu=off": [{"step": 1}]}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "s.json"]  # no temporary file left


@pytest.mark.parametrize("config, prompts, workers", [("lora_1gpu.yaml", 1, 2), ("lora_h200_64.yaml", 8, 4)])
def test_the_recipe_sizes_the_step_and_the_browsers_unless_told(config, prompts, workers):
    path = str(Path(bench.REPO) / "train" / "configs" / config)
    given = argparse.Namespace(config=path, prompts_per_step=None, workers=None, browsers=None)
    bench.recipe_defaults(given)
    assert (given.prompts_per_step, given.workers, given.browsers) == (prompts, workers, 4)
    told = argparse.Namespace(config=path, prompts_per_step=2, workers=1, browsers=3)
    bench.recipe_defaults(told)
    assert (told.prompts_per_step, told.workers, told.browsers) == (2, 1, 3)


def test_a_missing_recipe_is_refused_at_parse_time(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--config", "no/such.yaml", "--engines", "compiled"])
    assert exit_.value.code == 2
    assert "no such config file" in capsys.readouterr().err
