"""Reading a pool: one consistent snapshot of its candidates, labels, choices and releases.

    with pool.snapshot() as s:                      # one SQLite read transaction
        candidates = s.candidates()                 # every candidate, in insertion order
        labels = s.current_labels()                 # {id: {labeler: tier}}
        choices, releases = s.pair_choices(), s.releases()
        n = s.query("SELECT count(*) AS n FROM candidates")[0]["n"]   # aggregates over salon.pool.schema

Everything read inside one ``with`` sees the same moment, whatever other processes write
meanwhile (WAL readers never wait for writers), so an export's rows, labels and choices agree
with each other. The store's own reads (``Pool.get``, ``Pool.current_labels`` ...) are these.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from salon.pool.models import Candidate, GuidePhoto, PairChoice, Release

_SELECT = ("SELECT c.*, g.observation_url AS g_obs, g.photo_url AS g_url, g.license AS g_license, "
           "g.attribution AS g_attr FROM candidates c LEFT JOIN guide_photos g ON g.id = c.guide_photo_id")

# Each labeler's latest row per candidate; an undo (tier NULL) leaves no current tier.
_CURRENT_LABELS = (
    "SELECT l.candidate_id, l.labeler, l.tier FROM labels l JOIN "
    "(SELECT max(seq) AS seq FROM labels GROUP BY candidate_id, labeler) m ON l.seq = m.seq "
    "WHERE l.tier IS NOT NULL")

_CHUNK = 500  # ids per IN (...) query, under SQLite's bound-parameter limit


class Snapshot:
    """Reads inside one read transaction of a pool; made by ``Pool.snapshot()``."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def query(self, sql: str, params: Iterable = ()) -> list[sqlite3.Row]:
        """Rows of a read-only query over the tables of salon.pool.schema."""
        return self._conn.execute(sql, tuple(params)).fetchall()

    def candidates(self, ids: Iterable[str] | None = None) -> list[Candidate]:
        """Every candidate in insertion order, or those of ``ids`` that exist, in the order given."""
        if ids is None:
            return [_candidate(r) for r in self.query(_SELECT + " ORDER BY c.rowid")]
        ids = list(ids)
        rows = {}
        for i in range(0, len(ids), _CHUNK):
            chunk = ids[i:i + _CHUNK]
            rows |= {r["id"]: r for r in self.query(_SELECT + f" WHERE c.id IN ({','.join('?' * len(chunk))})",
                                                    chunk)}
        return [_candidate(rows[cid]) for cid in ids if cid in rows]

    def current_labels(self, ids: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
        """{candidate id: {labeler: tier}} from each labeler's latest row; undone labels omitted."""
        wanted = set(ids) if ids is not None else None
        out: dict[str, dict[str, str]] = {}
        for cid, labeler, tier in self.query(_CURRENT_LABELS):
            if wanted is None or cid in wanted:
                out.setdefault(cid, {})[labeler] = tier
        return out

    def pair_choices(self) -> list[PairChoice]:
        return [PairChoice(r["seq"], r["left_id"], r["right_id"], r["winner"], r["labeler"],
                           r["at"], r["shown_left"])
                for r in self.query("SELECT * FROM pair_choices ORDER BY seq")]

    def releases(self) -> list[Release]:
        return [Release(*tuple(r)) for r in self.query(
            "SELECT seq, repo_id, revision, pushed_at, endpoint, candidates, labelled, message "
            "FROM releases ORDER BY seq")]


def _candidate(r: sqlite3.Row) -> Candidate:
    guide = None
    if r["guide_photo_id"] is not None:
        guide = GuidePhoto(r["guide_photo_id"], r["g_obs"], r["g_url"], r["g_license"], r["g_attr"])
    return Candidate(
        code=r["code"], seed=r["seed"], subject=r["subject"], prompt=r["prompt"], model=r["model"],
        prompt_version=r["prompt_version"], sampling=json.loads(r["sampling"]), round=r["round"],
        parent_id=r["parent_id"], guide=guide, reply=r["reply"], source=r["source"],
        ok=None if r["ok"] is None else bool(r["ok"]), violations=json.loads(r["violations"]),
        js_errors=json.loads(r["js_errors"]), render_ms=r["render_ms"],
        paint_fraction=r["paint_fraction"], id=r["id"], image_sha256=r["image_sha256"],
        phash=r["phash"], dup_of=r["dup_of"], created_at=r["created_at"])
