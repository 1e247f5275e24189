"""The pool's records: candidates, guide photos, labels, pairwise choices, releases.

Plain dataclasses shared by the store, the importer, the exporter and the callers (generation
runs, the Gradio app, the trainer). Field names are the column names of the published dataset
(salon.pool.export), so a renamed field is a changed dataset.

Candidate id: ``sha256(code.encode("utf-8") + b"\\x00" + str(seed).encode("ascii")).hexdigest()``
-- the code exactly as stored (no newline or whitespace normalisation), a NUL byte, then the seed
in decimal. The same sketch with the same seed is therefore stored once, whoever imports it.
A reply that held no sketch has empty code; so that distinct failed replies are not merged into
one, its id also hashes the reply: ``... + b"\\x00" + reply.encode("utf-8")`` appended.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from salon.pool.errors import PoolError

TIERS = ("love", "okay", "nope")  # best first; ClassLabel ids 0, 1, 2 in the published dataset
FREE_LICENSES = ("CC0", "CC-BY", "CC-BY-SA")


def candidate_id(code: str, seed: int, reply: str | None = None) -> str:
    """The id of a candidate: see the module docstring for the exact bytes hashed."""
    data = code.encode("utf-8") + b"\x00" + str(int(seed)).encode("ascii")
    if not code and reply:
        data += b"\x00" + reply.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise PoolError(f"unknown tier {tier!r}: use one of {', '.join(TIERS)}")
    return tier


def normalise_license(license: str | None) -> str | None:
    """'cc-by-sa-4.0', 'CC BY-SA', 'cc_by_sa' -> 'CC-BY-SA'; 'cc0', 'CC0 1.0' -> 'CC0'; None stays None."""
    if license is None or not str(license).strip():
        return None
    text = re.sub(r"[\s_]+", "-", str(license).strip().upper())
    return re.sub(r"-\d+(\.\d+)*$", "", text)  # a version follows a separator; the 0 of CC0 does not


def is_free_license(license: str | None) -> bool:
    """Whether a guide photo may travel into a published dataset (CC0, CC-BY, CC-BY-SA)."""
    return normalise_license(license) in FREE_LICENSES


@dataclass
class GuidePhoto:
    """An iNaturalist photo a model looked at; its attribution travels with every candidate.

    ``file`` is the downloaded photo, relative to the pool folder, as the subject's guide index
    (salon.curate.guides) records it; the store keeps only the published fields, so a candidate
    read back from the pool has ``file`` None and the index finds the photo by ``id``.
    """

    id: str
    observation_url: str | None = None
    photo_url: str | None = None
    license: str | None = None
    attribution: str | None = None
    file: str | None = None

    def __post_init__(self):
        self.id = str(self.id)
        self.license = normalise_license(self.license)

    @property
    def free(self) -> bool:
        return is_free_license(self.license)


@dataclass
class Candidate:
    """One generated sketch and its render. ``id`` is derived from (code, seed), never chosen.

    ``ok`` is None while the candidate has no render (not rendered yet, or the renderer was
    unavailable: an infrastructure failure, re-rendered on a later import); True when it passed
    the gate, False when it was rejected (``violations`` says why). ``png`` is input only: the
    store writes it under images/ and records ``image_sha256``; read back, ``png`` is None and
    ``Pool.image_path(id)`` gives the file.
    """

    code: str
    seed: int = 0
    subject: str | None = None
    prompt: str | None = None
    model: str | None = None
    prompt_version: str | None = None
    sampling: dict = field(default_factory=dict)
    round: int = 0
    parent_id: str | None = None
    guide: GuidePhoto | None = None
    reply: str | None = None  # the raw model reply the code was extracted from, if any
    source: str | None = None  # where it came from: a file, a generation run name
    ok: bool | None = None
    violations: list[str] = field(default_factory=list)
    js_errors: list[str] = field(default_factory=list)
    render_ms: int | None = None
    paint_fraction: float | None = None
    png: bytes | None = field(default=None, repr=False)
    # Set by the store.
    id: str = ""
    image_sha256: str | None = None
    phash: str | None = None  # 16 hex digits, 64-bit DCT hash of the image
    dup_of: str | None = None  # earlier gate-passing candidate within the near-duplicate distance
    created_at: str | None = None

    def __post_init__(self):
        if not isinstance(self.code, str):
            raise PoolError(f"candidate code must be a string, got {type(self.code).__name__}")
        try:
            self.seed = int(self.seed)
        except (TypeError, ValueError):
            raise PoolError(f"candidate seed must be an integer, got {self.seed!r}") from None
        self.round = int(self.round or 0)
        expected = candidate_id(self.code, self.seed, self.reply)
        if self.id and self.id != expected:
            raise PoolError(f"candidate id {self.id[:12]}… does not match sha256(code, seed); leave id empty")
        self.id = expected


@dataclass(frozen=True)
class Label:
    """One appended label row; ``tier`` None is an undo (clears that labeler's tier)."""

    seq: int
    candidate_id: str
    tier: str | None
    labeler: str
    at: str


@dataclass(frozen=True)
class PairChoice:
    """A person's choice between two candidates in the app's compare view.

    ``winner`` is relative to (left_id, right_id): "left", "right" or "tie". ``shown_left`` is
    the id that was on the left of the screen, so position bias can be measured.
    """

    seq: int
    left_id: str
    right_id: str
    winner: str
    labeler: str
    at: str
    shown_left: str


@dataclass(frozen=True)
class Release:
    """A pushed dataset repo + revision: a reward function."""

    seq: int
    repo_id: str
    revision: str
    pushed_at: str
    endpoint: str | None
    candidates: int
    labelled: int
    message: str | None
