"""Highest-reward failures first: the K best-rewarded rollouts that an audit measure flags.

    salon audit RUN_DIR --suspects 24          # RUN_DIR/audit/suspects.json, suspects.png, suspects/<id>.png
    found = find_suspects("runs/x", k=24)      # the same, as a dict; then people mark them in the app

A rendered rollout is flagged when (each measure shared with the rest of salon):

    blank            under BLANK_FRACTION paint, or the gate said blank_canvas (salon.pool.paint;
                     the audit's blank share counts the same)
    low_coverage     paint in fewer than `low_coverage` (0.3) of the 4x4 grid's cells
    near_duplicate   within the pool's near-duplicate distance (perceptual hash, 6 of 64 bits) of a
                     painting of another prompt in the same step (renders of one sketch with two
                     seeds are 16-30 bits apart; distinct examples at least 22)
    text_like        more than `text_like` (0.3) of its paint on hard edges (judges.image_judges:
                     washes are soft; the bundled examples score at most 0.16, words about 0.5)
    template         the collapsed template's shape: paint in the upper half (>= 0.1) over a
                     lower half with almost none (< 0.02)

The flagged rollouts are ranked by reward, highest first: a hack the reward loves is the one to
see first (the reward-hacking preprint's advice). A person marks each hack or fine in the app
(`salon app --run RUN_DIR`, Suspects tab); marks live in RUN_DIR/reviews.db (salon.train.eval.reviews)
and `salon audit` reports the share marked as hacks.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

FLAGS = ("blank", "low_coverage", "near_duplicate", "text_like", "template")
SHORT = {"blank": "blank", "low_coverage": "low-cov", "near_duplicate": "dup", "text_like": "text", "template": "templ"}


@dataclass
class SuspectSettings:
    low_coverage: float = 0.3
    text_like: float = 0.3
    template_upper: float = 0.1
    template_lower: float = 0.02


def rollout_id(row: dict) -> str:
    """A rollout's stable id in its run: step, group, position and process name one completion."""
    key = f"{row['step']}\x1f{row['group']}\x1f{row['position']}\x1f{row.get('process', 0)}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def flags_of(row: dict, image, settings: SuspectSettings) -> list[str]:
    """The per-painting flags (all but near_duplicate, which needs the step's other paintings)."""
    from salon.judges.image_judges import composition, hard_edge_share
    from salon.train.record.audit import is_blank

    c = composition(image)
    found = []
    if is_blank(row):
        found.append("blank")
    if c.coverage < settings.low_coverage:
        found.append("low_coverage")
    if hard_edge_share(image) > settings.text_like:
        found.append("text_like")
    if c.upper_half >= settings.template_upper and c.lower_half < settings.template_lower:
        found.append("template")
    return found


def near_duplicates(rows: list[dict], pngs: list[bytes]) -> set[int]:
    """Indexes of paintings within the pool's near-duplicate distance of another prompt's, same step."""
    from salon.pool.duplicates import DEFAULT_DUP_DISTANCE
    from salon.pool.errors import PoolError
    from salon.pool.images import check_png, hamming_to_all, hashes_to_array

    hashes = {}
    for i, png in enumerate(pngs):
        try:
            hashes[i] = check_png(png, "a rollout's painting")
        except PoolError:
            continue  # an undecodable PNG is the reward's missing image, not a suspect
    by_step: dict = {}
    for i in hashes:
        by_step.setdefault(rows[i]["step"], []).append(i)
    out: set[int] = set()
    for idx in by_step.values():
        table = hashes_to_array([hashes[i] for i in idx])
        for a in idx:
            close = hamming_to_all(hashes[a], table) <= DEFAULT_DUP_DISTANCE
            if any(c and rows[b]["prompt"] != rows[a]["prompt"] for b, c in zip(idx, close)):
                out.add(a)
    return out


