"""Where a judge's reference paintings come from: a folder, a pulled pool release, or the Hub.

    refs = load_references("refs/")                 # plain folder, or one `salon pool pull` wrote
    refs = load_references("me/salon-pool@3f2a…")   # pulled into the cache first (pinned revision)
    refs.release                                    # "repo_id@revision", or None for a plain folder
    refs.references                                 # [Reference(id, path, tier)]

A plain folder: every image in it is a reference whose id is its path (tier unknown), and images
under love/ and okay/ subfolders carry that tier (nope/ is never a reference). A pulled folder
(manifest.json, written by salon.pool.hub.pull): ids are pool ids, tiers and the release come
from the manifest; this is the one reader of that manifest. The release is kept once, on the
`ReferenceSet`, and travels from there to the rollout archive. `REPO[@REV]` pulls into
$SALON_CACHE/refs/ (default ~/.cache/salon/refs/) once per revision and reads it from there
after; processes pulling the same release at once take turns (a lock in the pull). A pool
export folder (`salon pool export --to DIR`, the files a push uploads) is read the same way as
a pulled release, its love and okay rows the references, named by the export's content:
`export:DIR_NAME@<sha256 of its data shards, 12 hex>`, so a changed export is a new release.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from salon.judges.verdict import Reference
from salon.pool.errors import JudgeError, SalonError

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp"}
REFERENCE_TIERS = ("love", "okay")
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?$")


@dataclass(frozen=True)
class ReferenceSet:
    references: list[Reference]
    release: str | None = None  # "repo_id@revision" for a pool release
    source: str = ""

    def tiers(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.references:
            out[r.tier or "unknown"] = out.get(r.tier or "unknown", 0) + 1
        return out


def load_references(spec: str | os.PathLike) -> ReferenceSet:
    """References from a folder (plain or pulled) or a Hub dataset `REPO[@REV]`."""
    path = Path(spec)
    if path.is_dir():
        if (path / "manifest.json").exists():
            return _pulled(path, str(spec))
        if list(path.glob("data/*.parquet")):
            return _exported(path, str(spec))
        return _plain(path, str(spec))
    text = str(spec)
    if _REPO.match(text) and not path.exists():
        return _pulled(_pull(text), text)
    raise JudgeError(f"references {text!r}: no such folder, and not a Hub dataset id (REPO_ID[@REVISION]); "
                     "give a folder of reference images or a pool release")


def _plain(folder: Path, source: str) -> ReferenceSet:
    refs = []
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES:
            refs.append(Reference(id=str(f), path=f))
    for tier in REFERENCE_TIERS:
        sub = folder / tier
        if sub.is_dir():
            refs += [Reference(id=str(f), path=f, tier=tier) for f in sorted(sub.iterdir())
                     if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES]
    if not refs:
        raise JudgeError(f"{folder} holds no reference images (.png/.jpg/.webp at its top level or under "
                         "love/ and okay/): put reference paintings there")
    return ReferenceSet(refs, None, source)


def _pulled(folder: Path, source: str) -> ReferenceSet:
    """The love and okay paintings of a folder `salon pool pull` wrote, with their release."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        release = f"{manifest['repo_id']}@{manifest['revision']}"
        refs = [Reference(id=r["id"], path=folder / r["path"], tier=r["tier"]) for r in manifest["references"]
                if r["tier"] in REFERENCE_TIERS]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise JudgeError(f"{folder} is not a reference folder ({e}): create it with "
                         f"`salon pool pull REPO_ID --revision REV --to {folder}`") from None
    if not refs:
        raise JudgeError(f"release {release} in {folder} has no love or okay paintings: label some "
                         "candidates love/okay, push the pool, and pull that revision")
    return ReferenceSet(refs, release, source)


def _exported(folder: Path, source: str) -> ReferenceSet:
    """The love and okay paintings of a pool export folder, named by the shards' content."""
    import hashlib
    import io

    import pyarrow.parquet as pq
    from PIL import Image

    from salon.pool.models import TIERS

    digest, refs = hashlib.sha256(), []
    for shard in sorted(folder.glob("data/*.parquet")):
        digest.update(shard.read_bytes())
        for row in pq.read_table(shard, columns=["id", "image", "tier"]).to_pylist():
            tier = TIERS[row["tier"]]
            if tier in REFERENCE_TIERS and row["image"] and row["image"].get("bytes"):
                image = Image.open(io.BytesIO(row["image"]["bytes"]))
                image.load()
                refs.append(Reference(id=row["id"], tier=tier, image=image))
    release = f"export:{folder.resolve().name}@{digest.hexdigest()[:12]}"
    if not refs:
        raise JudgeError(f"the export in {folder} has no love or okay paintings: label some candidates "
                         "love/okay (`salon pool label ID love --by NAME`) and export again")
    return ReferenceSet(refs, release, source)


def cache_dir() -> Path:
    return Path(os.environ.get("SALON_CACHE") or Path.home() / ".cache" / "salon") / "refs"


def _pull(spec: str) -> Path:
    """Pull REPO[@REV] once into the cache; a full commit id already there is reused offline."""
    repo_id, _, revision = spec.partition("@")
    folder = cache_dir() / repo_id.replace("/", "--") / (revision or "main")
    if re.fullmatch(r"[0-9a-f]{40}", revision or "") and (folder / "manifest.json").exists():
        return folder
    try:
        from salon.pool.hub import pull
    except ImportError as e:
        raise JudgeError(f"pulling {spec} needs the hub extra ({e}): pip install 'salon[hub]', or run "
                         "`salon pool pull` elsewhere and pass the folder to --refs") from None
    try:
        return pull(repo_id, folder, revision=revision or None).folder
    except SalonError as e:
        raise JudgeError(f"no folder {spec!r}, and pulling it as a pool release failed: {e}") from None
