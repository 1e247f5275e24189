"""`pool` is the ground: no module of it imports the layers that stand on it, not even lazily,
and its modules read the store through its public interface, not its private names."""

from __future__ import annotations

import ast
from pathlib import Path

import salon.pool

ABOVE = ("salon.curate", "salon.judges", "salon.train", "salon.apps")


def pool_modules() -> list[Path]:
    return sorted(Path(next(iter(salon.pool.__path__))).glob("*.py"))


def imported_modules(source: str) -> set[str]:
    """Every module an `import` or `from ... import` names, at any depth (function bodies too)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_the_scan_sees_lazy_imports():
    source = "def f():\n    from salon.curate.sandbox.render import render_sketches\n"
    assert "salon.curate.sandbox.render" in imported_modules(source)


def test_pool_imports_nothing_above_it():
    files = pool_modules()
    assert len(files) > 5
    wrong = {f.name: sorted(m for m in imported_modules(f.read_text(encoding="utf-8")) if m.startswith(ABOVE))
             for f in files}
    assert {name: mods for name, mods in wrong.items() if mods} == {}


def private_uses(source: str) -> set[str]:
    """Private names taken from other objects or modules: `x._read`, `from m import _SELECT`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            found |= {alias.name for alias in node.names if alias.name.startswith("_")}
    return found


def test_the_private_scan_sees_both_forms():
    source = "def f(pool):\n    from salon.pool.store import _SELECT\n    with pool._read(): self._x\n"
    assert private_uses(source) == {"_SELECT", "_read"}


def test_pool_modules_use_no_private_names_of_each_other():
    wrong = {f.name: sorted(private_uses(f.read_text(encoding="utf-8"))) for f in pool_modules()}
    assert {name: names for name, names in wrong.items() if names} == {}
