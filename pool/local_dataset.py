"""Load one config of a local dataset folder salon wrote (a pool export, a rollout archive).

``datasets.load_dataset(DIR)`` caches a local folder under its name and its card's config, not
its path or its files: two folders named alike (the ``rollouts`` of two runs, two ``export``
folders) load as whichever was loaded first, and a shard added later goes unseen. Loading the
same shards through the parquet builder, named by absolute path, is cached by those files
(path and modification time), so each folder loads as itself. The card's ``dataset_info``
features are passed along, so ``image`` still decodes to PIL and ``tier`` stays a ClassLabel.
A dataset on the Hub is keyed by repo and revision: load it with ``load_dataset(REPO_ID,
revision=...)``.
"""

from __future__ import annotations

from pathlib import Path

from salon.pool.errors import PoolError


def load_local_config(folder: str | Path, config: str, pattern: str, what_to_do: str):
    """The train split of `config`: the files under `folder` matching `pattern`, with the card's features.

    `what_to_do` ends the error raised when no file matches (how to get such a folder).
    """
    from datasets import load_dataset

    folder = Path(folder).resolve()
    files = sorted(str(p) for p in folder.glob(pattern) if p.is_file())
    if not files:
        raise PoolError(f"{folder}: no data files match {pattern}: {what_to_do}")
    return load_dataset("parquet", data_files={"train": files}, split="train",
                        features=card_features(folder, config))


def card_features(folder: Path, config: str):
    """The features `folder`'s README.md card declares for `config`, or None (the shards' own schema)."""
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard

    card = folder / "README.md"
    if not card.is_file():
        return None
    info = DatasetInfosDict.from_dataset_card_data(DatasetCard.load(card).data).get(config)
    return info.features if info else None
