"""Export a pool as a Hugging Face dataset folder: parquet shards + a dataset card.

    salon pool export --to DIR            # or: export_pool(pool, DIR)
    load_export(DIR, "default")           # a datasets.Dataset, offline; image as PIL, tier a ClassLabel

``load_export`` rather than ``datasets.load_dataset(DIR)``, which caches a local folder by its name
and card, so two exports in folders named alike load as one. Layout (what ``load_export`` reads
and what ``salon pool push`` uploads)::

    DIR/README.md                              card: YAML (license, tags, configs, features) + provenance
    DIR/data/train-00000-of-0000N.parquet      config "default": one row per labelled candidate
    DIR/candidates/train-*.parquet             config "candidates": every candidate, rejects included
    DIR/pairs/train-*.parquet                  config "pairs": people's pairwise choices

A config with no rows is left out (``datasets`` cannot load an empty split): ``pairs`` appears
once the app has recorded choices, ``default`` once something is labelled.

``tier`` is ClassLabel(love, okay, nope): the consensus of the labelers' current tiers
(salon.pool.consensus); ``labels`` lists each labeler's current tier. Shards hold at most
``max_shard_bytes`` (default 256 MiB, under the Hub's 500 MB advice) with row groups of 100
rows, so the dataset viewer pages through images quickly. Candidates whose guide photo is not
CC0 / CC-BY / CC-BY-SA are withheld from every config (the card says how many).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from salon.pool import images
from salon.pool.consensus import consensus
from salon.pool.errors import PoolError
from salon.pool.export_features import CONFIG_DIRS, features
from salon.pool.models import TIERS


@dataclass
class ExportConfig:
    max_shard_bytes: int = 256 * 2**20
    license: str | None = None  # dataset license; default cc-by-4.0, cc-by-sa-4.0 if a guide is CC-BY-SA
    pretty_name: str = "salon painting pool"
    overwrite: bool = False  # replace an earlier export in the same folder

    def __post_init__(self):
        if self.max_shard_bytes < 1:
            raise PoolError("max_shard_bytes must be positive")


@dataclass
class ExportResult:
    path: Path
    labelled: int
    candidates: int
    pairs: int
    withheld: int
    shards: dict[str, list[str]] = field(default_factory=dict)


def load_export(folder: str | Path, config: str = "default"):
    """One config of an export folder as a `datasets.Dataset` (image as PIL, tier a ClassLabel).

    Use it, not ``load_dataset(DIR)``, which caches folders by name (see salon.pool.local_dataset).
    """
    from salon.pool.local_dataset import load_local_config

    if config not in CONFIG_DIRS:
        raise PoolError(f"unknown export config {config!r}: choose one of {', '.join(CONFIG_DIRS)}")
    return load_local_config(folder, config, f"{CONFIG_DIRS[config]}/train-*",
                             f"export a pool there with `salon pool export --to {folder}` (a config "
                             "with no rows yet, such as pairs before any choice, is left out)")


def labelled_images(folder: str | Path):
    """Each labelled candidate of an export (or a pulled release's download) that has a render:
    {"id", "tier", "png" (bytes), "subject", "model", "labels": {labeler: tier}}, shard by shard."""
    import pyarrow.parquet as pq

    for shard in sorted((Path(folder) / CONFIG_DIRS["default"]).glob("*.parquet")):
        table = pq.read_table(shard, columns=["id", "image", "tier", "labels", "subject", "model"])
        for row in table.to_pylist():
            if row["image"] and row["image"].get("bytes"):  # a candidate without a render cannot be a reference
                yield {"id": row["id"], "tier": TIERS[row["tier"]], "png": row["image"]["bytes"],
                       "subject": row["subject"], "model": row["model"],
                       "labels": {x["labeler"]: x["tier"] for x in row["labels"]}}


def export_pool(pool, to: str | Path, config: ExportConfig | None = None) -> ExportResult:
    """Write the dataset folder ``to`` from one consistent snapshot of the pool."""
    from salon.pool.card import write_card

    config = config or ExportConfig()
    to = Path(to)
    _prepare(to, config.overwrite)
    snapshot = _snapshot(pool)
    rows, pairs, withheld = snapshot["rows"], snapshot["pairs"], snapshot["withheld"]
    labelled = [r for r in rows if r["tier"] is not None]
    result = ExportResult(to, len(labelled), len(rows), len(pairs), withheld)
    try:
        for name, subset in (("default", labelled), ("candidates", rows), ("pairs", pairs)):
            # datasets cannot load a split with no rows: an empty config is left out of the folder
            # and the card (the pairs config appears once the app has recorded choices).
            if subset:
                result.shards[name] = _write_shards(pool, to, name, subset, config.max_shard_bytes)
        write_card(to, snapshot, result, config)
    except OSError as e:
        raise PoolError(f"cannot write the export under {to} ({e.strerror}): check permissions and "
                        f"free space, or export elsewhere with --to") from None
    return result


def _prepare(to: Path, overwrite: bool) -> None:
    try:
        if to.exists() and not to.is_dir():
            raise PoolError(f"{to} is a file: export into a new or empty folder")
        if to.exists() and any(to.iterdir()):
            ours = {"README.md", *CONFIG_DIRS.values()}
            if not overwrite or any(p.name not in ours for p in to.iterdir()):
                raise PoolError(f"{to} is not empty: export into a new or empty folder"
                                + ("" if overwrite else ", or pass --force to replace an earlier export"))
            for p in to.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        to.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PoolError(f"cannot create the export folder {to} ({e.strerror}): choose another with "
                        f"--to or fix its permissions") from None


def _snapshot(pool) -> dict:
    """Rows, labels and choices from one read transaction; images are immutable files."""
    with pool.snapshot() as s:
        candidates, current, choices = s.candidates(), s.current_labels(), s.pair_choices()
    rows, kept, withheld, guides = [], set(), 0, {}
    for c in candidates:
        g = c.guide
        if g is not None and not g.free:
            withheld += 1
            continue
        by = current.get(c.id, {})
        kept.add(c.id)
        if g is not None:
            guides[g.id] = {"id": g.id, "license": g.license, "attribution": g.attribution,
                            "observation_url": g.observation_url, "photo_url": g.photo_url}
        rows.append({
            "id": c.id, "_image_sha256": c.image_sha256, "tier": consensus(list(by.values())),
            "labels": [{"labeler": k, "tier": v} for k, v in sorted(by.items())],
            "subject": c.subject, "prompt": c.prompt, "model": c.model,
            "prompt_version": c.prompt_version, "sampling": json.dumps(c.sampling, sort_keys=True),
            "code": c.code, "seed": c.seed, "round": c.round, "parent_id": c.parent_id,
            "paint_fraction": c.paint_fraction, "render_ms": c.render_ms,
            "near_duplicate_of": c.dup_of, "guide_photo_id": g and g.id,
            "guide_observation_url": g and g.observation_url, "guide_photo_url": g and g.photo_url,
            "guide_license": g and g.license, "guide_attribution": g and g.attribution,
            "created_at": c.created_at, "ok": c.ok, "violations": c.violations, "js_errors": c.js_errors,
            "reply": c.reply})
    pairs = [{"left_id": p.left_id, "right_id": p.right_id, "winner": p.winner, "labeler": p.labeler,
              "at": p.at, "shown_left": p.shown_left}
             for p in choices if p.left_id in kept and p.right_id in kept]
    return {"rows": rows, "pairs": pairs, "withheld": withheld, "guides": guides, "current": current}


def _row_bytes(pool, row: dict) -> int:
    size = sum(len(str(v)) for k, v in row.items() if not k.startswith("_"))
    if row.get("_image_sha256"):
        path = pool.dir / images.image_relpath(row["_image_sha256"])
        size += path.stat().st_size if path.exists() else 0
    return size


def _write_shards(pool, to: Path, config: str, rows: list[dict], max_bytes: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    feats = features(config)
    groups: list[list[dict]] = [[]]
    size = 0
    for row in rows:
        n = _row_bytes(pool, row)
        if groups[-1] and size + n > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(row)
        size += n
    folder = to / CONFIG_DIRS[config]
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i, group in enumerate(groups):
        columns = {name: [_value(pool, row, name) for row in group] for name in feats}
        table = pa.Table.from_pydict(feats.encode_batch(columns), schema=feats.arrow_schema)
        name = f"{CONFIG_DIRS[config]}/train-{i:05d}-of-{len(groups):05d}.parquet"
        pq.write_table(table, to / name, row_group_size=100)
        names.append(name)
    return names


def _value(pool, row: dict, name: str):
    if name != "image":
        return row[name]
    sha = row["_image_sha256"]
    return None if sha is None else {"bytes": images.read_image(pool.dir, sha), "path": f"{row['id']}.png"}
