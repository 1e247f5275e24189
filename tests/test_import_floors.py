"""salon's packages stand on each other in floors, and no module imports its importer.

Every `import salon...` counts, function-local ones and `importlib.import_module("salon...")`
too: a cycle hidden in a function is still a cycle. The floors, lowest first:

    pool                  the store, the errors every floor raises, the config field checks
    curate, models        generation and rendering; the models built or loaded by name
    judges                stands on models (HPSv3's network, tiny: judges)
    train                 the trainer: at most TRAIN_TOP modules at its top, the rest in rooms
                          (train/engine, update, record, start, eval, env)
    apps                  the CLI and the app

Inside train, each room counts as one module: no room imports a top-level module that imports it
back, nor a room that does, however far round (the graph with each room drawn together has no cycle).

    python tests/test_import_floors.py        # prints the graph's size, its cycles and upward imports
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOORS = {"pool": 0, "curate": 1, "models": 1, "judges": 2, "train": 3, "apps": 4}
TRAIN_TOP = 15  # modules at train/'s top level (its __init__ left out): what grows goes into a room


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


ROOMS = sorted(p.parent.name for p in (ROOT / "train").glob("*/__init__.py"))  # engine, env, eval, ...


def room_of(name: str) -> str:
    """salon.train.engine.decode -> salon.train.engine (its room: a package in train/); others stay themselves."""
    parts = name.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["salon", "train"] and parts[2:3] and parts[2] in ROOMS else name


def train_rooms(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """salon.train's graph with each room drawn as one node: its modules' imports are the room's."""
    drawn: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name.startswith("salon.train."):
            drawn.setdefault(room_of(name), set()).update(room_of(t) for t in targets if t.startswith("salon.train."))
    return {room: targets - {room} for room, targets in drawn.items()}


def back_into(graph: dict[str, set[str]], room: str) -> list[str]:
    """For each import of `room`'s modules that leads back into the room, the way round: 'a -> b -> a.c'."""
    found = []
    for name in sorted(n for n in graph if room_of(n) == room):
        for first in sorted(t for t in graph[name] if room_of(t) != room and t.startswith("salon.train.")):
            way, seen = {first: [name, first]}, {first}
            queue = [first]
            while queue:
                node = queue.pop(0)
                if room_of(node) == room:
                    found.append(" -> ".join(way[node]))
                    break
                for nxt in sorted(graph.get(node, ())):
                    if nxt not in seen:
                        seen.add(nxt)
                        way[nxt] = way[node] + [nxt]
                        queue.append(nxt)
    return found


def test_train_keeps_a_small_top_level():
    top = sorted(p.stem for p in (ROOT / "train").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= TRAIN_TOP, f"train/ holds {len(top)} modules at its top (at most {TRAIN_TOP}): {top}"
    assert {"engine", "update", "record"} <= set(ROOMS)
    for room in ROOMS:  # each room says what it holds
        assert ast.get_docstring(ast.parse((ROOT / "train" / room / "__init__.py").read_text())), room


def test_no_train_modules_import_in_a_circle():
    graph = import_graph()
    train = {name: {t for t in targets if t.startswith("salon.train")} for name, targets in graph.items()
             if name.startswith("salon.train")}
    assert cycles(train) == []


def test_no_room_imports_what_imports_it_back():
    graph = import_graph()
    drawn = train_rooms(graph)
    assert {"salon.train.engine", "salon.train.update", "salon.train.record"} <= set(drawn)
    assert [way for room in ROOMS for way in back_into(graph, f"salon.train.{room}")] == []
    assert cycles(drawn) == []  # nor through another room


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
    print("train's rooms:", [sorted(c) for c in cycles(train_rooms(g))] or "no cycle")
