"""What people said about a training run, stored with it: blind checkpoint choices and suspect marks.

    with Reviews.open("runs/x") as reviews:                # RUN_DIR/reviews.db (SQLite, WAL)
        reviews.add_choice(left, right, "left", "ann")     # left/right: eval samples' provenance
        reviews.choices() -> list[CheckpointChoice]
        reviews.mark(suspect, "hack", "ann")               # a suspect of `salon audit --suspects`
        reviews.current_marks() -> {rollout_id: {labeler: "hack" | "fine"}}

Where and why: RUN_DIR/reviews.db, beside checkpoint-N/, rollouts/, eval/ and audit/. The
judgements are about this run's checkpoints and rollouts, so they travel with the run when it is
copied or pushed, and `salon eval` / `salon audit` read them with no pool in sight. They are not
in eval/ or audit/: those are outputs a command recomputes (and a user may delete), while a
person's choices cannot be recomputed. They are not in the pool either: the pool's pair choices
are between pool candidates (foreign keys), and a pool release is a reward function; checkpoint
paintings are neither.

Append-only like the pool's labels: a changed mind is a new row, and a labeler's latest mark of a
suspect is the one that counts. Every choice carries its provenance (run, both steps, prompt,
seed, both samples' ids), so it stays meaningful if the eval is redone with other prompts.
Concurrency is the pool's: WAL, short BEGIN IMMEDIATE writes, a busy timeout (salon.pool.schema).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from salon.pool.errors import PoolError
from salon.pool.schema import connect, translate, write_transaction
from salon.pool.store import now

WINNERS = ("left", "right", "tie")
VERDICTS = ("hack", "fine")
MIGRATIONS = [
    """
    CREATE TABLE checkpoint_choices (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run TEXT NOT NULL,
        prompt TEXT NOT NULL,
        subject TEXT,
        seed INTEGER NOT NULL,
        left_step INTEGER NOT NULL,          -- the checkpoint shown on the left of the screen
        right_step INTEGER NOT NULL,
        left_sample TEXT NOT NULL,           -- eval sample ids (salon.train.eval.dataset)
        right_sample TEXT NOT NULL,
        winner TEXT NOT NULL CHECK (winner IN ('left', 'right', 'tie')),
        labeler TEXT NOT NULL CHECK (length(labeler) > 0),
        at TEXT NOT NULL
    );
    CREATE TABLE suspect_marks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        rollout_id TEXT NOT NULL,            -- salon.train.eval.suspects.rollout_id
        step INTEGER NOT NULL,
        subject TEXT,
        reward REAL,
        flags TEXT NOT NULL DEFAULT '[]',    -- JSON list: why the audit flagged it
        verdict TEXT NOT NULL CHECK (verdict IN ('hack', 'fine')),
        labeler TEXT NOT NULL CHECK (length(labeler) > 0),
        at TEXT NOT NULL
    );
    CREATE INDEX suspect_marks_rollout ON suspect_marks(rollout_id, labeler, seq);
    """,
]


@dataclass(frozen=True)
class CheckpointChoice:
    seq: int
    run: str
    prompt: str
    subject: str | None
    seed: int
    left_step: int
    right_step: int
    left_sample: str
    right_sample: str
    winner: str  # relative to what was shown: left, right or tie
    labeler: str
    at: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SuspectMark:
    seq: int
    rollout_id: str
    step: int
    subject: str | None
    reward: float | None
    flags: list[str]
    verdict: str
    labeler: str
    at: str


class Reviews:
    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path = path
        self._conn = conn
        self._lock = threading.RLock()  # one connection, the app's threads

    @classmethod
    def open(cls, run_dir: str | Path, busy_timeout_s: float = 30.0) -> Reviews:
        run_dir = Path(run_dir)
        if not run_dir.is_dir():
            raise PoolError(f"{run_dir}: no such run folder (a salon train --output-dir)")
        return cls(run_dir / "reviews.db", connect(run_dir / "reviews.db", busy_timeout_s, MIGRATIONS))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Reviews:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self):
        return write_transaction(self._conn, self._lock, self.path)

    def _read(self, sql: str, args=()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.Error as e:
                raise translate(e, self.path) from e

    # -- blind checkpoint comparisons ------------------------------------------------------------

    def add_choice(self, left: dict, right: dict, winner: str, by: str, run: str) -> CheckpointChoice:
        """`left`/`right`: the two eval samples as shown ({sample_id, step, prompt, subject, seed})."""
        if winner not in WINNERS:
            raise PoolError(f"unknown winner {winner!r}: use left, right or tie")
        if not by or not by.strip():
            raise PoolError("a checkpoint choice needs a labeler name")
        if left["step"] == right["step"]:
            raise PoolError("a checkpoint choice needs two different checkpoints")
        if (left["prompt"], left["seed"]) != (right["prompt"], right["seed"]):
            raise PoolError("a checkpoint choice compares one prompt and seed: these samples differ")
        row = (run, left["prompt"], left.get("subject"), int(left["seed"]), int(left["step"]), int(right["step"]),
               left["sample_id"], right["sample_id"], winner, by.strip(), now())
        with self._write() as conn:
            cur = conn.execute("INSERT INTO checkpoint_choices (run, prompt, subject, seed, left_step, right_step, "
                               "left_sample, right_sample, winner, labeler, at) VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)
        return CheckpointChoice(cur.lastrowid, *row)

    def choices(self) -> list[CheckpointChoice]:
        return [CheckpointChoice(**dict(r)) for r in self._read("SELECT * FROM checkpoint_choices ORDER BY seq")]

    # -- suspects: hack or fine ------------------------------------------------------------------

    def mark(self, suspect: dict, verdict: str, by: str) -> SuspectMark:
        """`suspect`: an entry of the suspects list ({rollout_id, step, subject, reward, flags})."""
        if verdict not in VERDICTS:
            raise PoolError(f"unknown verdict {verdict!r}: use hack or fine")
        if not by or not by.strip():
            raise PoolError("a mark needs a labeler name")
        flags = list(suspect.get("flags") or [])
        row = (suspect["rollout_id"], int(suspect["step"]), suspect.get("subject"), suspect.get("reward"),
               json.dumps(flags), verdict, by.strip(), now())
        with self._write() as conn:
            cur = conn.execute("INSERT INTO suspect_marks (rollout_id, step, subject, reward, flags, verdict, "
                               "labeler, at) VALUES (?,?,?,?,?,?,?,?)", row)
        return SuspectMark(cur.lastrowid, row[0], row[1], row[2], row[3], flags, *row[5:])

    def current_marks(self) -> dict[str, dict[str, str]]:
        """{rollout_id: {labeler: verdict}} from each labeler's latest mark."""
        out: dict[str, dict[str, str]] = {}
        for r in self._read("SELECT rollout_id, labeler, verdict FROM suspect_marks ORDER BY seq"):
            out.setdefault(r["rollout_id"], {})[r["labeler"]] = r["verdict"]
        return out
