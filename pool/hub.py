"""Publish a pool to the Hugging Face Hub, and pull a pinned release back as judge references.

    salon pool push REPO_ID [--private] [--message M]      # push(pool, repo_id) -> Release
    salon pool pull REPO_ID [--revision REV] --to DIR      # pull(repo_id, DIR) -> Pulled

Push exports the pool (salon.pool.export) into a staging folder inside the pool, creates the
dataset repo if needed, and uploads the folder with ``HfApi.upload_folder``. From
huggingface_hub 1.20, with hf_xet (installed with it on x86-64 and ARM), that call is the
client's large-folder upload (``upload_large_folder`` is deprecated, and gone in 2.x): a big
export goes up in several commits, the first with the message and the deletion of the previous
release's stale shards, the others titled "MESSAGE (part N)". The release recorded is the last
commit, which holds the whole export; a push cut off part-way leaves ``main`` between two
releases until it is run again. Running it again exports again (the same shards, byte for byte,
when the pool has not changed; only the card's date differs) and the client skips every file
already on the Hub. Without hf_xet it is one commit, and a re-run sends no shard twice.
The pushed commit id is printed and recorded in the pool's ``releases`` table.

Pull resolves REV (default: main) to a full commit id first, downloads the ``default`` config
at exactly that commit, and writes a reference folder the judges read::

    DIR/manifest.json       {"repo_id", "revision" (40-hex commit), "pulled_at",
                             "counts": {"love": n, "okay": n, "nope": n},
                             "references": [{"id", "tier", "path", "subject", "model",
                                             "labels": {labeler: tier}}]}
    DIR/refs/<tier>/<id>.png
    DIR/README.md           the release's dataset card (provenance, attributions)

``path`` is relative to DIR. The folder is read by one loader, ``salon.judges.load_references``,
which returns the references with their release ``f"{repo_id}@{revision}"``. Pulling into a
folder that already holds references replaces them whole (built in a temporary sibling, then
renamed into place); pulling the commit the folder already holds changes nothing. Concurrent
pulls into one folder (every process of a multi-GPU run) are safe: a lock file next to it
(``.DIR.lock``) lets one pull at a time, and the others then find the commit already there.

The endpoint is ``HF_ENDPOINT`` (read by huggingface_hub at import) unless ``endpoint=`` is
given; the token is ``HF_TOKEN`` or the saved login unless ``token=`` is given.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from salon.pool.errors import HubError, PoolError
from salon.pool.models import TIERS

REPO_TYPE = "dataset"


@dataclass(frozen=True)
class Pulled:
    """What a pull left in `folder`: the pinned commit and how many paintings of each tier."""

    repo_id: str
    revision: str  # the full commit id
    folder: Path
    counts: dict[str, int]

    @property
    def release(self) -> str:
        return f"{self.repo_id}@{self.revision}"


def hub_error(action: str, repo_id: str, e: Exception) -> HubError:
    """A HubError that says what failed and what to do (log in, check the id, retry); for any Hub call."""
    causes = [e]
    while causes[-1].__cause__ is not None:  # the client wraps the HTTP error of a failed upload
        causes.append(causes[-1].__cause__)
    http = next((c for c in causes if getattr(c, "response", None) is not None), e)
    text = str(http).splitlines()[0] if str(http) else type(http).__name__
    status = getattr(getattr(http, "response", None), "status_code", None)
    if status in (401, 403):
        hint = "log in with `hf auth login` or set HF_TOKEN to a token with write access"
    elif status == 404:
        hint = "check the repo id and revision (REPO_ID is namespace/name)"
    else:
        hint = "check the network and HF_ENDPOINT, then run the same command again (it resumes)"
    return HubError(f"{action} {repo_id} failed ({text}): {hint}")


def push(pool, repo_id: str, *, private: bool = False, message: str | None = None,
         token: str | None = None, endpoint: str | None = None, export_config=None):
    """Export and upload the pool; returns the recorded Release (its ``revision`` is the commit)."""
    from huggingface_hub import HfApi, constants

    from salon.pool.export import export_pool

    if repo_id.count("/") != 1:
        raise HubError(f"repo id {repo_id!r} must be namespace/name, e.g. you/salon-pool")
    staging = Path(tempfile.mkdtemp(prefix=".push-", dir=pool.dir))
    try:
        result = export_pool(pool, staging / "export", export_config)
        api = HfApi(endpoint=endpoint, token=token)
        message = message or f"salon pool: {result.labelled} labelled of {result.candidates} candidates"
        try:
            api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
            info = api.upload_folder(repo_id=repo_id, repo_type=REPO_TYPE, folder_path=result.path,
                                     commit_message=message,
                                     delete_patterns=["data/*", "candidates/*", "pairs/*"])
        except Exception as e:  # huggingface_hub raises HTTP, OS and value errors
            raise hub_error("push to", repo_id, e) from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return pool.record_release(repo_id, info.oid, endpoint=endpoint or constants.ENDPOINT,
                               candidates=result.candidates, labelled=result.labelled, message=message)


def pull(repo_id: str, to: str | Path, *, revision: str | None = None, token: str | None = None,
         endpoint: str | None = None) -> Pulled:
    """Fetch the ``default`` config at a pinned commit into a reference folder (see the module doc)."""
    from filelock import FileLock

    to = Path(to)
    try:
        to.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(to.parent / f".{to.name}.lock"))
        lock.acquire()
    except OSError as e:
        raise PoolError(f"cannot write next to {to} ({e.strerror}): choose another folder with --to") from None
    try:  # one pull at a time per folder: another process may be reading what this one would replace
        return _pull_locked(repo_id, to, revision, token, endpoint)
    finally:
        lock.release()


def _pull_locked(repo_id: str, to: Path, revision: str | None, token: str | None, endpoint: str | None) -> Pulled:
    from huggingface_hub import HfApi, snapshot_download

    held = _pulled(to)
    if to.exists() and any(to.iterdir()) and held is None:
        raise PoolError(f"{to} is not empty and holds no references: pull into a new or empty folder")
    try:
        sha = HfApi(endpoint=endpoint, token=token).dataset_info(repo_id, revision=revision or "main").sha
    except Exception as e:
        raise hub_error("pull of", repo_id, e) from e
    if held is not None and (held.repo_id, held.revision) == (repo_id, sha):
        return held  # already here (another process pulled it): replacing it would pull it from under readers
    work = Path(tempfile.mkdtemp(prefix=f".{to.name}.pull-", dir=to.parent))
    try:
        try:
            snapshot_download(repo_id, repo_type=REPO_TYPE, revision=sha, token=token, endpoint=endpoint,
                              local_dir=work / "download", allow_patterns=["README.md", "data/*"])
        except Exception as e:
            raise hub_error("pull of", repo_id, e) from e
        _write_references(work / "download", work / "refs-folder", repo_id, sha)
        if to.exists():
            os.replace(to, work / "previous")  # renames, not a delete then a copy: never half a folder
        os.replace(work / "refs-folder", to)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _pulled(to)


def _pulled(folder: Path) -> Pulled | None:
    """The release a reference folder holds, or None when it holds none."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        return Pulled(manifest["repo_id"], manifest["revision"], folder, dict(manifest.get("counts", {})))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_references(download: Path, out: Path, repo_id: str, sha: str) -> None:
    from salon.pool.export import labelled_images

    if not list((download / "data").glob("*.parquet")):
        raise HubError(f"{repo_id}@{sha} has no data/*.parquet: it is not a salon pool release, or "
                       f"nothing in it was labelled; label candidates, push, and pull that revision")
    for tier in TIERS:
        (out / "refs" / tier).mkdir(parents=True, exist_ok=True)
    refs, counts = [], {t: 0 for t in TIERS}
    for row in labelled_images(download):
        rel = f"refs/{row['tier']}/{row['id']}.png"
        (out / rel).write_bytes(row.pop("png"))
        counts[row["tier"]] += 1
        refs.append({**row, "path": rel})
    if (download / "README.md").exists():
        shutil.copyfile(download / "README.md", out / "README.md")
    manifest = {"repo_id": repo_id, "revision": sha,
                "pulled_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "counts": counts, "references": refs}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
