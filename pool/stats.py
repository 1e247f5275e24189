"""What is in a pool, as one JSON-ready dict (``salon pool stats --json`` prints it as is).

    {"candidates": int,
     "tiers": {"love", "okay", "nope", "unlabelled"},          # consensus tiers, all candidates
     "by_model": {MODEL: {"candidates", "ok", "rejected", "unrendered"}},
     "by_subject": {SUBJECT: {"candidates", "ok", "rejected", "unrendered"}},
     "violations": {CODE: candidates with that violation},
     "labelers": {NAME: candidates they currently label},
     "agreement": {"method": "cohen"|"fleiss"|None, "kappa": float|None, "candidates": int},
     "near_duplicates": int, "pair_choices": int,
     "latest_release": {"repo_id", "revision", "pushed_at"} | None}

A candidate without a model or subject is counted under "unknown". Aggregates are computed in
SQLite in one read snapshot; only the consensus and kappa run in Python.
"""

from __future__ import annotations

from collections import Counter

from salon.pool.consensus import agreement, consensus
from salon.pool.models import TIERS

_GROUPED = ("SELECT coalesce({col}, 'unknown') AS k, count(*) AS n, sum(ok = 1) AS ok, "
            "sum(ok = 0) AS rejected, sum(ok IS NULL) AS unrendered FROM candidates GROUP BY k ORDER BY k")


def compute_stats(pool) -> dict:
    with pool.snapshot() as s:
        total = s.query("SELECT count(*) FROM candidates")[0][0]
        grouped = {col: {r["k"]: {"candidates": r["n"], "ok": r["ok"] or 0, "rejected": r["rejected"] or 0,
                                  "unrendered": r["unrendered"] or 0}
                         for r in s.query(_GROUPED.format(col=col))}
                   for col in ("model", "subject")}
        violations = {r[0]: r[1] for r in s.query(
            "SELECT j.value, count(DISTINCT c.id) FROM candidates c, json_each(c.violations) j "
            "GROUP BY j.value ORDER BY j.value")}
        dups = s.query("SELECT count(*) FROM candidates WHERE dup_of IS NOT NULL")[0][0]
        pairs = s.query("SELECT count(*) FROM pair_choices")[0][0]
        releases = s.releases()
        current = s.current_labels()
    latest = releases[-1] if releases else None
    tiers = Counter(consensus(list(by.values())) for by in current.values())
    labelers = Counter(who for by in current.values() for who in by)
    return {
        "candidates": total,
        "tiers": {**{t: tiers[t] for t in TIERS}, "unlabelled": total - len(current)},
        "by_model": grouped["model"],
        "by_subject": grouped["subject"],
        "violations": violations,
        "labelers": dict(sorted(labelers.items())),
        "agreement": agreement(current).to_dict(),
        "near_duplicates": dups,
        "pair_choices": pairs,
        "latest_release": {"repo_id": latest.repo_id, "revision": latest.revision,
                           "pushed_at": latest.pushed_at} if latest else None,
    }
