"""A run folder holds one run: `salon train` refuses to start a second one into it, and the
commands that read its rollout archive refuse one that holds two.

    refuse_second_run(cfg)           # first: RunError if OUTPUT_DIR holds a run (unless resume or overwrite)
    move_earlier_run_aside(cfg)      # with overwrite: OUTPUT_DIR -> OUTPUT_DIR.old-<time>; returns it or None
    refuse_mixed_archive(frame, run) # RunError naming the (step, group, position, process) keys
    check_archive(run)               # the same, for a command that reads no rollouts (salon eval)
    rollouts_folder(run)             # OUTPUT_DIR/rollouts: where the archive is (salon.train.record.archive)

Why: training a second time into the same --output-dir used to start again at step 0, overwrite
the checkpoints and append a second copy of every rollout, so that `salon audit` counted every
rollout twice and `salon compare` plotted twice the bottom. Nothing is ever deleted here: an
overwritten run moves aside, and a resume moves the rollouts of the steps it redoes to
rollouts/superseded/ (salon.train.record.archive).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from salon.pool.errors import RunError

log = logging.getLogger(__name__)

# one completion of a run: its step, its group (a dataset row's completions in that step), its place
# in the group, and the process that wrote it (a group's completions may be split between processes)
ROLLOUT_KEY = ["step", "group", "position", "process"]


def rollouts_folder(run_dir: str | Path) -> Path:
    """The run's rollout archive (OUTPUT_DIR/rollouts), or `run_dir` itself where it is one."""
    run_dir = Path(run_dir)
    return run_dir if (run_dir / "data").is_dir() and not (run_dir / "rollouts").is_dir() else run_dir / "rollouts"


def earlier_run(out: Path) -> str | None:
    """What in `out` shows that a run trained there ("2 checkpoints, 4 rollout shards"), or None."""
    checkpoints = [p for p in out.glob("checkpoint-*") if p.is_dir()]
    shards = list((out / "rollouts" / "data").glob("step-*.parquet"))
    if not checkpoints and not shards:
        return None
    return f"{len(checkpoints)} checkpoint(s), {len(shards)} rollout shard(s)"


def refuse_second_run(cfg) -> None:
    """RunError when OUTPUT_DIR holds a run and the config neither resumes it nor overwrites it (checked
    first, before anything loads: it costs no time)."""
    out = Path(cfg.output_dir)
    found = earlier_run(out)
    if found is not None and not cfg.resume and not cfg.overwrite:
        raise RunError(f"{out} already holds a run ({found}): continue it with --resume latest, train into a new "
                       f"--output-dir, or start over with --overwrite (which moves the old run aside)")


def move_earlier_run_aside(cfg) -> Path | None:
    """With `overwrite`, the run in OUTPUT_DIR moves to OUTPUT_DIR.old-<time> (the main process only,
    before anything is written there); returns where, or None when there was none."""
    out = Path(cfg.output_dir)
    found = earlier_run(out)
    if found is None or not cfg.overwrite:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside, n = out.with_name(f"{out.name}.old-{stamp}"), 1
    while aside.exists():  # two overwrites in one second
        aside, n = out.with_name(f"{out.name}.old-{stamp}-{n}"), n + 1
    out.rename(aside)
    log.info("overwrite: the earlier run in %s (%s) moved to %s", out, found, aside)
    return aside


def duplicated_keys(frame) -> list[tuple]:
    """The (step, group, position, process) keys that more than one archived row holds."""
    key = [c for c in ROLLOUT_KEY if c in frame.columns]
    counts = frame.groupby(key, dropna=False).size()
    return [k if isinstance(k, tuple) else (k,) for k in counts[counts > 1].index]


def refuse_mixed_archive(frame, run_dir: str | Path) -> None:
    """RunError when an archive (a DataFrame of salon.train.record.archive) holds one rollout twice: two runs
    were written into one folder, and every count and mean over it would be wrong."""
    twice = duplicated_keys(frame)
    if not twice:
        return
    shown = "; ".join(", ".join(f"{name} {value}" for name, value in zip(ROLLOUT_KEY, k)) for k in twice[:3])
    more = f" and {len(twice) - 3} more" if len(twice) > 3 else ""
    raise RunError(
        f"{run_dir}: the rollout archive holds {len(twice)} rollout(s) more than once ({shown}{more}): two runs "
        "were trained into this folder. Train again into a new --output-dir (or with --overwrite, which moves "
        "this run aside), or move one run's shards out of rollouts/data/ (their created_at tells the runs apart)")


def check_archive(run_dir: str | Path) -> None:
    """refuse_mixed_archive for a command that reads no rollouts itself: only the key columns are read,
    and a folder without an archive passes."""
    import pandas as pd
    import pyarrow.parquet as pq

    shards = sorted((rollouts_folder(run_dir) / "data").glob("step-*.parquet"))
    if shards:
        keys = [pq.read_table(s, columns=[c for c in ROLLOUT_KEY if c in pq.read_schema(s).names]).to_pandas()
                for s in shards]
        refuse_mixed_archive(pd.concat(keys, ignore_index=True), run_dir)
