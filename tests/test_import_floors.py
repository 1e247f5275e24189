"""salon's packages stand on each other in floors, and no module imports its importer.

Every `import salon...` counts, function-local ones and `importlib.import_module("salon...")`
too: a cycle hidden in a function is still a cycle. The floors, lowest first:

    pool                  the store, the errors every floor raises, the config field checks
    curate, models        generation and rendering; the models built or loaded by name
    judges                stands on models (HPSv3's network, tiny: judges)
    train                 the trainer, train/eval, train/env
    apps                  the CLI and the app

    python tests/test_import_floors.py        # prints the graph's size, its cycles and upward imports
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOORS = {"pool": 0, "curate": 1, "models": 1, "judges": 2, "train": 3, "apps": 4}


def modules() -> dict[str, Path]:
    found = {}
    for folder in FLOORS:
        for path in (ROOT / folder).rglob("*.py"):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            found[".".join(["salon", folder, *parts])] = path
    return found


def imported_names(path: Path, package: str):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + [base]).strip(".")
            yield base
            yield from (f"{base}.{a.name}" for a in node.names)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)):
            yield node.args[0].value


def import_graph() -> dict[str, set[str]]:
    mods = modules()

    def owner(name: str) -> str | None:  # salon.pool.store.Pool -> salon.pool.store
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = {owner(n) for n in imported_names(path, package) if str(n).startswith("salon.")}
        graph[name] = {t for t in targets if t and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    floor = {name: FLOORS[name.split(".")[1]] for name in graph}
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if floor[b] > floor[a])


def test_no_module_imports_its_importer():
    graph = import_graph()
    assert sum(map(len, graph.values())) > 300  # the walk found the imports
    assert cycles(graph) == []


def test_no_import_runs_up_a_floor():
    assert upward(import_graph()) == []


if __name__ == "__main__":
    g = import_graph()
    print(f"{len(g)} modules, {sum(map(len, g.values()))} imports")
    print("cycles:", [sorted(c) for c in cycles(g)] or "none")
    print("upward:", upward(g) or "none")