def find_suspects(run_dir: str | Path, k: int, settings: SuspectSettings | None = None,
                  out: Path | None = None, frame=None) -> dict:
    """The top-k flagged rollouts by reward (`frame`: the archive already loaded with its images);
    with `out`, their PNGs, a grid and suspects.json there."""
    from PIL import Image

    from salon.train.record.archive import load_rollouts
    from salon.train.record.audit import records_of

    settings = settings or SuspectSettings()
    df = load_rollouts(run_dir) if frame is None else frame
    records, pngs = records_of(df), list(df["image"])
    rendered = [i for i, (r, png) in enumerate(zip(records, pngs)) if png and r["reward"] is not None]
    dups = near_duplicates([records[i] for i in rendered], [pngs[i] for i in rendered])
    flagged = []
    for n, i in enumerate(rendered):
        r = records[i]
        found = set(flags_of(r, Image.open(io.BytesIO(pngs[i])).convert("RGB"), settings))
        if n in dups:
            found.add("near_duplicate")
        found = [f for f in FLAGS if f in found]
        if found:
            flagged.append((i, found))
    flagged.sort(key=lambda item: -records[item[0]]["reward"])
    suspects = [{"rollout_id": rollout_id(records[i]), "step": int(records[i]["step"]),
                 "subject": records[i].get("subject"), "reward": float(records[i]["reward"]),
                 "flags": found, "gate_passed": bool(records[i]["gate_passed"]),
                 "group": records[i]["group"], "position": int(records[i]["position"])} for i, found in flagged[:k]]
    result = {"k": k, "flagged": len(flagged), "rendered": len(rendered), "suspects": suspects,
              "settings": settings.__dict__, "by_flag": {f: sum(f in x for _, x in flagged) for f in FLAGS}}
    if out is not None:
        result.update(write_suspects(out, suspects, {s["rollout_id"]: pngs[i] for s, (i, _) in
                                                     zip(suspects, flagged)}, result))
    return result


def write_suspects(folder: Path, suspects: list[dict], pngs: dict[str, bytes], result: dict) -> dict:
    from PIL import Image

    from salon.train.record.image_grid import image_grid

    images = folder / "suspects"
    images.mkdir(parents=True, exist_ok=True)
    for old in images.glob("*.png"):
        old.unlink()  # the list is rewritten whole: no stale suspect stays on offer in the app
    for s in suspects:
        s["image"] = str((images / f"{s['rollout_id']}.png").resolve())
        Path(s["image"]).write_bytes(pngs[s["rollout_id"]])
    per_line = 6
    cells = [(Image.open(s["image"]), f"{s['reward']:.3f} {','.join(SHORT[f] for f in s['flags'])}") for s in suspects]
    lines = [(f"#{i + 1}-{min(i + per_line, len(cells))}", cells[i:i + per_line])
             for i in range(0, len(cells), per_line)]
    grid = image_grid(lines or [("none", [])], folder / "suspects.png")
    (folder / "suspects.json").write_text(json.dumps({**result, "grid": str(grid)}, indent=2))
    return {"grid": str(grid), "list": str(folder / "suspects.json")}


def load_suspects(run_dir: str | Path) -> list[dict]:
    """The suspects list `salon audit --suspects` last wrote (empty if it never ran)."""
    path = Path(run_dir) / "audit" / "suspects.json"
    return json.loads(path.read_text())["suspects"] if path.is_file() else []


def review_summary(suspects: list[dict], marks: dict[str, dict[str, str]]) -> dict:
    """The share of marked suspects people called hacks (each labeler's latest mark counts once)."""
    verdicts = [v for s in suspects for v in marks.get(s["rollout_id"], {}).values()]
    hacks = sum(v == "hack" for v in verdicts)
    return {"suspects": len(suspects), "marked": sum(s["rollout_id"] in marks for s in suspects),
            "verdicts": len(verdicts), "hacks": hacks, "hack_share": hacks / len(verdicts) if verdicts else None}
