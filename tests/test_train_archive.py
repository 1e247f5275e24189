"""The rollout archives of two runs (both folders named `rollouts`) load as their own rows through
`load_rollouts_dataset`, shards written later included; `load_dataset(DIR)` caches by folder name."""

from __future__ import annotations

from train_support import write_synthetic_run

from salon.train.record.archive import load_rollouts_dataset, write_card

REWARDS = ["reward_gate", "reward_length", "reward_judge"]


def test_archives_named_alike_load_as_themselves(tmp_path):
    first = write_synthetic_run(tmp_path / "a", collapse=False, steps=2, groups=1)
    second = write_synthetic_run(tmp_path / "b", collapse=False, steps=3, groups=1)
    for run in (first, second):  # the same card in both: only the shards differ
        write_card(run / "rollouts", {"run": "synthetic"}, REWARDS)
    assert len(load_rollouts_dataset(first)) == 2 * 4
    loaded = load_rollouts_dataset(second / "rollouts")
    assert len(loaded) == 3 * 4 and sorted(set(loaded["step"])) == [0, 1, 2]
    passed = next(r for r in loaded if r["gate_passed"])
    assert passed["image"].size == (96, 96) and loaded.features["image"].__class__.__name__ == "Image"
    write_synthetic_run(first, collapse=False, steps=2, groups=1, seed=1)  # a later shard per step
    assert len(load_rollouts_dataset(first)) == 2 * 2 * 4
