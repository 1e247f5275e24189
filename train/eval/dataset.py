"""The eval's samples on disk: RUN_DIR/eval/, one parquet shard per checkpoint, loadable with `datasets`.

    RUN_DIR/eval/README.md                     card: features, what each column means
    RUN_DIR/eval/data/step-000020.parquet      every sample of checkpoint-20 (step 0: the base policy)

    load_eval_dataset("RUN_DIR")               # a datasets.Dataset; image decodes to PIL
    EvalDataset("RUN_DIR").frame()             # pandas, for the report (image as PNG bytes)

One row per sample: the rollout archive's columns (salon.train.record.archive: step, checkpoint,
subject, prompt, completion, code, seed, image, gate_passed, violations, paint_fraction,
coverage, every `reward_*` component and `reward`, the proxy's total; `position` is the sample's
index within its prompt, `group` the prompt), plus `sample_id` (opaque: sha256 of step, prompt
and seed, what the app shows instead of a checkpoint's name), `colourfulness` (Hasler-Suesstrunk,
0 grey .. ~100 extreme), one `oracle_<label>` column per oracle with `oracle_<label>_reason` (why it
gave no score: the service's error, a timeout, an exception) and `oracle_missing` (the oracles that
could not answer for a painting that passed the gate). A null is missing, never 0.

A shard records in its parquet metadata the settings it was made with (prompts, samples, seed,
oracles, the run's reward config) and its timings, so `--resume` keeps a checkpoint only when it
was evaluated exactly as asked now.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from salon.train.record.archive import features as archive_features
from salon.train.record.archive import read_shards, shard_metadata, write_dataset_card, write_shard


def sample_id(step: int, prompt: str, seed: int) -> str:
    return hashlib.sha256(f"{step}\x1f{prompt}\x1f{seed}".encode()).hexdigest()[:16]


def fingerprint(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def eval_features(reward_columns: list[str], oracle_columns: list[str]):
    from datasets import List, Value

    f = archive_features(reward_columns)
    f["sample_id"] = Value("string")
    f["colourfulness"] = Value("float64")
    for c in oracle_columns:
        f[c] = Value("float64")
        f[f"{c}_reason"] = Value("string")  # why the oracle gave no score (null when it gave one)
    f["oracle_missing"] = List(Value("string"))
    return f


class EvalDataset:
    def __init__(self, run_dir: str | Path):
        self.folder = Path(run_dir) / "eval"
        self.data = self.folder / "data"

    def shard(self, step: int) -> Path:
        return self.data / f"step-{step:06d}.parquet"

    def done(self, step: int) -> dict | None:
        """The metadata of step's shard ({fingerprint, seconds, ...}), or None if not evaluated."""
        path = self.shard(step)
        return shard_metadata(path) if path.is_file() else None

    def write(self, step: int, rows: list[dict], reward_columns: list[str], oracle_columns: list[str],
              metadata: dict) -> Path:
        self.data.mkdir(parents=True, exist_ok=True)
        feats = eval_features(reward_columns, oracle_columns)
        path = write_shard(self.shard(step), rows, feats, metadata)
        write_dataset_card(self.folder, f"salon eval: {self.folder.parent.name}",
                           ["salon", "eval", "checkpoints", "p5js", "code-painting"], feats, CARD)
        return path

    def steps(self) -> list[int]:
        return sorted(int(p.stem.split("-")[1]) for p in self.data.glob("step-*.parquet"))

    def frame(self, steps: list[int] | None = None, images: bool = True):
        """The samples of `steps` (default all) as pandas, sorted by step, prompt, sample."""
        shards = [self.shard(s) for s in (self.steps() if steps is None else steps)]
        return read_shards([s for s in shards if s.is_file()], images)


def load_eval_dataset(run_dir: str | Path):
    """RUN_DIR/eval/ as a `datasets.Dataset` (see salon.pool.local_dataset for why not load_dataset(DIR))."""
    from salon.pool.local_dataset import load_local_config

    return load_local_config(Path(run_dir) / "eval", "default", "data/*.parquet",
                             "run `salon eval RUN_DIR` first")


CARD = [
    "# salon eval", "",
    "Paintings of a GRPO run's checkpoints on held-out prompts, written by `salon eval`: one row per",
    "sample, scored by the run's own reward (the proxy: `reward` and its `reward_*` components), by",
    "oracles the policy never optimised (`oracle_*`) and by craft measures (`coverage`, `paint_fraction`,",
    "`colourfulness`). `step` 0 is the base policy. A null score is missing (an infrastructure failure,",
    "or a gate failure for the oracles), never 0. `report.json` beside this card summarises them.",
]
