"""The committed benchmark results keep the shapes their scripts write. Runs are compared by these keys
(bench_train_gpu_h200.json, bench_train_gpu_64_h200.json, bench_generate_gpu_h200.json, the H100's file
and the earlier calls'), so a hand merge that drops a field or a renamed one fails here first."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
sys.path.insert(0, str(RESULTS.parent))  # as when run as a script

import bench_train_gpu  # noqa: E402

TRAIN_HEAD = ["device", "trl", "num_generations", "max_completion_length", "engines"]
# one call each: salon's settings beside the earlier ones ("as_filed"), so every row's steps are in its steps file
ONE_CALL_FILES = ["bench_train_gpu_h200.json", "bench_train_gpu_64_h200.json", "bench_train_gpu_h100.json"]
# files whose every row is the mean of the steady steps in its steps file (one call or several merged)
STEADY_MEAN_FILES = [
    # two calls on one machine: the card split between the decode and the step beside it
    "bench_train_gpu_split_h100.json", "bench_train_gpu_64_split_h100.json",
    # three calls on one machine: two steps' rows decoded as one batch (grpo.max_staleness=2)
    "bench_train_gpu_stale2_h100.json",
    # a fourth call, on another H100 machine: its staleness-2 run died after its last step, no row
    "bench_train_gpu_stale2_call4_h100.json",
    # one call each, the overlapped step beside the synchronous one, the correction in the loss's forward
    "bench_train_gpu_overlap_h100.json", "bench_train_gpu_64_overlap_h100.json",
    # the run of train_step_profile_64_overlap_h100.json, its profiled step left out
    "bench_train_gpu_64_profile_h100.json",
    # one call: the decode kernel's empty programs returning at once, the LoRA's undone casts skipped
    "bench_train_gpu_64_casts_h100.json",
    # one call each on one machine: the judge's fused layers and the few-rows split; then the decode's part
    "bench_train_gpu_fused_h100.json", "bench_train_gpu_sms_h100.json",
    # one call: the decode ahead on the whole card once the trainer waits for it
    "bench_train_gpu_whole_card_h100.json"]
# measured while the bound counted each row's prompt, which the filled kernel reads once a group: its
# synchronous decode passed that bound (bench_train_gpu.generation_bound counts a prompt once a group since)
PER_ROW_PROMPT_BOUND = {"bench_train_gpu_64_casts_h100.json"}
# the files today's bench_train_gpu.py writes (the _variants file is of an earlier format, with its overrides)
TRAIN_FILES = [*ONE_CALL_FILES, "bench_train_gpu_earlier_h200.json", "bench_train_gpu_64_earlier_h200.json",
               "bench_train_gpu_64_h100.json",  # the overlapped step beside the synchronous one
               # on one machine, one call after the other: the whole cache, then the filled kernel at 8 rows
               "bench_train_gpu_carveout_h100.json", "bench_train_gpu_filled_h100.json", *STEADY_MEAN_FILES]


@pytest.mark.parametrize("name", TRAIN_FILES)
def test_a_train_file_has_the_head_and_every_engine_every_key(name):
    report = json.loads((RESULTS / name).read_text())
    assert list(report) == TRAIN_HEAD
    assert report["num_generations"] == bench_train_gpu.NUM_GENERATIONS
    assert report["engines"], "no engine measured"
    for engine, row in report["engines"].items():
        assert list(row) == list(bench_train_gpu.KEYS), engine
        assert all(isinstance(v, (int, float)) and v >= 0 for v in row.values()), engine
        # a share of a bound, not a percentage
        assert 0 < row["generation_share_of_bound"] < (1.5 if name in PER_ROW_PROMPT_BOUND else 1), engine


def steps_file(name: str) -> Path:
    """The per-step file bench_train_gpu.py's --steps-json wrote beside a train file."""
    return RESULTS / name.replace("bench_train_gpu", "bench_train_steps")


@pytest.mark.parametrize("name", TRAIN_FILES)
def test_a_train_files_steps_file_names_its_device_and_has_step_rows(name):
    steps = steps_file(name)
    if not steps.is_file():
        pytest.skip(f"{name} has no per-step file")
    report, runs = json.loads((RESULTS / name).read_text()), json.loads(steps.read_text())
    assert list(runs) == ["device", "runs"]
    assert runs["device"] == report["device"]
    for label, rows in runs["runs"].items():
        assert rows and all("step_s" in row for row in rows), label


@pytest.mark.parametrize("name", ONE_CALL_FILES)
def test_a_one_call_file_holds_the_earlier_settings_beside_salons_and_each_rows_steps(name):
    report = json.loads((RESULTS / name).read_text())
    runs = json.loads(steps_file(name).read_text())["runs"]
    assert "as_filed" in report["engines"] and len(report["engines"]) >= 2
    # a row merged in from another file would have no steps here
    assert set(report["engines"]) <= {label.split("@")[0] for label in runs}
    for engine, row in report["engines"].items():
        # the script's own means of the steps after the first (which compiles), rounded as it writes them
        # each run is labelled by the render.gpu it ran with (bench_train_gpu.py)
        (label,) = [label for label in runs if label.split("@")[0] == engine]
        means = bench_train_gpu.steady_mean({"steps": runs[label],
                                             "peak_memory_gib": row["peak_memory_gib"]})
        assert row == pytest.approx(means, abs=1e-6), engine


