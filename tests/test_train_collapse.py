"""The collapse alarm (salon.train.record.audit_collapse): a recorded run whose reward and gate pass fall from
their best window rings in `salon audit` and in the training log, naming the checkpoint before the
fall and what failed most; a run that holds stays silent."""

from __future__ import annotations

import json
import logging

import pytest

from salon.apps.cli import main
from salon.pool.errors import ConfigError
from salon.train.record.audit_collapse import FallWatch
from salon.train.config import AuditSettings
from salon.train.record.recorder import Recorder
from train_support import FALL_ERROR, learn_tiny_steps, write_learn_tiny_run

FALLS = {"reward_falls_from_best", "gate_pass_falls_from_best"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("collapse")
    (root / "fall").mkdir()
    (root / "hold").mkdir()
    return {"fall": write_learn_tiny_run(root / "fall", fall=True),
            "hold": write_learn_tiny_run(root / "hold", fall=False)}


def check_fall_alarm(alarm: dict, run_dir) -> None:
    # the best 5-step window is steps 12..16 (no failure); at step 19 the window 15..19 holds 18 failures
    # of 80: runtime errors 4 + 5 + 7 of steps 17..19, a timeout in each of steps 18 and 19
    assert alarm["step"] == 19
    assert alarm["best"]["steps"] == [12, 16] and alarm["fallen"]["steps"] == [15, 19]
    assert alarm["checkpoint"] == str(run_dir / "checkpoint-16")  # saved every 4 steps: 16 wrote step 16
    failures = alarm["failures"]
    assert (failures["rollouts"], failures["failed"]) == (80, 18)
    assert list(failures["violations"].items()) == [("runtime_error", 16), ("timeout", 2)]
    assert failures["js_error"] == {"message": FALL_ERROR, "rollouts": 16}


def test_a_run_that_falls_rings_naming_the_checkpoint_and_what_failed(runs, capsys):
    code = main(["audit", str(runs["fall"]), "--json", "--no-figures"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    falls = {a["name"]: a for a in report["alarms"] if a["name"] in FALLS}
    assert set(falls) == FALLS
    for alarm in falls.values():
        check_fall_alarm(alarm, runs["fall"])
    gate, reward = falls["gate_pass_falls_from_best"], falls["reward_falls_from_best"]
    assert gate["best"]["value"] == pytest.approx(1.0) and gate["fallen"]["value"] == pytest.approx(62 / 80)
    # 0.1 + 0.9 x judge: judge 0.30 + 0.01 a step over 12..16 (offsets average 0); over 15..19 the
    # passing rollouts of steps 15..19 sum to 8.08 + 8.224 + 5.736 + 4.6 + 3.536
    assert reward["best"]["value"] == pytest.approx(0.496, abs=1e-9)
    assert reward["fallen"]["value"] == pytest.approx(30.176 / 80, abs=1e-9)


def test_the_text_report_says_it_in_one_line(runs, capsys):
    assert main(["audit", str(runs["fall"]), "--no-figures"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if "gate_pass_falls_from_best" in x)
    assert line.startswith("ALARM step 19: gate_pass_falls_from_best: gate_pass 1.000 over steps 12..16 -> 0.775")
    assert f"the last checkpoint before it: {runs['fall'] / 'checkpoint-16'}" in line
    assert "runtime_error in 16 of 80 rollouts, timeout in 2" in line and FALL_ERROR in line


def test_a_run_that_holds_stays_silent(runs, capsys):
    code = main(["audit", str(runs["hold"]), "--json", "--no-figures"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["alarms"] == []


@pytest.mark.parametrize("fall", [True, False])
def test_the_training_log_warns_once_per_fall_and_logs_the_alarm_every_step(runs, caplog, fall):
    run_dir = runs["fall" if fall else "hold"]
    recorder = Recorder(["gate", "length", "judge"], audit=AuditSettings(), run_dir=run_dir)
    logged: dict[int, dict[str, float]] = {}
    with caplog.at_level(logging.WARNING, logger="salon.train.record.recorder"):
        for step, rollouts in learn_tiny_steps(fall).items():
            recorder.record(rollouts, step, lambda name, value, s=step: logged.setdefault(s, {}).update({name: value}))
    warned = [r.getMessage() for r in caplog.records if "_falls_from_best" in r.getMessage()]
    if not fall:
        assert warned == [] and not any(f"salon/alarm/{name}" in m for m in logged.values() for name in FALLS)
        assert all(m["salon/fall_from_best/gate_pass"] <= 0.1 for s, m in logged.items() if s >= 4)
        return
    # the fall holds from step 19 to the end (23): one line each, at step 19, as `salon audit` says it
    assert len(warned) == 2 and all(w.startswith("audit alarm at step 19: ") for w in warned)
    assert all(str(run_dir / "checkpoint-16") in w and "runtime_error in 16 of 80 rollouts" in w for w in warned)
    for name in FALLS:
        assert [s for s, m in logged.items() if m.get(f"salon/alarm/{name}") == 1.0] == [19, 20, 21, 22, 23]
    assert logged[19]["salon/fall_from_best/gate_pass"] == pytest.approx(1 - 62 / 80)
    assert logged[16]["salon/fall_from_best/gate_pass"] == pytest.approx(0.0)


def rows(step: int, passed: int, failed: int = 0, unavailable: int = 0) -> list[dict]:
    """One step's rows: `passed` through the gate, `failed` not (runtime_error), `unavailable` not rendered."""
    return ([{"step": step, "reward": None, "gate_passed": True}] * passed
            + [{"step": step, "reward": None, "gate_passed": False, "violations": ["runtime_error"]}] * failed
            + [{"step": step, "reward": None, "gate_passed": False, "render_unavailable": True}] * unavailable)


def test_a_fall_rings_again_only_after_it_came_back():
    watch = FallWatch(AuditSettings(fall_window=2))
    plan = [(40, 0), (40, 0), (20, 20), (20, 20), (40, 0), (40, 0), (20, 20), (20, 20)]
    rang = {step: [a["name"] for a in watch.add(step, rows(step, *counts))] for step, counts in enumerate(plan)}
    # no reward in these rows (all missing): only gate pass is watched. Step 2's window (steps 1..2) is
    # 0.75, past the 0.2 margin; steps 3 and 4 (0.5, 0.75) are the same fall; step 5 is back at 1.0
    assert {s: names for s, names in rang.items() if names} == {2: ["gate_pass_falls_from_best"],
                                                                6: ["gate_pass_falls_from_best"]}
    assert watch.fallen() == ["gate_pass_falls_from_best"] and watch.falls() == {"gate_pass": pytest.approx(0.5)}


def test_an_outage_is_not_a_fall_and_a_small_window_needs_more_than_its_noise():
    # every render unavailable for two steps: left out of gate pass, so nothing fell
    outage = FallWatch(AuditSettings(fall_window=2))
    for step, counts in enumerate([(40, 0, 0), (40, 0, 0), (0, 0, 40), (0, 0, 40)]):
        assert outage.add(step, rows(step, *counts)) == []
    # 4 rollouts a step: 1.0 -> 0.75 is past the 0.2 margin, not past two standard errors (0.31)
    small = FallWatch(AuditSettings(fall_window=2))
    assert [a for step, counts in enumerate([(4, 0), (4, 0), (3, 1), (3, 1)])
            for a in small.add(step, rows(step, *counts))] == []


def test_the_alarms_settings_are_checked_together():
    with pytest.raises(ConfigError) as e:
        AuditSettings(fall_window=1, reward_fall=0, gate_pass_fall=1.5)
    text = str(e.value)
    assert "audit.fall_window=1" in text and "audit.reward_fall=0" in text and "audit.gate_pass_fall=1.5" in text
