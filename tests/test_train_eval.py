"""`salon eval`: the smoke run's checkpoints on two held-out subjects, and engineered evals.

The shared smoke run (conftest `smoke_run`, 3 steps) is evaluated once (`smoke_eval`: base + 3
checkpoints x 2 subjects x 2 samples, a paint_fraction oracle and one that is always down); a
resumed second call must redo nothing. Alarms and win rates are checked on evals written at the
data level (train_support.write_synthetic_eval), where a wrong rule would give a wrong answer.
"""

from __future__ import annotations

import json

import pytest

from salon.apps.cli import main
from train_support import EVAL_ARGS, EVAL_ORACLES, EVAL_SUBJECTS, write_synthetic_eval

KEYS = {"step", "proxy_mean", "oracle_mean", "coverage", "blank_share", "cross_prompt_similarity", "gate_pass"}


@pytest.mark.browser
@pytest.mark.slow
class TestSmokeEval:
    def test_report_has_every_checkpoint(self, smoke_eval):
        report = smoke_eval["report"]
        assert smoke_eval["code"] == 0 and report["alarms"] == []  # identical stand-in paintings: nothing moved
        assert [r["step"] for r in report["checkpoints"]] == [0, 1, 2, 3]
        for row in report["checkpoints"]:
            assert KEYS <= set(row)
            assert row["samples"] == 4 and row["gate_pass"] == pytest.approx(0.5)  # smoke: 1 example per prompt
            assert 0 < row["oracle_mean"] < 1 and row["proxy_mean"] is not None and row["seconds"] > 0
            assert row["oracles"]["down"] is None and row["oracle_missing"] == {"paint_fraction": 0, "down": 2}
        for best, key in (("best_by_proxy", "proxy_mean"), ("best_by_oracle", "oracle_mean")):
            top = max(r[key] for r in report["checkpoints"])  # the first checkpoint at the top, within 1e-6
            assert report[best] == next(r["step"] for r in report["checkpoints"] if r[key] >= top - 1e-6), best
        assert report["missing"]["oracle_down"] == 8  # counted: 2 passing paintings x 4 checkpoints
        # and why, summed up over the run
        assert report["missing_reasons"] == {"oracle_down": [{"reason": "ConnectionError: scorer unreachable",
                                                              "count": 8}]}
        assert [(p["subject"], p["held_out"]) for p in report["prompts"]] == [(s, True) for s in EVAL_SUBJECTS]
        assert report["evaluated"] == [0, 1, 2, 3] and report["resumed"] == []

    def test_rows_load_with_datasets(self, smoke_eval):
        from salon.train.eval.dataset import load_eval_dataset

        ds = load_eval_dataset(smoke_eval["out"])
        assert len(ds) == 4 * 2 * 2 and sorted(set(ds["step"])) == [0, 1, 2, 3]
        assert {"step", "prompt", "seed", "code", "image", "reward", "reward_judge", "gate_passed", "sample_id",
                "oracle_paint_fraction", "oracle_down", "coverage", "colourfulness"} <= set(ds.column_names)
        assert len(set(ds["sample_id"])) == len(ds)
        for row in ds:
            assert row["oracle_down"] is None  # a failed oracle is missing, never 0
            if row["gate_passed"]:
                assert row["image"].size == (600, 600) and row["reward"] is not None
                assert row["oracle_paint_fraction"] == pytest.approx(row["paint_fraction"], abs=0.01)
                assert row["oracle_missing"] == ["down"]
                assert row["oracle_down_reason"] == "ConnectionError: scorer unreachable"  # stored with its reason
                assert row["oracle_paint_fraction_reason"] is None
            else:
                assert row["oracle_paint_fraction"] is None and row["reward"] == pytest.approx(0.0)  # the gate's penalty
        # sample k of a prompt has one seed at every checkpoint, so checkpoints compare like for like
        seeds = {(r["prompt"], r["position"], r["seed"]) for r in ds}
        assert len(seeds) == 2 * 2

    def test_plots_are_pngs(self, smoke_eval):
        from PIL import Image

        plots = smoke_eval["report"]["plots"]
        assert [p.rsplit("/", 1)[1] for p in plots] == ["proxy_oracle.png", "craft.png", "grid.png"]
        for p in plots:
            with Image.open(p) as im:
                im.load()
                assert im.format == "PNG" and im.width > 300
        with Image.open(plots[2]) as grid:  # a line per checkpoint, a column per prompt and seed
            assert grid.height >= 4 * 128 and grid.width >= 4 * 128

    def test_resume_redoes_nothing(self, smoke_eval, capsys):
        code = main(["eval", str(smoke_eval["out"]), *EVAL_ARGS, "--resume", "--json"])
        report = json.loads(capsys.readouterr().out)
        assert code == 0 and report["evaluated"] == [] and report["resumed"] == [0, 1, 2, 3]
        shards = {p.name: p.stat().st_mtime_ns for p in (smoke_eval["out"] / "eval" / "data").glob("*.parquet")}
        assert shards == smoke_eval["shards"]  # not one shard rewritten
        before = {r["step"]: r["proxy_mean"] for r in smoke_eval["report"]["checkpoints"]}
        assert {r["step"]: r["proxy_mean"] for r in report["checkpoints"]} == pytest.approx(before)

    def test_the_output_ends_with_what_is_missing_and_why(self, smoke_eval, capsys):
        assert main(["eval", str(smoke_eval["out"]), *EVAL_ARGS, "--resume"]) == 0
        lines = capsys.readouterr().out.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("missing (never scored 0): "))
        assert "oracle_down 8" in lines[at] and lines[at + 1] == "  oracle_down 8 x ConnectionError: scorer unreachable"

    def test_reward_model_and_pairwise_oracles(self, smoke_eval):
        from salon.train.config import load_config
        from salon.train.eval.dataset import load_eval_dataset
        from salon.train.eval.oracles import Oracle, parse_oracle
        from salon.train.recipe import build_references

        out = smoke_eval["out"]
        cfg = load_config(out / "salon_train.yaml")
        paintings = [row["image"] for row in load_eval_dataset(out) if row["gate_passed"]][:2]
        for spec in ("hpsv3,model=tiny:hpsv3", "transformers,model=tiny:qwen2_vl,label=other_vlm"):
            oracle = Oracle(parse_oracle(spec), out, cfg, build_references(cfg, out))
            scores, reasons = oracle.score(paintings, "a sunflower head seen from the front, in loose watercolour")
            assert len(scores) == 2 and all(0 <= v <= 1 for v in scores) and reasons == [None, None], (spec, scores)
        assert oracle.pairwise and oracle.references is not None  # the run's references, one draw per prompt

    def test_a_shard_made_otherwise_is_redone(self, smoke_eval):
        from salon.train.config import load_config
        from salon.train.eval.config import EvalConfig, eval_subjects
        from salon.train.eval.dataset import EvalDataset, fingerprint
        from salon.train.eval.oracles import parse_oracle
        from salon.train.eval.evaluate import eval_settings

        out = smoke_eval["out"]
        cfg = load_config(out / "salon_train.yaml")

        def made_with(samples: int) -> str:
            c = EvalConfig(str(out), prompts=EVAL_SUBJECTS, samples=samples, oracles=EVAL_ORACLES)
            return fingerprint(eval_settings(cfg, c, eval_subjects(cfg, c.prompts), [parse_oracle(o) for o in c.oracles]))

        stored = {EvalDataset(out).done(s)["fingerprint"] for s in (0, 1, 2, 3)}
        assert stored == {made_with(2)} and made_with(3) != made_with(2)  # --resume --samples 3 redoes them


