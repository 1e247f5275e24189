"""The rollout archive: every rollout of a run, written as it happens, loadable with `datasets`.

    OUTPUT_DIR/rollouts/README.md                         card: run config, judge, pool release
    OUTPUT_DIR/rollouts/data/step-000012-p00-<id>.parquet one shard per reward call and process
    OUTPUT_DIR/rollouts/superseded/...                    shards of steps redone after a resume

    load_rollouts_dataset("OUTPUT_DIR")   # a datasets.Dataset; image decodes to PIL
    load_rollouts("OUTPUT_DIR")           # pandas, for salon audit

(Not ``datasets.load_dataset("OUTPUT_DIR/rollouts")``: it caches a local folder by its name, so
every run's `rollouts` would load as the first one loaded.)

One row per completion, one column per field of `salon.train.rollout.Rollout` (its types give
the column types): run, step (optimizer steps done when it was generated: the policy is
`checkpoint` = checkpoint-<step>, or "base" at 0), group, row, subject, prompt, completion,
code, seed, image (PNG), gate_passed, violations, each reward component in its own `reward_*`
column (null when not computed or its scorer failed; `reward_absolute` is an absolute scorer's
0..1 score, with HPSv3's mu and log sigma in `absolute_mu`, `absolute_log_sigma` and, when it
gave none, the reason in `absolute_reason`), `reward` (the total: null = missing),
`missing` (what failed: render, image, judge, a weighted image judge), references, draw_seed,
pool_release, judge, judge_version, substituted_example (stand-in runs only).
A shard is written to a temporary name and renamed, so a killed run loses at most the rollouts
of the reward call in flight. `push_rollouts` publishes the folder like a pool release.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

from salon.train.record.run_folder import refuse_mixed_archive, rollouts_folder
from salon.train.rollout import Rollout, column_kinds


def features(reward_columns: list[str]):
    from datasets import Features, Image, List, Value

    kinds = {"string": Value("string"), "int64": Value("int64"), "float64": Value("float64"),
             "bool": Value("bool"), "image": Image(), "list": List(Value("string"))}
    cols = {name: kinds[kind] for name, kind in column_kinds().items()}
    cols.update({name: Value("float64") for name in reward_columns})
    return Features(cols)


class RolloutArchive:
    """Writes shards under `folder` (OUTPUT_DIR/rollouts) with a fixed set of reward columns."""

    def __init__(self, folder: str | Path, reward_columns: list[str], process_index: int = 0):
        self.folder = Path(folder)
        self.data = self.folder / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.reward_columns = list(reward_columns)
        self.process_index = process_index
        self._features = features(self.reward_columns)

    def write(self, rollouts: list[Rollout], step: int) -> Path | None:
        if not rollouts:
            return None
        name = f"step-{step:06d}-p{self.process_index:02d}-{uuid.uuid4().hex[:8]}.parquet"
        return write_shard(self.data / name, [r.columns() for r in rollouts], self._features)

    def supersede_from(self, step: int) -> int:
        """Move shards of steps >= `step` aside (a resumed run redoes them); returns how many."""
        moved = 0
        target = self.folder / "superseded"
        for shard in sorted(self.data.glob("step-*.parquet")):
            if int(shard.name.split("-")[1]) >= step:
                target.mkdir(exist_ok=True)
                shutil.move(str(shard), target / shard.name)
                moved += 1
        return moved

    def write_card(self, provenance: dict) -> None:
        write_card(self.folder, provenance, self.reward_columns)


def write_shard(path: Path, rows: list[dict], features, metadata: dict | None = None) -> Path:
    """One parquet shard of `rows` (dicts; PNG bytes under "image"), written to a temporary name
    and renamed; `metadata` (JSON-able) goes into the file's schema metadata under b"salon"."""
    import pyarrow.parquet as pq
    from datasets import Dataset

    columns = {name: [row.get(name) for row in rows] for name in features}
    for i, png in enumerate(columns["image"]):
        columns["image"][i] = {"bytes": png, "path": None} if png else None
    # the table carries the features (Image, lists) in its schema metadata, so `datasets` decodes it
    table = Dataset.from_dict(columns, features=features).data.table
    if metadata is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               b"salon": json.dumps(metadata, default=str).encode()})
    tmp = path.parent / f".{path.name}.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def shard_metadata(path: Path) -> dict | None:
    """What `write_shard` put under b"salon" in a shard's schema metadata (None if nothing)."""
    import pyarrow.parquet as pq

    raw = (pq.read_schema(path).metadata or {}).get(b"salon")
    return json.loads(raw) if raw else None