@pytest.mark.parametrize("name", STEADY_MEAN_FILES)
def test_a_merged_files_rows_are_the_means_of_their_steady_steps(name):
    report = json.loads((RESULTS / name).read_text())
    runs = json.loads(steps_file(name).read_text())["runs"]
    for engine, row in report["engines"].items():
        (label,) = [label for label in runs if label.split("@")[0] == engine]
        means = bench_train_gpu.steady_mean({"steps": runs[label], "peak_memory_gib": row["peak_memory_gib"]})
        assert row == pytest.approx(means, abs=1e-6), engine


def test_the_generation_file_has_every_batch_every_engine_its_share():
    report = json.loads((RESULTS / "bench_generate_gpu_h200.json").read_text())
    assert list(report) == ["device", "runs"]
    for run in report["runs"]:
        assert list(run) == ["batch", "new_tokens", "bound_tokens_per_s", "engines"]
        for engine, row in run["engines"].items():
            assert list(row) == ["tokens_per_s", "share_of_bound"], engine
            # the share is tokens/s over the bound, as written (4 digits)
            assert row["share_of_bound"] == pytest.approx(row["tokens_per_s"] / run["bound_tokens_per_s"],
                                                          abs=1e-3), engine


def test_an_overlapped_runs_means_leave_out_the_step_beside_the_compiling_one_and_the_last():
    # the second step's completions were decoded beside the compiling first; nothing decodes beside the last
    rows = [{"step": i + 1, "step_s": s, "staleness": float(i > 0)}
            for i, s in enumerate([65.0, 38.4, 40.1, 39.8, 23.3])]
    assert [r["step"] for r in bench_train_gpu.steady_steps(rows)] == [3, 4]
    synchronous = [dict(r, staleness=0.0) for r in rows]
    assert [r["step"] for r in bench_train_gpu.steady_steps(synchronous)] == [2, 3, 4, 5]
    assert [r["step"] for r in bench_train_gpu.steady_steps(rows[:3])] == [3]  # too few: the last, with a warning


def test_a_staleness_2_runs_means_leave_out_the_first_pair_and_keep_whole_pairs():
    # step 1 generated when asked; steps 2 and 3 beside it; then a step beside the next pair's decode and one
    # that waited for it, by turns
    stale = [0.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0]
    rows = [{"step": i + 1, "step_s": 7.0, "staleness": s} for i, s in enumerate(stale)]
    assert [r["step"] for r in bench_train_gpu.steady_steps(rows)] == [5, 6, 7, 8]  # an odd count: its first out
    assert [r["step"] for r in bench_train_gpu.steady_steps(rows[:6])] == [5, 6]
    # a last step at staleness 2 would have had the next pair's decode beside it: left out, as is then step 4
    assert [r["step"] for r in bench_train_gpu.steady_steps(rows[:7])] == [5, 6]


def test_an_overlapped_level_is_judged_by_its_mean_rise_and_its_paired_differences():
    import learn_tiny

    sync = {f"p{i}": {"mean": r, "best": r / 2} for i, r in enumerate([0.05, 0.10, 0.15])}
    # two pairs outside the range, the level's mean inside it: what chance alone gives two times in three
    level = {"p0": {"mean": 0.02, "best": 0.01}, "p1": {"mean": 0.16, "best": 0.08}, "p2": {"mean": 0.11, "best": 0.06}}
    got = learn_tiny.against_synchronous(sync, level)
    assert got["rise"]["mean"] == pytest.approx(0.29 / 3, abs=1e-12)
    assert got["rise_within"] == {"mean": True, "best": True}
    assert got["pairs_outside"] == {"mean": 2, "best": 2}
    assert got["pairs_outside_expected"] == pytest.approx(1.5, abs=1e-12)  # 3 pairs x 2/(3+1)
    assert got["rise_difference"]["p0"]["mean"] == pytest.approx(-0.03, abs=1e-12)
    diffs = [-0.03, 0.06, -0.04]  # mean -0.00333, sample sd 0.05508; t(2) = 4.303
    assert got["rise_difference_mean"]["mean"]["mean"] == pytest.approx(-0.01 / 3, abs=1e-12)
    assert got["rise_difference_mean"]["mean"]["ci95"] == pytest.approx(4.303 * 0.055076 / 3 ** 0.5, abs=1e-4)
    assert sum(diffs) / 3 == pytest.approx(got["rise_difference_mean"]["mean"]["mean"], abs=1e-12)
    below = learn_tiny.against_synchronous(sync, {k: {"mean": 0.01, "best": 0.2} for k in sync})
    assert below["rise_within"] == {"mean": False, "best": False}  # under the range, and over it