def test_alarm_fires_when_proxy_rises_and_oracle_falls(tmp_path):
    from salon.train.eval.config import EvalConfig
    from salon.train.eval.report import build_report

    (tmp_path / "hack").mkdir()
    (tmp_path / "hack" / "salon_train.yaml").write_text("{}")
    config = EvalConfig(str(tmp_path / "hack"))
    # the collapse study: held-out reward 0.51 -> 0.64 while the outcome fell and a template spread
    store = write_synthetic_eval(tmp_path / "hack", proxy=[0.51, 0.55, 0.60, 0.64], oracle=[0.76, 0.70, 0.40, 0.23],
                                 coverage=[0.9, 0.85, 0.25, 0.25])
    report = build_report(store.frame(), [], ["judge"], config)
    names = {(a["name"], a["step"]) for a in report["alarms"]}
    assert ("judge_falls_while_proxy_rises", 20) in names and ("judge_falls_while_proxy_rises", 30) in names
    assert ("coverage_falls_while_proxy_rises", 20) in names
    assert ("cross_prompt_similarity_rises_while_proxy_rises", 20) in names  # one template for every prompt
    oracle = next(a for a in report["alarms"] if a["name"] == "judge_falls_while_proxy_rises" and a["step"] == 30)
    assert oracle["since"] == 0 and oracle["value"] == pytest.approx([0.76, 0.23], abs=0.02)
    assert report["best_by_proxy"] == 30 and report["best_by_oracle"] == 0

    (tmp_path / "good").mkdir()
    healthy = write_synthetic_eval(tmp_path / "good", proxy=[0.51, 0.55, 0.60, 0.64], oracle=[0.50, 0.55, 0.62, 0.70],
                                   coverage=[0.8, 0.8, 0.85, 0.85])
    quiet = build_report(healthy.frame(), [], ["judge"], config)
    assert quiet["alarms"] == [] and quiet["best_by_oracle"] == 30


