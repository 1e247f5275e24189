"""One rollout, typed: what was asked, what the policy wrote, how it rendered and scored.

    samples = Planner(seed=0).plan(prompts, texts, step, rows, subjects)   # Sample per completion
    rollout = Rollout(run=..., step=..., ..., rewards={"gate": 1.0, "judge": 0.62})
    rollout.columns()          # the archive row: every field, each reward component as reward_<name>
    column_kinds()             # {column: "string" | "int64" | "float64" | "bool" | "image" | "list"}

`Rollout` is the archive's schema: `salon.train.record.archive` derives its columns from these fields
(their types give the column types), so a field added here is a column there. `Sample` is the
plan for one completion before anything is rendered: its group (the completions of one dataset
row), its position in the group, the code to render and the render seed.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field, fields

from PIL import Image

from salon.curate.extract import extract_code
from salon.judges.winrate import group_seed


def completion_text(completion) -> str:
    """TRL gives a string (standard) or a list of messages (conversational)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if isinstance(m, dict))


def prompt_key(prompt) -> str:
    return prompt if isinstance(prompt, str) else "\x1e".join(str(m.get("content")) for m in prompt)


@dataclass
class Sample:
    """The plan for one completion: where it sits, and which code renders with which seed."""

    index: int  # in TRL's batch
    group: str  # "<step>-<hash of row and prompt>": the completions of one dataset row
    position: int  # within the group
    row: int | None
    subject: str | None
    prompt: str
    completion: str  # the policy's text, whatever `code` is
    code: str | None
    seed: int
    substituted_example: str | None = None  # stand-in runs only (salon.train.smoke)


@dataclass
class Planner:
    """Code and seed per completion. The render seed depends on the run seed, step and prompt only,
    so the completions of one prompt in one step render with the same seed."""

    seed: int = 0

    def plan(self, prompts, texts, step: int, rows=None, subjects=None) -> list[Sample]:
        samples, seen = [], {}
        for i, (prompt, text) in enumerate(zip(prompts, texts)):
            row = None if rows is None else rows[i]
            key = prompt_key(prompt)
            position = seen[(row, key)] = seen.get((row, key), -1) + 1
            samples.append(Sample(
                index=i, group=f"{step}-{group_seed(row, key) % 16**8:08x}", position=position, row=row,
                subject=None if subjects is None else subjects[i], prompt=key, completion=text,
                code=extract_code(text), seed=group_seed(self.seed, "render", step, key) & 0xFFFFFFFF))
        return samples


@dataclass(kw_only=True)
class Rollout:
    """One archived rollout (see salon.train.record.archive for what each column means)."""

    run: str
    step: int
    checkpoint: str
    group: str
    row: int | None = None
    position: int
    process: int = 0
    subject: str | None = None
    prompt: str
    completion: str
    completion_chars: int
    code: str | None = None
    seed: int
    image: bytes | None = None  # the rendered PNG
    gate_passed: bool
    violations: list[str] = field(default_factory=list)
    js_errors: list[str] = field(default_factory=list)
    render_ms: int | None = None
    render_unavailable: bool = False
    render_gl: str | None = None  # the GL path that drew it (swiftshader or a GPU flag set): rewards may differ by path
    paint_fraction: float | None = None
    coverage: float | None = None
    reward: float | None  # the total; None = missing (an infrastructure failure), never 0
    missing: list[str] = field(default_factory=list)  # what failed: render, image, judge, an image judge
    judge_reason: str | None = None
    references: list[str] = field(default_factory=list)
    reference_tiers: list[str] = field(default_factory=list)
    draw_seed: int | None = None
    pool_release: str | None = None
    judge: str | None = None
    judge_version: str | None = None
    substituted_example: str | None = None
    created_at: str | None = None
    # the absolute scorer's own numbers beside reward_absolute (its 0..1 score): HPSv3's mu and log
    # sigma, or why it gave none
    absolute_mu: float | None = None
    absolute_log_sigma: float | None = None
    absolute_reason: str | None = None
    rewards: dict[str, float | None] = field(default_factory=dict)  # one reward_<name> column each
    painting: Image.Image | None = field(default=None, repr=False, compare=False)  # decoded; not archived

    def columns(self) -> dict:
        row = {name: getattr(self, name) for name in column_kinds()}
        row.update({f"reward_{name}": value for name, value in self.rewards.items()})
        return row


_KINDS = {str: "string", int: "int64", float: "float64", bool: "bool", bytes: "image"}
NOT_COLUMNS = ("rewards", "painting")


def column_kinds() -> dict[str, str]:
    """The archive's fixed columns and their kinds, from Rollout's field types."""
    hints = typing.get_type_hints(Rollout)
    kinds = {}
    for f in fields(Rollout):
        if f.name in NOT_COLUMNS:
            continue
        t = hints[f.name]
        if isinstance(t, types.UnionType) or typing.get_origin(t) is typing.Union:
            t = next(a for a in typing.get_args(t) if a is not type(None))
        kinds[f.name] = "list" if typing.get_origin(t) is list else _KINDS[t]
    return kinds
