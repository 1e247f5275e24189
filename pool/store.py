"""The pool store: every candidate, its render, every label and pairwise choice, in one folder.

    <pool>/pool.db                      SQLite (WAL), schema in salon.pool.schema
    <pool>/images/ab/abcdef….png        PNGs named by the sha256 of their bytes

The folder is ``--pool DIR``, else ``$SALON_POOL``, else ``./salon-pool``. Any number of
processes and threads may read and write it at once (a generation run, the app, a second
labeler, the CLI): writes are short ``BEGIN IMMEDIATE`` transactions that wait up to
``busy_timeout_s`` for each other, candidates are ``INSERT OR IGNORE`` (same id = same sketch),
labels and choices are appended, image files are written atomically before their row.

API (all errors are ``salon.pool.errors.PoolError`` with a message that says what to do)::

    pool = Pool.open(path=None, create=False, busy_timeout_s=30.0)   # a context manager; pool.close()
                                                          # a folder with no pool.db is refused
                                                          # unless create=True (only writers of
                                                          # new candidates create one)
    pool.add_candidate(c: Candidate) -> bool              # True if stored or newly rendered
    pool.add_candidates(cs: Iterable[Candidate]) -> list[bool]
    pool.get(id) -> Candidate | None                      # full id
    pool.resolve_id(id_or_prefix) -> id                   # 6+ hex digits, unique
    pool.has_render(ids) -> set[str]                      # ids stored with a render verdict
    pool.candidates(subject=, model=, ok=, tier=, labeled_by=, unlabelled_by=,
                    hide_duplicates=False, limit=, offset=0) -> list[Candidate]
    pool.image_path(id) -> Path | None                    # None while it has no image
    pool.label(id, tier, by) -> Label                     # tier in love / okay / nope
    pool.undo(id, by) -> Label                            # clears `by`'s current tier
    pool.label_history(id) -> list[Label]
    pool.current_labels(ids=None) -> {id: {labeler: tier}}
    pool.consensus_tier(id) -> str | None                 # rule in salon.pool.consensus
    pool.consensus_tiers() -> {id: tier}                  # labelled candidates only
    pool.add_pair_choice(left_id, right_id, winner, by, shown_left=None) -> PairChoice
    pool.pair_choices() -> list[PairChoice]
    pool.near_duplicates() -> {id: dup_of}                # the app hides these
    pool.dup_distance() -> int
    pool.recompute_duplicates(distance=None) -> int
    pool.record_release(...) -> Release; pool.releases() -> list[Release]
    pool.stats() -> dict                                  # shape in salon.pool.stats
    pool.snapshot() -> Snapshot                           # `with`: several reads of one moment
    pool.check(fix=False) -> list[str]                    # ids whose image file is bad

Near-duplicates: see salon.pool.duplicates (perceptual hash within ``pool.dup_distance()`` bits of
an earlier gate-passing candidate; ``Candidate.dup_of`` names it).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from salon.pool import images
from salon.pool.consensus import consensus
from salon.pool.duplicates import HashIndex, dup_distance, recompute
from salon.pool.errors import PoolError
from salon.pool.models import Candidate, Label, PairChoice, Release, check_tier
from salon.pool.schema import connect, translate, write_transaction
from salon.pool.snapshot import Snapshot

DEFAULT_POOL = "salon-pool"
_BATCH = 200  # candidates per write transaction: short enough that labelers never wait long


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def default_pool_dir() -> Path:
    return Path(os.environ.get("SALON_POOL") or DEFAULT_POOL)


def missing_pool(path: Path) -> str | None:
    """Why `path` is not a pool (a message that says how to make one), or None if it is one."""
    if (path / "pool.db").is_file():
        return None
    what = "does not exist" if not path.exists() else "holds no pool (no pool.db)"
    return (f"no pool at {path}: the folder {what}. Check --pool / $SALON_POOL, or make one with "
            f"`salon pool import PATH... --pool {path}` (or `salon curate generate ... --pool {path}`)")


class Pool:
    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.dir = path
        self.db_path = path / "pool.db"
        self._conn = conn
        self._lock = threading.RLock()  # one connection, many threads (the Gradio app)

    @classmethod
    def open(cls, path: str | os.PathLike | None = None, *, create: bool = False,
             busy_timeout_s: float = 30.0) -> Pool:
        """Open the pool at `path`; a folder holding no pool is refused unless `create`.

        Refusing is what keeps a mistyped ``--pool`` from becoming a new, empty pool that every
        command then reports on as if it were the real one.
        """
        path = Path(path) if path is not None else default_pool_dir()
        if not create and (missing := missing_pool(path)):
            raise PoolError(missing)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise PoolError(f"cannot create pool folder {path} ({e.strerror}): choose another "
                            f"with --pool or $SALON_POOL, or fix its permissions") from None
        if not os.access(path, os.W_OK | os.X_OK):
            raise PoolError(f"pool folder {path} is not writable: fix its permissions or choose "
                            f"another with --pool")
        return cls(path, connect(path / "pool.db", busy_timeout_s))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transactions -------------------------------------------------------------------------

    def _write(self):
        return write_transaction(self._conn, self._lock, self.db_path)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several queries (WAL readers never wait for writers)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                try:
                    yield self._conn
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as e:
                raise translate(e, self.db_path) from e

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """Reads (salon.pool.snapshot) that all see the same moment of the pool."""
        with self._read() as conn:
            yield Snapshot(conn)

    def _query(self, sql: str, params: Iterable = ()) -> list[sqlite3.Row]:
        with self.snapshot() as s:
            return s.query(sql, params)

    # -- candidates ---------------------------------------------------------------------------

    def add_candidate(self, candidate: Candidate) -> bool:
        return self.add_candidates([candidate])[0]

    def add_candidates(self, candidates: Iterable[Candidate]) -> list[bool]:
        """Store candidates; True for each one that is new, or that gained its first render.

        A candidate already stored is left alone, except that one stored without a render
        (renderer unavailable) takes the render given now. PNGs are checked and written before
        the row, so a row never points at a missing file.
        """
        results: list[bool] = []
        batch: list[Candidate] = []
        for c in candidates:
            batch.append(c)
            if len(batch) == _BATCH:
                results += self._add_batch(batch)
                batch = []
        if batch:
            results += self._add_batch(batch)
        return results

    def _add_batch(self, batch: list[Candidate]) -> list[bool]:
        rendered = self.has_render([c.id for c in batch])
        prepared = []
        for c in batch:
            if c.png is not None and c.id not in rendered:
                c.phash = images.check_png(c.png, f"the image of candidate {c.id[:12]}")
                c.image_sha256 = images.write_image(self.dir, c.png)
            prepared.append(c)
        results = []
        with self._write() as conn:
            known = HashIndex(conn)
            for c in prepared:
                if c.guide is not None:
                    conn.execute("INSERT OR IGNORE INTO guide_photos VALUES (?, ?, ?, ?, ?)",
                                 (c.guide.id, c.guide.observation_url, c.guide.photo_url,
                                  c.guide.license, c.guide.attribution))
                c.dup_of = known.match(c.phash) if c.ok and c.phash else None
                cur = conn.execute(
                    "INSERT OR IGNORE INTO candidates (id, code, seed, subject, prompt, model, "
                    "prompt_version, sampling, round, parent_id, guide_photo_id, reply, source, ok, "
                    "violations, js_errors, render_ms, paint_fraction, image_sha256, phash, dup_of, "
                    "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (c.id, c.code, c.seed, c.subject, c.prompt, c.model, c.prompt_version,
                     json.dumps(c.sampling, sort_keys=True), c.round, c.parent_id,
                     c.guide.id if c.guide else None, c.reply, c.source, _ok(c.ok),
                     json.dumps(list(c.violations)), json.dumps(list(c.js_errors)), c.render_ms,
                     c.paint_fraction, c.image_sha256, c.phash, c.dup_of, now()))
                if cur.rowcount == 0 and c.ok is not None:
                    cur = conn.execute(
                        "UPDATE candidates SET ok=?, violations=?, js_errors=?, render_ms=?, "
                        "paint_fraction=?, image_sha256=?, phash=?, dup_of=? "
                        "WHERE id=? AND ok IS NULL",
                        (_ok(c.ok), json.dumps(list(c.violations)), json.dumps(list(c.js_errors)),
                         c.render_ms, c.paint_fraction, c.image_sha256, c.phash, c.dup_of, c.id))
                if cur.rowcount and c.ok and c.phash:
                    known.add(c.id, c.phash)
                results.append(cur.rowcount > 0)
        return results

    def has_render(self, ids: Iterable[str]) -> set[str]:
        ids = list(ids)
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._query(f"SELECT id FROM candidates WHERE ok IS NOT NULL AND id IN ({marks})", chunk)
            found.update(r["id"] for r in rows)
        return found

    def resolve_id(self, id_or_prefix: str) -> str:
        """A full id from an id or a unique prefix (at least 6 hex digits)."""
        text = id_or_prefix.strip().lower()
        if len(text) < 6 or any(ch not in "0123456789abcdef" for ch in text):
            raise PoolError(f"{id_or_prefix!r} is not a candidate id: give at least 6 hex digits "
                            f"of an id listed by `salon pool ls` or the app")
        rows = self._query("SELECT id FROM candidates WHERE id >= ? AND id < ? LIMIT 2",
                           (text, text + "g"))
        if not rows:
            raise PoolError(f"no candidate {id_or_prefix} in {self.dir}: check the id (`salon pool "
                            f"ls` lists them), or import the sketch first with `salon pool import`")
        if len(rows) > 1:
            raise PoolError(f"{id_or_prefix} matches several candidates: give more digits")
        return rows[0]["id"]

    def get(self, id: str) -> Candidate | None:
        with self.snapshot() as s:
            found = s.candidates([id])
        return found[0] if found else None

    def candidates(self, *, subject: str | None = None, model: str | None = None,
                   ok: bool | None = None, tier: str | None = None, labeled_by: str | None = None,
                   unlabelled_by: str | None = None, hide_duplicates: bool = False,
                   limit: int | None = None, offset: int = 0) -> list[Candidate]:
        """Candidates in insertion order, filtered. ``tier`` is a consensus tier or "unlabelled"."""
        where, params = [], []
        for column, value in (("subject", subject), ("model", model)):
            if value is not None:
                where.append(f"c.{column} = ?")
                params.append(value)
        if ok is not None:
            where.append("c.ok = ?")
            params.append(_ok(ok))
        if hide_duplicates:
            where.append("c.dup_of IS NULL")
        current = self.current_labels() if (tier or labeled_by or unlabelled_by) else {}
        if tier is not None and tier != "unlabelled":
            check_tier(tier)
        sql = "SELECT c.id FROM candidates c" + (" WHERE " + " AND ".join(where) if where else "") \
            + " ORDER BY c.rowid"
        kept = []
        for row in self._query(sql, params):
            by = current.get(row["id"], {})
            if tier is not None and (consensus(list(by.values())) or "unlabelled") != tier:
                continue
            if labeled_by is not None and labeled_by not in by:
                continue
            if unlabelled_by is not None and unlabelled_by in by:
                continue
            kept.append(row["id"])
        # Page on ids, then load only that page: the app asks for a screenful of a large pool.
        with self.snapshot() as s:
            return s.candidates(kept[offset:offset + limit if limit is not None else None])

    def image_path(self, id: str) -> Path | None:
        rows = self._query("SELECT image_sha256 FROM candidates WHERE id = ?", (id,))
        if not rows or rows[0]["image_sha256"] is None:
            return None
        return self.dir / images.image_relpath(rows[0]["image_sha256"])

    # -- labels -------------------------------------------------------------------------------

    def label(self, id: str, tier: str, by: str, at: str | None = None) -> Label:
        return self._append_label(id, check_tier(tier), by, at)

    def undo(self, id: str, by: str, at: str | None = None) -> Label:
        return self._append_label(id, None, by, at)

    def _append_label(self, id: str, tier: str | None, by: str, at: str | None) -> Label:
        if not by or not by.strip():
            raise PoolError("a label needs a labeler name: pass --by NAME")
        at = at or now()
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM candidates WHERE id = ?", (id,)).fetchone() is None:
                raise PoolError(f"no candidate {id} in {self.dir}: check the id, or import the "
                                f"sketch first with `salon pool import`")
            cur = conn.execute("INSERT INTO labels (candidate_id, tier, labeler, at) VALUES (?,?,?,?)",
                               (id, tier, by.strip(), at))
        return Label(cur.lastrowid, id, tier, by.strip(), at)

    def label_history(self, id: str) -> list[Label]:
        rows = self._query("SELECT * FROM labels WHERE candidate_id = ? ORDER BY seq", (id,))
        return [Label(r["seq"], r["candidate_id"], r["tier"], r["labeler"], r["at"]) for r in rows]

    def current_labels(self, ids: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
        """{candidate id: {labeler: tier}} from each labeler's latest row; undone labels omitted."""
        with self.snapshot() as s:
            return s.current_labels(ids)

    def consensus_tier(self, id: str) -> str | None:
        return consensus(list(self.current_labels([id]).get(id, {}).values()))

    def consensus_tiers(self) -> dict[str, str]:
        return {cid: consensus(list(by.values())) for cid, by in self.current_labels().items()}

    # -- pairwise choices ---------------------------------------------------------------------

    def add_pair_choice(self, left_id: str, right_id: str, winner: str, by: str,
                        shown_left: str | None = None, at: str | None = None) -> PairChoice:
        if winner not in ("left", "right", "tie"):
            raise PoolError(f"unknown winner {winner!r}: use left, right or tie")
        if left_id == right_id:
            raise PoolError("a pairwise choice needs two different candidates")
        shown_left = shown_left or left_id
        if shown_left not in (left_id, right_id):
            raise PoolError("shown_left must be left_id or right_id")
        if not by or not by.strip():
            raise PoolError("a pairwise choice needs a labeler name")
        at = at or now()
        with self._write() as conn:
            for cid in (left_id, right_id):
                if conn.execute("SELECT 1 FROM candidates WHERE id = ?", (cid,)).fetchone() is None:
                    raise PoolError(f"no candidate {cid} in {self.dir}: check the id")
            cur = conn.execute(
                "INSERT INTO pair_choices (left_id, right_id, winner, labeler, at, shown_left) "
                "VALUES (?,?,?,?,?,?)", (left_id, right_id, winner, by.strip(), at, shown_left))
        return PairChoice(cur.lastrowid, left_id, right_id, winner, by.strip(), at, shown_left)

    def pair_choices(self) -> list[PairChoice]:
        with self.snapshot() as s:
            return s.pair_choices()

    # -- near-duplicates ----------------------------------------------------------------------

    def dup_distance(self) -> int:
        with self._read() as conn:
            return dup_distance(conn)

    def near_duplicates(self) -> dict[str, str]:
        return {r["id"]: r["dup_of"]
                for r in self._query("SELECT id, dup_of FROM candidates WHERE dup_of IS NOT NULL")}

    def recompute_duplicates(self, distance: int | None = None) -> int:
        """Re-derive every dup_of (after changing the distance); returns how many there are."""
        with self._write() as conn:
            return recompute(conn, distance)

    # -- releases, stats, checks --------------------------------------------------------------

    def record_release(self, repo_id: str, revision: str, *, endpoint: str | None, candidates: int,
                       labelled: int, message: str | None) -> Release:
        at = now()
        with self._write() as conn:
            cur = conn.execute("INSERT INTO releases (repo_id, revision, pushed_at, endpoint, candidates, "
                               "labelled, message) VALUES (?,?,?,?,?,?,?)",
                               (repo_id, revision, at, endpoint, candidates, labelled, message))
        return Release(cur.lastrowid, repo_id, revision, at, endpoint, candidates, labelled, message)

    def releases(self) -> list[Release]:
        with self.snapshot() as s:
            return s.releases()

    def stats(self) -> dict:
        from salon.pool.stats import compute_stats

        return compute_stats(self)

    def check(self, fix: bool = False) -> list[str]:
        """Ids whose image file is missing or corrupt; ``fix`` detaches those images so that
        importing the sketch again re-renders it (labels are kept)."""
        bad = []
        for r in self._query("SELECT id, image_sha256 FROM candidates WHERE image_sha256 IS NOT NULL"):
            try:
                images.read_image(self.dir, r["image_sha256"])
            except PoolError:
                bad.append(r["id"])
        if fix and bad:
            with self._write() as conn:
                conn.executemany("UPDATE candidates SET ok = NULL, image_sha256 = NULL, phash = NULL, "
                                 "dup_of = NULL WHERE id = ?", [(i,) for i in bad])
        return bad


def _ok(ok: bool | None) -> int | None:
    return None if ok is None else int(bool(ok))
