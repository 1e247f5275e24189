"""The exported dataset's configs: the folder each one's shards go in, and its `datasets` features.

    CONFIG_DIRS["candidates"]      # "candidates": DIR/candidates/train-*.parquet
    features("pairs")              # datasets.Features of the pairs config

salon.pool.export writes the shards and salon.pool.card describes them in the card's YAML.
"""

from __future__ import annotations

from salon.pool.models import TIERS

CONFIG_DIRS = {"default": "data", "candidates": "candidates", "pairs": "pairs"}


def features(config: str):
    from datasets import ClassLabel, Features, Image, List, Value

    if config == "pairs":
        return Features({"left_id": Value("string"), "right_id": Value("string"),
                         "winner": ClassLabel(names=["left", "right", "tie"]), "labeler": Value("string"),
                         "at": Value("string"), "shown_left": Value("string")})
    cols = {"id": Value("string"), "image": Image(), "tier": ClassLabel(names=list(TIERS)),
            "labels": List({"labeler": Value("string"), "tier": Value("string")}),
            "subject": Value("string"), "prompt": Value("string"), "model": Value("string"),
            "prompt_version": Value("string"), "sampling": Value("string"), "code": Value("string"),
            "seed": Value("int64"), "round": Value("int32"), "parent_id": Value("string"),
            "paint_fraction": Value("float64"), "render_ms": Value("int64"),
            "near_duplicate_of": Value("string"), "guide_photo_id": Value("string"),
            "guide_observation_url": Value("string"), "guide_photo_url": Value("string"),
            "guide_license": Value("string"), "guide_attribution": Value("string"),
            "created_at": Value("string")}
    if config == "candidates":
        cols |= {"ok": Value("bool"), "violations": List(Value("string")),
                 "js_errors": List(Value("string")), "reply": Value("string")}
    return Features(cols)
