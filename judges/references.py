"""Where a judge's reference paintings come from: a pool, an export, a pulled release, the Hub, a folder.

    refs = load_references("salon-pool/")           # a local pool: its love and okay candidates
    refs = load_references("exp/")                  # a `salon pool export` folder: the same, from parquet
    refs = load_references("refs/")                 # plain folder, or one `salon pool pull` wrote
    refs = load_references("me/salon-pool@3f2a…")   # pulled into the cache first (pinned revision)
    refs.release                                    # "repo_id@revision"; "pool:PATH@DIGEST" /
                                                    # "export:PATH@DIGEST" locally; None for a plain folder
    refs.references                                 # [Reference(id, path, tier)]
    record_references(refs, RUN/references, spec)   # what a run used, pinned in the run

A local pool (a folder holding pool.db) and an export folder (data/*.parquet) give what a Hub
release of that pool would: each candidate whose consensus tier is love or okay and that has a
render, with its pool id and tier. Their labels can change after a run, so their `release` names
the set by a digest of its (id, tier) pairs, and a training run copies them into its own folder.

A plain folder: every image in it is a reference whose id is its path (tier unknown), and images
under love/ and okay/ subfolders carry that tier (nope/ is never a reference). A pulled folder
(manifest.json, written by salon.pool.hub.pull): ids are pool ids, tiers and the release come
from the manifest; this is the one reader of that manifest. The release is kept once, on the
`ReferenceSet`, and travels from there to the rollout archive. `REPO[@REV]` pulls into
$SALON_CACHE/refs/ (default ~/.cache/salon/refs/) once per revision and reads it from there
after; processes pulling the same release at once take turns (a lock in the pull).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
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
    """References from a pool, an export, a folder (plain or pulled) or a Hub dataset `REPO[@REV]`."""
    path = Path(spec)
    if path.is_dir():
        if (path / "manifest.json").exists():
            return _pulled(path, str(spec))
        if (path / "pool.db").is_file():
            return _pool(path, str(spec))
        if list((path / "data").glob("*.parquet")):
            return _export(path, str(spec))
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
                         "love/ and okay/), and is neither a pool (pool.db) nor a `salon pool export` folder "
                         "(data/*.parquet): put reference paintings there, or give a pool or an export")
    return ReferenceSet(refs, None, source)


def digest(refs: list[Reference]) -> str:
    """12 hex digits naming a set of references by its (id, tier) pairs: same set, same digest."""
    text = "\n".join(sorted(f"{r.id}:{r.tier}" for r in refs))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _local(kind: str, folder: Path, refs: list[Reference], source: str) -> ReferenceSet:
    if not refs:
        raise JudgeError(f"the {kind} at {folder} has no love or okay painting with a render: label some "
                         f"(salon app --pool ..., or salon pool label ID love --by NAME)")
    return ReferenceSet(refs, f"{kind}:{folder.resolve()}@{digest(refs)}", source)


def _pool(folder: Path, source: str) -> ReferenceSet:
    """A pool's love and okay candidates (consensus tier) that have an image, as a release would carry them."""
    from salon.pool.store import Pool

    with Pool.open(folder) as pool:
        tiers = pool.consensus_tiers()
        refs = [Reference(id=cid, path=path, tier=tier) for cid, tier in sorted(tiers.items())
                if tier in REFERENCE_TIERS and (path := pool.image_path(cid)) is not None and path.is_file()]
    return _local("pool", folder, refs, source)


def _export(folder: Path, source: str) -> ReferenceSet:
    """The love and okay rows of a `salon pool export` folder; images read from its parquet shards."""
    from PIL import Image

    from salon.pool.export import labelled_images

    try:
        refs = [Reference(id=row["id"], tier=row["tier"], image=Image.open(io.BytesIO(row["png"])))
                for row in labelled_images(folder) if row["tier"] in REFERENCE_TIERS]
    except (OSError, ValueError, KeyError) as e:
        raise JudgeError(f"{folder} looks like a `salon pool export` folder but cannot be read ({e}): "
                         f"export it again with `salon pool export --to {folder} --force`") from None
    return _local("export", folder, refs, source)


def record_references(refs: ReferenceSet, folder: Path, spec: str) -> ReferenceSet:
    """Pin what a run used in `folder` (RUN/references): manifest.json names the source, the release
    and every reference's id and tier; local sources (pool, export, plain folder), whose contents may
    change, are copied in. Returns the set as read back from there."""
    copy = refs.release is None or refs.release.startswith(("pool:", "export:"))
    work = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(work, ignore_errors=True)
    rows = []
    for i, r in enumerate(refs.references):
        row = {"id": r.id, "tier": r.tier, "path": str(r.path) if r.path else None}
        if copy:
            rel = f"{r.tier or 'untiered'}/{i:05d}{r.path.suffix.lower() if r.path else '.png'}"
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            if r.path:
                shutil.copyfile(r.path, work / rel)
            else:
                r.load().save(work / rel, "PNG")
            row["path"] = rel
        rows.append(row)
    work.mkdir(parents=True, exist_ok=True)
    manifest = {"source": spec, "release": refs.release, "digest": digest(refs.references),
                "copied": copy, "counts": refs.tiers(), "references": rows}
    (work / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(work, folder)
    return recorded_references(folder, spec)


def recorded_references(folder: Path, spec: str) -> ReferenceSet | None:
    """The set a run recorded for `spec` (record_references), or None when it recorded another
    source or its files are gone (then the source is read again)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        if manifest["source"] != spec:
            return None
        refs = [Reference(id=r["id"], path=folder / r["path"] if manifest["copied"] else Path(r["path"]),
                          tier=r["tier"]) for r in manifest["references"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(r.path.is_file() for r in refs):
        return None
    return ReferenceSet(refs, manifest["release"], spec)


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


def cache_dir() -> Path:
    from salon.models.names import salon_cache

    return salon_cache() / "refs"


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
