"""The pool's SQLite schema, its numbered migrations, and how a connection is opened.

``PRAGMA user_version`` holds the schema version; ``MIGRATIONS[i]`` (SQL, or a function of the
connection and the pool folder when data must be recomputed) takes a database from version i to
i+1 inside one transaction, so a crash mid-migration leaves the old version. A
database newer than this salon is refused (upgrade salon) rather than guessed at.

Connections: WAL (readers never block the one writer), ``synchronous=NORMAL`` (a committed
transaction survives a killed process; only an OS crash may lose the last commits),
foreign keys on, ``busy_timeout`` so concurrent writers queue instead of failing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from salon.pool.errors import PoolError


def _rehash(conn: sqlite3.Connection, pool_dir: Path) -> None:
    """Perceptual hashes written before salon used imagehash.phash (a hand-written DCT hash that
    differed from it in 0-2 bits of 64) are recomputed from the stored images, then every
    near-duplicate link. About 5 ms an image, once. A missing or damaged image gets no hash;
    `salon pool check --fix` finds it."""
    from salon.pool import duplicates, images

    rows = conn.execute("SELECT id, image_sha256 FROM candidates WHERE image_sha256 IS NOT NULL").fetchall()
    for cid, sha in rows:
        try:
            phash = images.check_png(images.read_image(pool_dir, sha), f"the image of candidate {cid[:12]}")
        except PoolError:
            phash = None
        conn.execute("UPDATE candidates SET phash = ? WHERE id = ?", (phash, cid))
    duplicates.recompute(conn)


MIGRATIONS: list[str | Callable[[sqlite3.Connection, Path], None]] = [
    # 0 -> 1: the first schema.
    """
    CREATE TABLE guide_photos (
        id TEXT PRIMARY KEY,
        observation_url TEXT,
        photo_url TEXT,
        license TEXT,
        attribution TEXT
    );
    CREATE TABLE candidates (
        rowid INTEGER PRIMARY KEY,          -- insertion order: "earlier" for near-duplicates
        id TEXT NOT NULL UNIQUE,            -- sha256(code, seed), see models.candidate_id
        code TEXT NOT NULL,
        seed INTEGER NOT NULL,
        subject TEXT,
        prompt TEXT,
        model TEXT,
        prompt_version TEXT,
        sampling TEXT NOT NULL DEFAULT '{}',   -- JSON object
        round INTEGER NOT NULL DEFAULT 0,
        parent_id TEXT,
        guide_photo_id TEXT REFERENCES guide_photos(id),
        reply TEXT,
        source TEXT,
        ok INTEGER,                         -- NULL: no render yet; 1 passed the gate; 0 rejected
        violations TEXT NOT NULL DEFAULT '[]', -- JSON list of violation codes
        js_errors TEXT NOT NULL DEFAULT '[]',
        render_ms INTEGER,
        paint_fraction REAL,
        image_sha256 TEXT,                  -- images/<first 2 hex>/<sha256>.png
        phash TEXT,
        dup_of TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX candidates_model ON candidates(model);
    CREATE INDEX candidates_subject ON candidates(subject);
    CREATE INDEX candidates_dup ON candidates(dup_of);
    CREATE TABLE labels (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- append order decides a labeler's current tier
        candidate_id TEXT NOT NULL REFERENCES candidates(id),
        tier TEXT CHECK (tier IN ('love', 'okay', 'nope')),  -- NULL: undo
        labeler TEXT NOT NULL CHECK (length(labeler) > 0),
        at TEXT NOT NULL
    );
    CREATE INDEX labels_candidate ON labels(candidate_id, labeler, seq);
    CREATE TABLE pair_choices (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        left_id TEXT NOT NULL REFERENCES candidates(id),
        right_id TEXT NOT NULL REFERENCES candidates(id),
        winner TEXT NOT NULL CHECK (winner IN ('left', 'right', 'tie')),
        labeler TEXT NOT NULL CHECK (length(labeler) > 0),
        at TEXT NOT NULL,
        shown_left TEXT NOT NULL
    );
    CREATE TABLE releases (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        repo_id TEXT NOT NULL,
        revision TEXT NOT NULL,
        pushed_at TEXT NOT NULL,
        endpoint TEXT,
        candidates INTEGER NOT NULL,
        labelled INTEGER NOT NULL,
        message TEXT
    );
    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 1 -> 2: perceptual hashes are imagehash.phash.
    _rehash,
]
SCHEMA_VERSION = len(MIGRATIONS)


def connect(db_path: Path, busy_timeout_s: float, migrations: list | None = None) -> sqlite3.Connection:
    """Open (creating if needed) and migrate the pool database (or another salon database with its
    own `migrations`, e.g. a run's reviews: salon.train.eval.reviews); errors say what to do."""
    try:
        conn = sqlite3.connect(db_path, timeout=busy_timeout_s, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise PoolError(f"{db_path}: SQLite refused WAL mode ({mode}); put the pool on a local disk")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, db_path, MIGRATIONS if migrations is None else migrations)
    except sqlite3.DatabaseError as e:
        raise translate(e, db_path) from e
    conn.row_factory = sqlite3.Row
    return conn


def migrate(conn: sqlite3.Connection, db_path: Path, migrations: list = MIGRATIONS) -> None:
    latest = len(migrations)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > latest:
        raise PoolError(f"{db_path} has schema version {version}, newer than this salon "
                        f"understands ({latest}): upgrade salon")
    while version < latest:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write lock.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version < latest:
                step = migrations[version]
                if callable(step):
                    step(conn, db_path.parent)
                else:
                    for statement in step.split(";\n"):
                        if statement.strip():
                            conn.execute(statement)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


@contextmanager
def write_transaction(conn: sqlite3.Connection, lock, db_path: Path) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT under `lock` (one connection, many threads), rolled back on any
    error; SQLite errors become PoolErrors that say what to do."""
    with lock:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise translate(e, db_path) from e
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                raise translate(e, db_path) from e
            raise


def translate(error: sqlite3.Error, db_path: Path) -> PoolError:
    """Turn an SQLite error into a PoolError whose message says what to do."""
    text = str(error)
    if "locked" in text or "busy" in text:
        return PoolError(f"{db_path} is locked by another process (a long write or a crashed "
                         f"tool holding it): retry, or stop the other writer ({text})")
    if "not a database" in text or "malformed" in text or "disk image" in text:
        return PoolError(f"{db_path} is damaged ({text}): restore it from a backup or pull a "
                         f"published release with `salon pool pull`; the image files under "
                         f"images/ are untouched")
    if "readonly" in text or "unable to open" in text or "disk I/O" in text:
        return PoolError(f"cannot write {db_path} ({text}): check the folder's permissions and "
                         f"free space, or choose another pool with --pool")
    if isinstance(error, sqlite3.IntegrityError):
        return PoolError(f"refused by the pool database: {text}")
    return PoolError(f"{db_path}: {text}")
