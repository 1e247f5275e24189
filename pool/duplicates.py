"""Near-duplicate detection for the store, by perceptual hash (salon.pool.images).

A candidate that passed the gate is a near-duplicate when its image hash is within
``dup_distance`` bits (default 6 of 64; a pool setting) of an *earlier* gate-passing candidate
(insertion order); ``dup_of`` names the earliest such one. Rejected renders (blank canvases,
text) are not compared: they are not paintings anyone would see twice. Runs inside the store's
write transaction, so two writers cannot both miss each other's copy.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from salon.pool import images

DEFAULT_DUP_DISTANCE = 6


def dup_distance(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM settings WHERE key = 'dup_distance'").fetchone()
    return int(row[0]) if row else DEFAULT_DUP_DISTANCE


class HashIndex:
    """Hashes of gate-passing candidates, to find an earlier near-duplicate of a new one."""

    def __init__(self, conn: sqlite3.Connection, empty: bool = False):
        self.distance = dup_distance(conn)
        rows = [] if empty else conn.execute(
            "SELECT id, phash FROM candidates WHERE ok = 1 AND phash IS NOT NULL ORDER BY rowid").fetchall()
        self.ids = [r[0] for r in rows]
        self.hashes = images.hashes_to_array([r[1] for r in rows])

    def match(self, phash: str) -> str | None:
        close = images.hamming_to_all(phash, self.hashes) <= self.distance
        return self.ids[int(close.argmax())] if close.any() else None

    def add(self, id: str, phash: str) -> None:
        self.ids.append(id)
        self.hashes = np.append(self.hashes, images.hashes_to_array([phash]))


def recompute(conn: sqlite3.Connection, distance: int | None = None) -> int:
    """Re-derive every dup_of (optionally storing a new distance); returns how many there are."""
    if distance is not None:
        conn.execute("INSERT OR REPLACE INTO settings VALUES ('dup_distance', ?)", (str(int(distance)),))
    conn.execute("UPDATE candidates SET dup_of = NULL")
    known = HashIndex(conn, empty=True)
    rows = conn.execute("SELECT id, phash FROM candidates WHERE ok = 1 AND phash IS NOT NULL ORDER BY rowid")
    for cid, phash in rows.fetchall():
        dup = known.match(phash)
        if dup:
            conn.execute("UPDATE candidates SET dup_of = ? WHERE id = ?", (dup, cid))
        known.add(cid, phash)
    return conn.execute("SELECT count(*) FROM candidates WHERE dup_of IS NOT NULL").fetchone()[0]
