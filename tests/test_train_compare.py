"""`salon compare`: two synthetic runs side by side (one collapses), one with an eval report."""

from __future__ import annotations

import json

import pytest

from salon.apps.cli import main
from train_support import write_synthetic_eval, write_synthetic_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from salon.train.eval.config import EvalConfig
    from salon.train.eval.report import build_report

    root = tmp_path_factory.mktemp("compare")
    collapse = write_synthetic_run(root / "collapse", collapse=True)
    healthy = write_synthetic_run(root / "healthy", collapse=False, seed=1)
    (collapse / "salon_train.yaml").write_text("{}")
    store = write_synthetic_eval(collapse, proxy=[0.5, 0.6, 0.7], oracle=[0.7, 0.8, 0.3], coverage=[0.9, 0.9, 0.25])
    report = build_report(store.frame(), [], ["judge"], EvalConfig(str(collapse)))
    (collapse / "eval" / "report.json").write_text(json.dumps(report, default=float))
    return {"collapse": collapse, "healthy": healthy, "root": root}


def test_table_by_thirds(runs, capsys):
    from salon.train.record.archive import load_rollouts

    plot = runs["root"] / "curves.png"
    assert main(["compare", str(runs["collapse"]), str(runs["healthy"]), "--json", "--plot", str(plot)]) == 0
    table = json.loads(capsys.readouterr().out)
    collapse, healthy = table["runs"]
    assert collapse["thirds"] == [[0, 9], [10, 19], [20, 29]] and collapse["steps"] == 30
    df = load_rollouts(runs["collapse"], images=False)
    last = df[df["step"] >= 20]
    assert collapse["mean_reward"][2] == pytest.approx(last["reward"].mean())
    assert collapse["under_0.3"][2] == int((last["reward"] < 0.3).sum())
    assert collapse["mean_reward"][0] < collapse["mean_reward"][1] < collapse["mean_reward"][2]
    assert collapse["coverage_last"] < collapse["coverage_first"] - 0.1  # the template took over
    assert healthy["coverage_last"] == pytest.approx(healthy["coverage_first"], abs=0.08)
    assert collapse["median_gain"] > 0 and collapse["best_of_step_gain"] is not None
    assert collapse["eval"]["best_by_proxy"] == 20 and collapse["eval"]["best_by_oracle"] == 10
    assert collapse["eval"]["oracle_at_best_proxy"] == pytest.approx(0.3, abs=0.02)
    assert collapse["eval"]["alarms"] > 0 and healthy["eval"] is None
    from PIL import Image

    with Image.open(plot) as im:
        im.load()
        assert im.format == "PNG" and table["plot"] == str(plot)


def test_text_table_names_every_figure_and_writes_nothing_without_plot(runs, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the folder it is run from: salon-compare.png used to land here
    assert main(["compare", str(runs["collapse"]), str(runs["healthy"])]) == 0
    out = capsys.readouterr().out
    for label in ("mean reward, first third", "under 0.3, last third", "coverage, last third",
                  "best-of-step gain", "median gain", "eval: best by oracle"):
        assert label in out
    assert "collapse" in out.splitlines()[0] and "healthy" in out.splitlines()[0]
    assert "figure:" not in out and list(tmp_path.iterdir()) == []
