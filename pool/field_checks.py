"""Config fields that state their own constraints: bounds and choices on the field's type, checked
all at once, each problem named by its key. Every config dataclass of salon uses it:

    @dataclass
    class LoraSettings:
        r: Annotated[int, at_least(1)] = 16
        dropout: Annotated[float, Range(0, 1, hi_open=True)] = 0.0
        beta: Annotated[float, Range(0, says="the KL coefficient cannot be negative")] = 0.0
        browsers: Annotated[int, at_least(0), "0 = one per two cores"] = 0   # a note says what a value means
        gpu: Literal["auto", "on", "off"] = "auto"

        def __post_init__(self):
            p = field_problems(self, "lora.")    # ["lora.r=0: must be at least 1", ...]
            ...                                  # checks between fields, written out
            raise_problems("lora", p)            # ConfigError listing them all, or nothing

What a field gets from its annotation (`X | None` also takes None):
    Literal[...]   one of the words; YAML 1.1 reads a bare on/off as a boolean, so False is "off"
                   and True "on" (or, of two words one of which is "off", the other one)
    float          a number; a string that reads as one is one (PyYAML reads `2e-4` as a string)
    int            a whole number
    Range          its bounds, on a float or an int
A value of the wrong type is reported and set back to the field's default, so the checks between
fields that follow still compare numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Literal, Union

from salon.pool.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """The values a number field takes: lo and hi are included unless lo_open / hi_open; `says`,
    where given, is the problem's words instead of the bounds'."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    says: str = ""

    def holds(self, value) -> bool:
        above = self.lo is None or (value > self.lo if self.lo_open else value >= self.lo)
        below = self.hi is None or (value < self.hi if self.hi_open else value <= self.hi)
        return above and below

    def __str__(self) -> str:
        if self.says:
            return self.says
        if self.hi is None:
            if self.lo_open:
                return "must be positive" if self.lo == 0 else f"must be above {self.lo}"
            return "must be 0 or more" if self.lo == 0 else f"must be at least {self.lo}"
        if self.lo is None:
            return f"must be {'below' if self.hi_open else 'at most'} {self.hi}"
        if not (self.lo_open or self.hi_open):
            return f"must be between {self.lo} and {self.hi}"
        return f"must be in {'(' if self.lo_open else '['}{self.lo}, {self.hi}{')' if self.hi_open else ']'}"


def at_least(lo: float) -> Range:
    return Range(lo)


positive = Range(0, lo_open=True)
share = Range(0, 1)  # a share of something, 0 and 1 included


@dataclass(frozen=True)
class _Rule:
    kind: type | None  # float or int: checked to be that number; None: not checked
    choices: tuple = ()  # a Literal's words
    optional: bool = False  # None is allowed
    bounds: tuple[Range, ...] = ()
    note: str = ""  # what a value means, added to the problem


def _rule(hint) -> _Rule:
    bounds, notes = (), []
    if typing.get_origin(hint) is Annotated:
        hint, *extras = typing.get_args(hint)
        bounds = tuple(x for x in extras if isinstance(x, Range))
        notes = [x for x in extras if isinstance(x, str)]
    args = typing.get_args(hint)
    optional = typing.get_origin(hint) in (Union, types.UnionType) and type(None) in args
    if optional:
        rest = [a for a in args if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else None
    if typing.get_origin(hint) is Literal:
        return _Rule(None, typing.get_args(hint), optional, bounds, "; ".join(notes))
    kind = hint if hint in (int, float) else None
    return _Rule(kind, (), optional, bounds, "; ".join(notes))


@functools.cache
def _rules(cls) -> dict[str, _Rule]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: _rule(hints[f.name]) for f in dataclasses.fields(cls)}


def _word(value, choices: tuple):
    """YAML 1.1's bare on/off (a boolean) as the word it stands for, and an empty value (null: `gl:` in a
    file, `--set render.gl=` on a command line, where a shell has eaten the quotes) as the empty word,
    where the choices have it."""
    if value is None and "" in choices:
        return ""
    if not isinstance(value, bool) or "off" not in choices:
        return value
    if not value:
        return "off"
    others = [c for c in choices if c != "off"]
    return "on" if "on" in choices else others[0] if len(others) == 1 else value


def _number(value, kind: type):
    """value as a number of `kind`, or None where it is not one."""
    if isinstance(value, bool):
        return None
    if kind is float:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return None
        return value if isinstance(value, (int, float)) else None
    return value if isinstance(value, int) else None


def _shown(choices: tuple) -> str:
    return ", ".join(repr(c) if c == "" else str(c) for c in choices)


def field_problems(obj, prefix: str = "") -> list[str]:
    """Every field of dataclass `obj` against its annotation; values are normalised in place."""
    problems = []
    for name, rule in _rules(type(obj)).items():
        given = value = getattr(obj, name)
        if value is None and rule.optional:
            continue
        said = ""
        if rule.choices:
            value = _word(value, rule.choices)
            if value not in rule.choices:
                said = f"use one of {_shown(rule.choices)}"
        elif rule.kind is not None:
            value = _number(value, rule.kind)
            if value is None:  # the checks between fields that follow compare numbers
                said = "must be a number" if rule.kind is float else "must be a whole number"
                value = _default(obj, name)
            else:
                said = next((str(b) for b in rule.bounds if not b.holds(value)), "")
        if said:
            problems.append(f"{prefix}{name}={given!r}: {said}" + (f" ({rule.note})" if rule.note else ""))
        if value is not given:
            setattr(obj, name, value)
    return problems


def _default(obj, name: str):
    f = next(f for f in dataclasses.fields(obj) if f.name == name)
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def raise_problems(where: str, problems: list[str]) -> None:
    """One ConfigError listing every problem (`where` names the config), or nothing."""
    if problems:
        raise ConfigError(problems, where)