def test_each_sampler_compared_runs_in_its_own_folder_with_settings_the_config_takes():
    """learn_tiny.py --samplers: learn_tiny.yaml (trained whole) through the compiled engine, with and without
    float8 weights and cache, each pair's runs kept apart from the synchronous and overlapped ones."""
    from pathlib import Path

    import learn_tiny
    from salon.train.config import load_config

    names = {learn_tiny.run_name((2, 3), None, sampler) for sampler in (None, *learn_tiny.SAMPLERS)}
    names |= {learn_tiny.run_name((2, 3), 1)}
    assert len(names) == 2 + len(learn_tiny.SAMPLERS) and "learn-tiny-p2-3-compiled_fp8" in names
    config = Path(__file__).resolve().parent.parent / "train" / "configs" / "learn_tiny.yaml"
    for sampler, sets in learn_tiny.SAMPLERS.items():
        cfg = load_config(config, sets)
        assert cfg.grpo.generation == "compiled" and not cfg.lora.enabled
        assert cfg.grpo.sampler_rounds == (sampler == "compiled_fp8")


def test_the_committed_sampler_comparison_follows_from_its_runs():
    """learn_tiny_samplers_cpu.json: each rise is its run's last fifth less its first, and each sampler's
    verdict is what learn_tiny's comparison makes of those rises (a hand edit of one figure fails here)."""
    import learn_tiny

    data = json.loads((RESULTS / "learn_tiny_samplers_cpu.json").read_text())
    baseline = data["samplers"][data["baseline"]]["rises"]
    assert data["baseline_rise_range"] == {k: list(v) for k, v in learn_tiny.rise_range(baseline).items()}
    for name, sampler in data["samplers"].items():
        assert set(sampler["pairs"]) == {f"s{s}-t{t}" for s, t in data["seeds"]}
        for pair, run in sampler["pairs"].items():
            assert run["steps"] == data["steps"]
            for kind in ("mean", "best"):
                rise = run[f"reward_{kind}_last"] - run[f"reward_{kind}_first"]
                assert sampler["rises"][pair][kind] == pytest.approx(rise, abs=1e-9)
        if name != data["baseline"]:
            verdict = learn_tiny.against_synchronous(baseline, sampler["rises"])
            assert verdict["rise_within"] == sampler["rise_within"]
            for kind in ("mean", "best"):
                assert sampler["rise"][kind] == pytest.approx(verdict["rise"][kind], abs=1e-9)
                got, want = sampler["rise_difference_mean"][kind], verdict["rise_difference_mean"][kind]
                assert got["mean"] == pytest.approx(want["mean"], abs=1e-9)
                assert got["ci95"] == pytest.approx(want["ci95"], abs=1e-9)


def test_a_runs_falls_are_the_first_steps_its_collapse_alarms_rang_in_its_last_checkpoint(tmp_path):
    import learn_tiny

    def checkpoint(step, history):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "trainer_state.json").write_text(json.dumps({"log_history": history}))

    checkpoint(4, [{"step": 1, "salon/alarm/reward_falls_from_best": 1.0}])  # an earlier checkpoint: not read
    checkpoint(12, [{"step": 9, "salon/alarm/coverage": 1.0},  # an alarm that is no fall
                    {"step": 10, "salon/alarm/gate_pass_falls_from_best": 1.0},
                    {"step": 11, "salon/alarm/gate_pass_falls_from_best": 1.0,
                     "salon/alarm/reward_falls_from_best": 1.0}])
    assert learn_tiny.falls(tmp_path) == {"gate_pass_falls_from_best": 10, "reward_falls_from_best": 11}
    assert learn_tiny.falls(tmp_path / "nothing-here") == {}


def test_the_generation_bound_reads_each_prompt_once_for_its_group():
    from types import SimpleNamespace

    from bench_generate_gpu import bound_tokens_per_s

    # Qwen3-1.7B's KV: 28 layers x 8 heads x 128 x K and V x 2 bytes = 114,688 bytes a token
    cfg = SimpleNamespace(head_dim=128, num_hidden_layers=28, num_key_value_heads=8, hidden_size=2048,
                          num_attention_heads=16)
    weights, rows, prompt, tokens, bandwidth = 3.44e9, 64, 600, 2048, 3.0e12
    per_row = bound_tokens_per_s(cfg, weights, rows, prompt, tokens, bandwidth)
    per_group = bound_tokens_per_s(cfg, weights, rows, prompt, tokens, bandwidth, rows_per_prompt=8)
    assert per_row == pytest.approx(rows * bandwidth / (weights + rows * (600 + 1024) * 114_688), rel=1e-9)
    assert per_group == pytest.approx(rows * bandwidth / (weights + rows * (75 + 1024) * 114_688), rel=1e-9)
