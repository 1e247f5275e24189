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


def bench_args(**given) -> argparse.Namespace:
    args = dict(steps=2, profile="", tokens=32, prompts_per_step=1, workers=1, browsers=1, set=[], cpu=False,
                out="/tmp/bench")
    return argparse.Namespace(**{**args, **given})


@pytest.mark.parametrize("name, variant, given, label", [
    ("compiled", None, {}, "compiled@render.gpu=auto"),                                  # nothing overrides it
    ("as_filed", ["grpo.beta=0.01", "render.gpu=off"], {}, "as_filed@render.gpu=off"),  # the committed mislabel
    ("compiled", None, {"set": ["render.gpu=on"]}, "compiled@render.gpu=on"),           # --set after the bench's
    ("own", ["render.gpu=off"], {"set": ["render.gpu=on"]}, "own@render.gpu=off"),      # a variant's pairs last
    ("plain", ["grpo.beta=0"], {"set": ["render.gpu=on"]}, "plain@render.gpu=on"),
])
def test_a_run_is_labelled_by_the_render_gpu_it_ran_with(name, variant, given, label):
    assert bench.run_label(bench_args(**given), name, variant, "auto") == label


def test_the_label_is_what_load_config_makes_of_the_overrides():
    from salon.train.config import load_config

    args = bench_args(set=["render.gpu=on"])
    overrides = bench.run_overrides(args, "as_filed", ["render.workers=2", "render.gpu=off"], "auto")
    config = load_config(str(Path(bench.REPO) / "train" / "configs" / "lora_1gpu.yaml"), overrides)
    assert bench.ran_with(overrides, "render.gpu") == config.render.gpu == "off"
    assert config.render.workers == 2 and config.grpo.max_completion_length == 32


def test_a_variants_own_max_steps_overrides_steps_for_its_run_alone():
    from salon.train.config import load_config

    recipe = str(Path(bench.REPO) / "train" / "configs" / "lora_h200_64.yaml")
    args = bench_args(steps=5)
    shorter = load_config(recipe, bench.run_overrides(args, "synchronous", ["grpo.max_staleness=0",
                                                                            "grpo.max_steps=3"], "auto"))
    other = load_config(recipe, bench.run_overrides(args, "overlapped", ["grpo.max_staleness=1"], "auto"))
    assert (shorter.grpo.max_steps, other.grpo.max_steps) == (3, 5)


def test_rows_and_files_name_what_ran_and_a_variant_that_sets_it_runs_once(tmp_path, monkeypatch):
    """main() with each run's process stood in for: it loads the run's config as the real one does and
    reports the render.gpu it holds; --render-paths on,off beside a variant that sets render.gpu=off."""
    from salon.train.config import load_config

    config = str(Path(bench.REPO) / "train" / "configs" / "lora_1gpu.yaml")
    ran = []

    def one_run(cmd, **_):
        at = {k: cmd[cmd.index(k) + 1] for k in ("--one", "--one-render", "--part")}
        pairs = {"as_filed": ["render.gpu=off"]}.get(at["--one"], [])
        loaded = load_config(config, [f"render.gpu={at['--one-render']}", *pairs])
        ran.append((at["--one"], loaded.render.gpu))
        row = {"step": 1, **{k: 1.0 for k in bench.KEYS if k != "peak_memory_gib"}}
        Path(at["--part"]).parent.mkdir(parents=True, exist_ok=True)
        Path(at["--part"]).write_text(json.dumps({
            "steps": [row, {**row, "step": 2}], "peak_memory_gib": 0.0, "render_gl": ["swiftshader"],
            "render_waits": {}, "profile": None, "render_gpu": loaded.render.gpu}))
        return argparse.Namespace(returncode=0)

    monkeypatch.setattr(bench.subprocess, "run", one_run)
    monkeypatch.setattr(bench, "render_references", lambda folder, gpu: folder)
    steps, side = tmp_path / "steps.json", tmp_path / "side.json"
    assert bench.main(["--config", config, "--engines", "compiled", "--variant", "as_filed", "render.gpu=off",
                       "--render-paths", "on,off", "--render-json", str(side), "--steps-json", str(steps),
                       "--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "out")]) == 0
    assert ran == [("compiled", "on"), ("compiled", "off"), ("as_filed", "off")]
    assert sorted(json.loads(steps.read_text())["runs"]) == ["as_filed@render.gpu=off", "compiled@render.gpu=off",
                                                             "compiled@render.gpu=on"]
    assert list(json.loads(side.read_text())["render_paths"]) == ["off"]  # as_filed's, written last


def test_a_run_that_wrote_its_figures_and_then_died_keeps_them_and_the_call_fails(tmp_path, monkeypatch, capsys):
    """A run's process killed by a signal after it wrote its part (a crash in the interpreter's teardown) keeps
    its row, said so; one that wrote nothing has none; either makes the call fail."""
    config = str(Path(bench.REPO) / "train" / "configs" / "lora_1gpu.yaml")

    def one_run(cmd, **_):
        at = {k: cmd[cmd.index(k) + 1] for k in ("--one", "--part")}
        if at["--one"] == "wrote":
            row = {"step": 1, **{k: 1.0 for k in bench.KEYS if k != "peak_memory_gib"}}
            Path(at["--part"]).parent.mkdir(parents=True, exist_ok=True)
            Path(at["--part"]).write_text(json.dumps({
                "steps": [row, {**row, "step": 2}], "peak_memory_gib": 0.0, "render_gl": ["swiftshader"],
                "render_waits": {}, "profile": None, "render_gpu": "off"}))
            return argparse.Namespace(returncode=-11)
        return argparse.Namespace(returncode=1)

    monkeypatch.setattr(bench.subprocess, "run", one_run)
    monkeypatch.setattr(bench, "render_references", lambda folder, gpu: folder)
    out = tmp_path / "r.json"
    assert bench.main(["--config", config, "--engines", "", "--variant", "wrote", "render.gpu=off",
                       "--variant", "nothing", "render.gpu=off", "--json", str(out),
                       "--out", str(tmp_path / "out")]) == 1
    assert list(json.loads(out.read_text())["engines"]) == ["wrote"]
    said = capsys.readouterr().out
    assert "wrote@render.gpu=off: the run wrote its figures, then its process exited with -11" in said
    assert "nothing@render.gpu=off: the run failed" in said