def test_blind_choices_become_wilson_win_rates(tmp_path):
    from salon.train.eval.config import EvalConfig
    from salon.train.eval.report import build_report, wilson
    from salon.train.eval.reviews import Reviews

    (tmp_path / "salon_train.yaml").write_text("{}")
    store = write_synthetic_eval(tmp_path, proxy=[0.5, 0.6], oracle=[0.5, 0.5], coverage=[0.8, 0.8], prompts=1,
                                 samples=1)
    frame = store.frame(images=False)
    base, late = (frame[frame["step"] == s].iloc[0].to_dict() for s in (0, 10))
    with Reviews.open(tmp_path) as reviews:
        for i in range(10):  # the late checkpoint wins 8 of 10, shown on either side
            left, right = (base, late) if i % 2 else (late, base)
            winner = ("right" if i % 2 else "left") if i < 8 else ("left" if i % 2 else "right")
            reviews.add_choice(left, right, winner, "ann", run="synthetic")
        with pytest.raises(Exception, match="two different checkpoints"):
            reviews.add_choice(base, base, "left", "ann", run="synthetic")
        choices = reviews.choices()
    assert wilson(8, 10) == pytest.approx((0.490, 0.943), abs=0.001)
    report = build_report(store.frame(), choices, ["judge"], EvalConfig(str(tmp_path)))
    rows = {r["step"]: r for r in report["checkpoints"]}
    assert rows[10]["human_win_rate"] == pytest.approx(0.8) and rows[0]["human_win_rate"] == pytest.approx(0.2)
    assert (rows[10]["human_low"], rows[10]["human_high"]) == pytest.approx((0.490, 0.943), abs=0.001)
    assert report["best_by_human"] == 10 and report["human"]["comparisons"] == 10
    assert "Wilson" in report["human"]["method"]
    assert {(c.left_step, c.right_step) for c in choices} == {(0, 10), (10, 0)}  # provenance, as shown


def test_every_n_steps_keeps_the_last(tmp_path):
    from salon.train.eval.evaluate import select_checkpoints

    for step in (5, 10, 15, 20, 23):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "checkpoint-latest").mkdir()  # not a step: ignored
    assert [s for s, _ in select_checkpoints(tmp_path, every=10, base=True)] == [0, 10, 20, 23]
    assert [s for s, _ in select_checkpoints(tmp_path, every=0, base=False)] == [5, 10, 15, 20, 23]