def write_dataset_card(folder: Path, pretty_name: str, tags: list[str], features, body: list[str]) -> None:
    """A dataset card (README.md) declaring one `default` config over data/*.parquet with `features`."""
    from datasets import DatasetInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard, DatasetCardData

    data = DatasetCardData(
        license="apache-2.0", pretty_name=pretty_name, tags=tags,
        configs=[{"config_name": "default", "data_files": [{"split": "train", "path": "data/*.parquet"}]}],
    )
    DatasetInfosDict({"default": DatasetInfo(features=features)}).to_dataset_card_data(data)
    DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body) + "\n").save(folder / "README.md")


def write_card(folder: Path, provenance: dict, reward_columns: list[str]) -> None:
    import yaml

    body = [
        f"# salon rollouts: {provenance.get('run')}", "",
        "Every rollout of a GRPO run of [salon](https://github.com/) (aesthetic RL for code-painting models):",
        "the sketch, its render, the gate verdict and every reward component, written as it happened.", "",
        f"- policy: `{provenance.get('policy')}`",
        f"- judge: `{provenance.get('judge')}` (prompt version `{provenance.get('judge_version')}`)",
        f"- pool release (the reward function's references): `{provenance.get('pool_release')}`",
        f"- reward components: {', '.join(reward_columns)}",
        f"- salon version: {provenance.get('salon_version')}", "",
        "A null `reward` is an infrastructure failure (`missing` says which scorer): it was not scored,",
        "and was never counted as a bad painting.", "",
        "## Run config", "", "```yaml", yaml.safe_dump(provenance.get("config", {}), sort_keys=False).strip(), "```",
    ]
    write_dataset_card(folder, f"salon rollouts: {provenance.get('run')}",
                       ["salon", "rollouts", "grpo", "p5js", "code-painting", "reward-modeling"],
                       features(reward_columns), body)
    (folder / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str))


def load_rollouts(run_dir: str | Path, images: bool = True):
    """All archived rollouts of a run (superseded shards excluded) as a pandas DataFrame.

    `image` holds PNG bytes (or None); with `images=False` the column is left out (fast). A folder
    with no archive, or an archive holding one rollout twice (two runs in one folder), is a RunError.
    """
    from salon.pool.errors import RunError

    shards = sorted((rollouts_folder(run_dir) / "data").glob("step-*.parquet"))
    if not shards:
        what = "does not exist" if not Path(run_dir).exists() else "holds no rollouts (no rollouts/data/step-*.parquet)"
        raise RunError(f"{run_dir} {what}: give the --output-dir of a `salon train` run that trained at least one step")
    frame = read_shards(shards, images)
    refuse_mixed_archive(frame, run_dir)
    return frame


def read_shards(shards: list[Path], images: bool = True):
    """Parquet shards as one pandas DataFrame sorted by step, group, position; `image` as PNG bytes
    (or None), or left out with `images=False` (fast)."""
    import pandas as pd
    import pyarrow.parquet as pq

    frames = []
    for shard in shards:
        table = pq.read_table(shard, columns=None if images else
                              [c for c in pq.read_schema(shard).names if c != "image"])
        frames.append(table.to_pandas())
    df = pd.concat(frames, ignore_index=True)
    if images and "image" in df:
        df["image"] = [v.get("bytes") if isinstance(v, dict) else None for v in df["image"]]
    return df.sort_values(["step", "group", "position"], kind="stable").reset_index(drop=True)


def load_rollouts_dataset(run_dir: str | Path):
    """The archived rollouts of a run (OUTPUT_DIR or OUTPUT_DIR/rollouts) as a `datasets.Dataset`.

    Use it, not ``load_dataset("OUTPUT_DIR/rollouts")``, which caches folders by name: every
    run's archive is called `rollouts` (see salon.pool.local_dataset). Superseded shards are left out.
    """
    from salon.pool.local_dataset import load_local_config

    return load_local_config(rollouts_folder(run_dir), "default", "data/*.parquet",
                             "is it a salon train output folder (OUTPUT_DIR or OUTPUT_DIR/rollouts)?")


def push_rollouts(run_dir: str | Path, repo_id: str, *, private: bool = True, token: str | None = None,
                  endpoint: str | None = None, message: str | None = None) -> str:
    """Upload the archive (card + shards, not superseded ones) to a dataset repo; returns the commit id."""
    from huggingface_hub import HfApi

    from salon.pool.errors import HubError
    from salon.pool.hub import REPO_TYPE, hub_error

    if repo_id.count("/") != 1:
        raise HubError(f"repo id {repo_id!r} must be namespace/name, e.g. you/salon-rollouts")
    folder = rollouts_folder(run_dir)
    api = HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, repo_type=REPO_TYPE, folder_path=folder,
                                 allow_patterns=["README.md", "provenance.json", "data/*.parquet"],
                                 commit_message=message or f"salon rollouts of {folder.parent.name}")
    except Exception as e:  # huggingface_hub raises HTTP, OS and value errors
        raise hub_error("push rollouts to", repo_id, e) from e
    return info.oid
