"""CPU smoke runs of `salon train` with smoke.yaml: tiny policy, tiny VLM judge, real rendering.

2 GRPO steps, then a resume to step 3 from the latest checkpoint; and a run whose judge fails for
every other painting. Offline (HF_HUB_OFFLINE=1); about a minute and a half on two cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from salon.apps.cli import main
from train_support import SMOKE

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module", autouse=True)
def offline(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def run(smoke_run):
    return smoke_run  # conftest: 2 steps, then resumed to 3; shared with the eval and app tests


def lora_weights(checkpoint: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(checkpoint / "adapter_model.safetensors")


def test_a_checkpoint_per_step_and_resume(run):
    out = run["out"]
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
    for p in out.glob("checkpoint-*"):
        assert (p / "salon_train.yaml").is_file() and (p / "optimizer.pt").is_file()
    state = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    assert any("salon/gate_pass" in entry for entry in state["log_history"])


def test_metrics_reach_trackio_locally(run):
    import os
    import sqlite3

    db = Path(os.environ["TRACKIO_DIR"]) / "salon.db"  # project "salon"
    rows = sqlite3.connect(db).execute("select step, metrics from metrics").fetchall()
    logged = [json.loads(m) for _, m in rows]
    assert any({"train/salon/gate_pass", "train/salon/judge/mean", "train/salon/none"} <= set(m) for m in logged)


def test_parameters_change(run):
    after_2, after_3 = run["lora_after_2"], lora_weights(run["out"] / "checkpoint-3")
    b = [k for k in after_2 if "lora_B" in k]
    assert b and all(after_2[k].abs().sum() > 0 for k in b)  # LoRA B starts at zero
    assert any((after_2[k] - after_3[k]).abs().sum() > 0 for k in after_2)  # the resumed step trained too


def test_every_rollout_archived_with_its_components(run):
    from salon.train.record.archive import load_rollouts_dataset

    ds = load_rollouts_dataset(run["out"])
    assert len(ds) == 3 * 4  # 3 steps x batch of 4 completions
    assert sorted(set(ds["step"])) == [0, 1, 2]
    assert {f"reward_{c}" for c in ("gate", "length", "judge", "paint_fraction", "composition",
                                    "colourfulness")} <= set(ds.column_names)
    assert ds["checkpoint"].count("base") == 4 and ds["checkpoint"].count("checkpoint-2") == 4
    for row in ds:
        assert row["reward"] is not None and row["reward_gate"] in (0.0, 1.0) and row["reward_length"] is not None
        if row["gate_passed"]:
            assert row["image"].size == (600, 600) and row["reward_judge"] is not None
            assert row["substituted_example"]  # the tiny policy's own text never passes the gate
        else:
            assert row["reward"] == 0.0
        assert len(row["references"]) == 2 and row["judge"].startswith("transformers:")
    card = (run["out"] / "rollouts" / "README.md").read_text()
    assert "judge" in card and "Run config" in card


def test_audit_reads_the_run(run, capsys):
    assert main(["audit", str(run["out"]), "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in report["steps"]] == [0, 1, 2] and report["rollouts"] == 12
    assert (run["out"] / "audit" / "grids" / "step-000000.png").is_file()  # written live during training


def test_judge_failures_are_none_and_counted_not_zero(tmp_path):
    out = tmp_path / "flaky"
    assert main(["train", SMOKE, "--output-dir", str(out), "--max-steps", "1",
                 "--set", "judge.name=train_support:FlakyJudge",
                 "--set", "smoke.example_files=[still_02_teacup.js]"]) == 0
    from salon.train.record.archive import load_rollouts

    df = load_rollouts(out, images=False)
    failed = df[df["missing"].map(lambda m: "judge" in list(m))]
    assert len(failed) == 1 and failed["reward"].isna().all() and (failed["reward_gate"] == 1.0).all()
    state = json.loads((out / "checkpoint-1" / "trainer_state.json").read_text())
    logged = [e for e in state["log_history"] if "salon/judge_missing" in e][0]
    assert logged["salon/judge_missing"] == 1 and logged["salon/none"] == 1
