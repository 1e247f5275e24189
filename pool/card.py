"""The dataset card (README.md) of an exported pool: YAML metadata + provenance.

The YAML holds license, tags, size category, the three configs with their data files and
features (so the Hub viewer and ``load_dataset`` agree on ClassLabel / Image columns). The body
states provenance: candidates and tiers per model, labelers and their agreement, every guide
photo with its license and attribution, how many candidates were withheld for a non-free guide
photo, and the salon version that wrote it. Called by salon.pool.export; not a command.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

from salon.pool.consensus import agreement
from salon.pool.models import TIERS, normalise_license

TAGS = ["salon", "generative-art", "p5js", "code-painting", "aesthetic-preference", "reward-modeling"]


def salon_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("salon")
    except PackageNotFoundError:
        return "0+unknown"


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


def _dataset_license(guides: dict, chosen: str | None) -> str:
    if chosen:
        return chosen
    share_alike = any(normalise_license(g["license"]) == "CC-BY-SA" for g in guides.values())
    return "cc-by-sa-4.0" if share_alike else "cc-by-4.0"


def card_metadata(snapshot: dict, result, config):
    from datasets import DatasetInfo
    from datasets.info import DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    from huggingface_hub import DatasetCardData

    from salon.pool.export_features import CONFIG_DIRS, features

    counts = {"default": result.labelled, "candidates": result.candidates, "pairs": result.pairs}
    data = DatasetCardData(
        license=_dataset_license(snapshot["guides"], config.license),
        pretty_name=config.pretty_name,
        tags=TAGS,
        task_categories=["image-classification"],
        size_categories=[_size_category(result.candidates)],
        configs=[{"config_name": name, "data_files": [{"split": "train", "path": f"{folder}/train-*"}],
                  **({"default": True} if name == "default" else {})}
                 for name, folder in CONFIG_DIRS.items() if name in result.shards],
    )
    infos = {}
    for name in result.shards:
        splits = SplitDict()
        splits.add(SplitInfo(name="train", num_examples=counts[name]))
        infos[name] = DatasetInfo(features=features(name), splits=splits)
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def write_card(to: Path, snapshot: dict, result, config) -> None:
    from huggingface_hub import DatasetCard

    data = card_metadata(snapshot, result, config)
    body = _body(snapshot, result, config)
    DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}").save(to / "README.md")


def _body(snapshot: dict, result, config) -> str:
    rows = snapshot["rows"]
    per_model: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        m = per_model[r["model"] or "unknown"]
        m["candidates"] += 1
        m["ok"] += r["ok"] is True
        m["rejected"] += r["ok"] is False
        m[r["tier"] or "unlabelled"] += 1
    current = {r["id"]: snapshot["current"][r["id"]] for r in rows if r["id"] in snapshot["current"]}
    agree = agreement(current)
    labelers = Counter(who for by in current.values() for who in by)
    lines = [
        f"# {config.pretty_name}",
        "",
        "Paintings written as p5.js + p5.brush sketches by language models, rendered in headless "
        "Chromium and sorted by people into **love / okay / nope** with "
        "salon (aesthetic reinforcement learning for code-painting models). "
        "A pinned revision of this dataset is a reward function: the pairwise judge draws its "
        "reference paintings from it, so always name the revision you train against.",
        "",
        "## Configs",
        "",
        f"- `default` ({result.labelled} rows): labelled candidates; `tier` is the consensus of the "
        "labelers' current tiers (most votes; a tie goes to the lower tier), `labels` has each "
        "labeler's tier.",
        f"- `candidates` ({result.candidates} rows): every candidate, rejects and failed renders "
        "included, with the gate's `violations`.",
        f"- `pairs` ({result.pairs} rows): people's pairwise choices (`winner` relative to "
        "left_id/right_id; `shown_left` is the one shown on the left).",
        "",
        "A config with no rows yet is left out of this release.",
        "",
        "```python",
        "from datasets import load_dataset",
        "refs = load_dataset(REPO_ID, revision=REVISION, split=\"train\")",
        "```",
        "",
        "## Provenance",
        "",
        "| model | candidates | passed gate | rejected | " + " | ".join(TIERS) + " | unlabelled |",
        "|---|---:|---:|---:|" + "---:|" * (len(TIERS) + 1),
    ]
    for model, c in sorted(per_model.items()):
        lines.append(f"| {model} | {c['candidates']} | {c['ok']} | {c['rejected']} | "
                     + " | ".join(str(c[t]) for t in TIERS) + f" | {c['unlabelled']} |")
    kappa = "n/a" if agree.kappa is None else f"{agree.kappa:.3f}"
    lines += [
        "",
        f"Labelers: {', '.join(f'{k} ({n})' for k, n in sorted(labelers.items())) or 'none'}. "
        f"Agreement ({(agree.method or 'needs two labelers').capitalize()}'s kappa over {agree.candidates} "
        f"candidates labelled by at least two people): {kappa}.",
        "",
        f"Exported {datetime.now(timezone.utc).isoformat(timespec='seconds')} by salon "
        f"{salon_version()}. {result.withheld} candidate(s) withheld because their guide photo's "
        "license is not CC0, CC-BY or CC-BY-SA.",
        "",
        "## Guide photos",
        "",
    ]
    guides = snapshot["guides"]
    if not guides:
        lines.append("No candidate in this release used a guide photo.")
    else:
        lines.append("Some models looked at these iNaturalist photos; each is credited here and on "
                     "every row that used it (`guide_attribution`).")
        lines.append("")
        for g in sorted(guides.values(), key=lambda g: g["id"]):
            where = g["observation_url"] or g["photo_url"] or ""
            lines.append(f"- photo {g['id']} ({g['license']}): {g['attribution'] or 'no attribution given'}"
                         + (f" — {where}" if where else ""))
    return "\n".join(lines) + "\n"
