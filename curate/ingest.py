"""Import sketches into the pool: .js files, model replies, folders and JSONL rows.

It lives in curate because importing means extracting sketches from replies and rendering the
ones without an image; the pool only stores what this hands it (`Pool.add_candidates`).

    salon pool import PATH... [--subject S] [--model M] [--seed N] [--json]

What each PATH may be:
  - ``*.js``: the sketch itself. A PNG beside it with the same stem (``a.js`` + ``a.png``) is
    taken as its render (gate verdict: passed) instead of rendering again.
  - ``*.jsonl``: one candidate per line, a JSON object with ``code`` (or ``reply``, a raw model
    reply the code is extracted from) and optionally ``seed``, ``subject``, ``prompt``,
    ``model``, ``prompt_version``, ``sampling`` (object), ``round``, ``parent_id``,
    ``guide_photo`` ({id, observation_url, photo_url, license, attribution}), and a render:
    ``image`` (PNG path, relative to the JSONL file), ``ok``, ``violations``, ``js_errors``,
    ``render_ms``, ``paint_fraction``. Unknown keys are ignored; a bad line is reported and the
    other lines are still imported.
  - a folder: every ``.js``, ``.jsonl``, ``.txt`` and ``.md`` under it, in name order.
  - anything else: a raw model reply; the sketch is pulled out with `extract_code`. A reply
    with no sketch is stored as rejected (``no_sketch``) with empty code and the reply kept.
``--subject``/``--model``/``--seed`` fill in what an input does not say itself. A sketch that
names no subject and is given none takes it from its leading comment: ``// peach hibiscus — five
washes`` is "peach hibiscus", the text before the dash (an em or en dash, or a hyphen between
spaces: names hold hyphens), as the bundled examples in curate/examples/ begin.

Candidates without a render are rendered in the sandbox (``render_missing``: the one function
here that needs Chromium); one whose render is unavailable (browser would not start) is stored
without an image and rendered again when imported again. Work is stored in chunks, so an
interrupted import keeps what it finished.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from salon.curate.extract import extract_code
from salon.curate.sandbox.render import render_sketches
from salon.pool.errors import PoolError, SalonError
from salon.pool.models import Candidate, GuidePhoto

_FOLDER_SUFFIXES = (".js", ".jsonl", ".txt", ".md")
_CHUNK = 32  # candidates rendered, then stored, at a time
# the first line of a sketch, `// SUBJECT — note`: a subject is a few words, so a long comment is prose
_LEADING_SUBJECT = re.compile(r"\A\s*//\s*(?P<subject>[^\n]{1,60}?)(?:\s*[—–]\s*|\s+-\s+)\S")


@dataclass
class Outcome:
    """One input's result; ``--json`` prints these fields (``error`` and ``warning`` when set)."""

    file: str
    id: str | None = None
    ok: bool | None = None
    violations: list[str] = field(default_factory=list)
    new: bool = False
    error: str | None = None
    warning: str | None = None

    def to_dict(self) -> dict:
        d = {"file": self.file, "id": self.id, "ok": self.ok, "violations": self.violations, "new": self.new}
        return d | {k: v for k, v in (("error", self.error), ("warning", self.warning)) if v}


@dataclass
class Defaults:
    subject: str | None = None
    model: str | None = None
    seed: int = 0


Renderer = Callable[[list[Candidate], bool], str | None]


def render_missing(candidates: list[Candidate], progress: bool = False) -> str | None:
    """Render candidates in place with the sandbox; returns a warning when it is unavailable.

    Unavailable renders leave ``ok`` None (stored without an image, rendered on a later import).
    """
    try:
        results = render_sketches([c.code or None for c in candidates], [c.seed for c in candidates],
                                  progress=progress)
    except SalonError as e:  # no Chromium, browser would not start
        return f"render sandbox unavailable ({e}); stored without images, import again to render"
    for c, r in zip(candidates, results):
        if r.unavailable:
            continue
        c.ok, c.violations, c.js_errors = r.ok, list(r.violations), list(r.js_errors)
        c.render_ms, c.paint_fraction, c.png = r.render_ms, r.paint_fraction, r.png
    if any(r.unavailable for r in results):
        return "some renders were unavailable; those candidates are stored without images"
    return None


def import_paths(pool, paths: list[str | Path], defaults: Defaults | None = None,
                 render: Renderer = render_missing, progress: bool = False) -> list[Outcome]:
    """Import every input; returns one Outcome per input (a file, or a JSONL line)."""
    defaults = defaults or Defaults()
    outcomes: list[Outcome] = []
    pending: list[tuple[Outcome, Candidate]] = []
    for where, item in _inputs(paths, defaults):
        if isinstance(item, PoolError):
            outcomes.append(Outcome(where, error=str(item)))
            continue
        if item.subject is None:
            item.subject = subject_from_comment(item.code)
        outcome = Outcome(where, id=item.id)
        outcomes.append(outcome)
        pending.append((outcome, item))
        if len(pending) == _CHUNK:
            _store(pool, pending, render, progress)
            pending = []
    if pending:
        _store(pool, pending, render, progress)
    return outcomes


def subject_from_comment(code: str) -> str | None:
    """The subject a sketch names in its leading comment (`// peach hibiscus — ...`), or None."""
    match = _LEADING_SUBJECT.match(code or "")
    return match["subject"].strip() if match else None


