"""`salon audit` on synthetic archives: a run that collapses raises alarms, a healthy one does not."""

from __future__ import annotations

import json

import pytest

from salon.apps.cli import main
from train_support import write_synthetic_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    return {"collapse": write_synthetic_run(root / "collapse", collapse=True),
            "healthy": write_synthetic_run(root / "healthy", collapse=False)}


def test_collapsing_run_raises_alarms(runs, capsys):
    code = main(["audit", str(runs["collapse"]), "--json", "--window", "8"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    names = {a["name"] for a in report["alarms"]}
    assert names == {"coverage_falls_while_reward_rises", "diversity_collapses_while_reward_rises"}
    first, last = report["steps"][0], report["steps"][-1]
    assert last["coverage"] < first["coverage"] and last["reward/mean"] > first["reward/mean"]
    assert last["diversity_within"] < first["diversity_within"]
    assert all(a["step"] > 8 for a in report["alarms"])  # needs two windows of history first
    assert (runs["collapse"] / "audit" / "audit.png").is_file()
    assert any("/grids/step-" in f for f in report["figures"])


def test_healthy_run_stays_silent(runs, capsys):
    code = main(["audit", str(runs["healthy"]), "--json", "--window", "8"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["alarms"] == []
    assert report["overall"]["correlated"] == [] and report["overall"]["saturated"] == []
    step = report["steps"][5]
    for key in ("reward/bottom", "reward/median", "reward/top", "reward/under_0.3", "frac_reward_zero_std",
                "blank_share", "diversity_across", "judge/mean", "judge/std", "gate_pass"):
        assert step[key] is not None, key
    assert step["rollouts"] == 8


def test_correlated_and_saturated_components_are_flagged(runs):
    from salon.train.audit import window_checks
    from salon.train.config import AuditSettings

    rows = [{"reward_a": i / 10, "reward_b": i / 10 + 0.001 * (i % 2), "reward_c": 0.5} for i in range(12)]
    checks = window_checks(rows, ["a", "b", "c"], AuditSettings())
    assert checks["correlated"] == ["a~b"] and checks["saturated"] == ["c"]


def test_text_report_names_the_alarm(runs, capsys):
    assert main(["audit", str(runs["collapse"]), "--window", "8", "--no-figures"]) == 1
    out = capsys.readouterr().out
    assert "ALARM" in out and "coverage_falls_while_reward_rises" in out
