"""`pool` is the ground: no module of it imports the layers that stand on it, not even lazily."""

from __future__ import annotations

import ast
from pathlib import Path

import salon.pool

ABOVE = ("salon.curate", "salon.judges", "salon.train", "salon.apps")


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
    source = "def f():\n    from salon.curate.render import render_sketches\n"
    assert "salon.curate.render" in imported_modules(source)


def test_pool_imports_nothing_above_it():
    files = sorted(Path(next(iter(salon.pool.__path__))).glob("*.py"))
    assert len(files) > 5
    wrong = {f.name: sorted(m for m in imported_modules(f.read_text(encoding="utf-8")) if m.startswith(ABOVE))
             for f in files}
    assert {name: mods for name, mods in wrong.items() if mods} == {}