def _store(pool, pending: list[tuple[Outcome, Candidate]], render: Renderer, progress: bool) -> None:
    rendered = pool.has_render(c.id for _, c in pending)
    todo = [c for _, c in pending if c.id not in rendered and c.ok is None]
    warning = render(todo, progress) if todo else None
    try:
        news = pool.add_candidates([c for _, c in pending])
    except PoolError:  # a bad image somewhere: store one by one so only that input fails
        news = []
        for outcome, c in pending:
            try:
                news.append(pool.add_candidate(c))
            except PoolError as e:
                outcome.error = str(e)
                news.append(None)
    todo_ids = {c.id for c in todo}
    for (outcome, c), new in zip(pending, news):
        if new is None:
            continue
        stored = c if new else pool.get(c.id)  # already there: report what the pool holds
        outcome.new, outcome.ok, outcome.violations = new, stored.ok, list(stored.violations)
        if c.id in todo_ids and stored.ok is None:
            outcome.warning = warning


def _inputs(paths: list[str | Path], defaults: Defaults) -> Iterator[tuple[str, Candidate | PoolError]]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _FOLDER_SUFFIXES)
            if not files:
                yield str(path), PoolError(f"{path} holds no .js, .jsonl, .txt or .md files")
            for f in files:
                yield from _file(f, defaults)
        elif path.is_file():
            yield from _file(path, defaults)
        else:
            yield str(path), PoolError(f"{path} does not exist: check the path")


def _file(path: Path, defaults: Defaults) -> Iterator[tuple[str, Candidate | PoolError]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        yield str(path), PoolError(f"cannot read {path} ({e}): it must be a UTF-8 text file")
        return
    if path.suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                yield f"{path}:{n}", _row(line, path, n, defaults)
        return
    base = dict(seed=defaults.seed, subject=defaults.subject, model=defaults.model, source=str(path))
    if path.suffix == ".js":
        png = path.with_suffix(".png")
        render = dict(png=png.read_bytes(), ok=True) if png.is_file() else {}
        yield str(path), Candidate(code=text, **base, **render)
    else:
        yield str(path), _from_reply(text, base)


def _from_reply(reply: str, fields: dict) -> Candidate:
    code = extract_code(reply)
    if code is None:
        return Candidate(**(fields | dict(code="", reply=reply, ok=False, violations=["no_sketch"])))
    return Candidate(**(fields | dict(code=code, reply=reply)))


_STR = ("subject", "prompt", "model", "prompt_version", "parent_id")


def _row(line: str, path: Path, n: int, defaults: Defaults) -> Candidate | PoolError:
    where = f"{path} line {n}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        return PoolError(f"{where} is not JSON ({e.msg}): fix or remove that line")
    if not isinstance(row, dict):
        return PoolError(f"{where} must be a JSON object, got {type(row).__name__}")
    problems = []
    code, reply = row.get("code"), row.get("reply")
    if code is None and reply is None:
        problems.append("needs 'code' (the sketch) or 'reply' (a model reply)")
    for key in ("code", "reply", *_STR):
        if row.get(key) is not None and not isinstance(row[key], str):
            problems.append(f"'{key}' must be a string")
    for key in ("seed", "round", "render_ms"):
        if row.get(key) is not None and (not isinstance(row[key], int) or isinstance(row[key], bool)):
            problems.append(f"'{key}' must be an integer")
    if row.get("sampling") is not None and not isinstance(row["sampling"], dict):
        problems.append("'sampling' must be an object")
    for key in ("violations", "js_errors"):
        if row.get(key) is not None and not (isinstance(row[key], list) and all(isinstance(v, str) for v in row[key])):
            problems.append(f"'{key}' must be a list of strings")
    if row.get("ok") is not None and not isinstance(row["ok"], bool):
        problems.append("'ok' must be true or false")
    if row.get("paint_fraction") is not None and not isinstance(row["paint_fraction"], (int, float)):
        problems.append("'paint_fraction' must be a number")
    guide = row.get("guide_photo")
    if guide is not None and not (isinstance(guide, dict) and guide.get("id") is not None):
        problems.append("'guide_photo' must be an object with an 'id'")
    if problems:
        return PoolError(f"{where}: " + "; ".join(problems))
    fields = dict(seed=row.get("seed", defaults.seed), subject=row.get("subject", defaults.subject),
                  model=row.get("model", defaults.model), prompt=row.get("prompt"),
                  prompt_version=row.get("prompt_version"), sampling=row.get("sampling") or {},
                  round=row.get("round") or 0, parent_id=row.get("parent_id"), source=where,
                  guide=GuidePhoto(**{k: guide.get(k) for k in ("id", "observation_url", "photo_url",
                                                                 "license", "attribution")}) if guide else None)
    if row.get("image") is not None:
        image = path.parent / str(row["image"])
        try:
            fields |= dict(png=image.read_bytes(), ok=row.get("ok", not row.get("violations")),
                           violations=row.get("violations") or [], js_errors=row.get("js_errors") or [],
                           render_ms=row.get("render_ms"), paint_fraction=row.get("paint_fraction"))
        except OSError as e:
            return PoolError(f"{where}: cannot read image {image} ({e.strerror}): fix the 'image' path")
    elif row.get("ok") is False:  # rejected before rendering (e.g. by the static gate)
        fields |= dict(ok=False, violations=row.get("violations") or [], js_errors=row.get("js_errors") or [])
    if code is None:
        candidate = _from_reply(reply, fields)
    else:
        candidate = Candidate(code=code, reply=reply, **fields)
    return candidate
