"""The names a sketch's code uses, read from its syntax tree (tree-sitter's JavaScript grammar).

    python -m salon.curate.sandbox.names sketch.js      # its free names, each with the line it is first used

A sketch runs in a compartment whose globals are world.WORLD_NAMES and nothing else, so every
name it uses without declaring it must be one of them: any other is refused here, before a browser
is touched, with its own code (world.code_of), and the page reports the same code should one slip
through (a name made at run time). Two habits of p5's global mode are kept working:
  - an assignment to a name declared nowhere (`x = 5` at the top of a sketch) declares it: the
    compartment's code is strict, so prepared() puts a `var` for it in front of line 1;
  - `typeof name` is no use of a name (it cannot throw), whatever the name.
Names declared anywhere in the sketch count as declared everywhere: a name a function uses that only
another function declares is left to the compartment, which refuses it at run time.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache

from salon.curate.sandbox import world


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter_javascript
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_javascript.language()))


# Where a pattern binds names, and where a pattern's parts are.
_DECLARING_FIELDS = {"variable_declarator": "name", "function_declaration": "name", "function_expression": "name",
                     "generator_function_declaration": "name", "generator_function": "name", "class_declaration": "name",
                     "class": "name", "catch_clause": "parameter", "arrow_function": "parameter"}
_ASSIGNING = {"assignment_expression": "left", "augmented_assignment_expression": "left", "update_expression": "argument"}


@dataclass
class SketchNames:
    free: dict[str, int] = field(default_factory=dict)  # used, declared nowhere -> first line (1-based)
    assigned: set[str] = field(default_factory=set)  # assigned, declared nowhere (sloppy-mode globals)
    parsed: bool = True  # False: the tree has syntax errors, and nothing here is reliable


def _bound(pattern, out: list) -> None:
    """The identifier nodes a binding pattern declares."""
    kind = pattern.type
    if kind in ("identifier", "shorthand_property_identifier_pattern"):
        out.append(pattern)
    elif kind in ("object_pattern", "array_pattern", "formal_parameters", "rest_pattern"):
        for child in pattern.named_children:
            _bound(child, out)
    elif kind == "pair_pattern":
        _bound(pattern.child_by_field_name("value"), out)
    elif kind in ("assignment_pattern", "object_assignment_pattern"):
        _bound(pattern.child_by_field_name("left"), out)


@lru_cache(maxsize=64)
def parse(code: str):
    """The sketch's syntax tree, kept for the last sketches parsed: the names and the call shapes
    (call_shapes.py) each read the same sketch's."""
    return _parser().parse(code.encode("utf-8", "replace"))


def declared_by(node) -> list:
    """The identifier nodes `node` declares: a declarator's, a function's or a class's name, a
    function's parameters, a catch clause's, a `for (const x of ...)`'s."""
    kind, found = node.type, []
    if kind in _DECLARING_FIELDS and node.child_by_field_name(_DECLARING_FIELDS[kind]) is not None:
        _bound(node.child_by_field_name(_DECLARING_FIELDS[kind]), found)
    elif kind == "formal_parameters":
        _bound(node, found)
    elif kind == "for_in_statement" and node.child_by_field_name("kind") is not None:
        _bound(node.child_by_field_name("left"), found)
    return found


@lru_cache(maxsize=64)
def read(code: str) -> SketchNames:
    """The sketch's free and sloppy-assigned names. Kept for the last sketches read: the static gate,
    a rejection's details and the source the page evaluates each ask for the same sketch's."""
    tree = parse(code)
    if tree.root_node.has_error:
        return SketchNames(parsed=False)
    declared, binding, uses, assigned = set(), set(), [], set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        kind = node.type
        for ident in declared_by(node):
            declared.add(ident.text.decode())
            binding.add(ident.id)
        if kind in _ASSIGNING or (kind == "for_in_statement" and node.child_by_field_name("kind") is None):
            target = node.child_by_field_name(_ASSIGNING.get(kind, "left"))
            if target is not None and target.type == "identifier":
                assigned.add(target.text.decode())
        if kind in ("identifier", "shorthand_property_identifier"):
            parent = node.parent
            if not (parent is not None and parent.type == "unary_expression" and parent.children[0].type == "typeof"):
                uses.append(node)
    names = SketchNames()
    names.assigned = {n for n in assigned if n not in declared and n not in world.WORLD_NAMES}
    for node in sorted(uses, key=lambda n: n.start_byte):
        name = node.text.decode()
        if node.id in binding or name in declared or name == "arguments" or name in names.assigned:
            continue
        names.free.setdefault(name, node.start_point[0] + 1)
    return names


def outside_world(code: str) -> list[tuple[str, str]]:
    """(violation code, detail) for every name the sketch uses that its world does not hold."""
    names = read(code)
    return [(world.code_of(name), f"{world.code_of(name)}: line {line}: `{name}` is not in the sketch's world")
            for name, line in names.free.items() if name not in world.WORLD_NAMES]


def prepared(code: str) -> str:
    """The source the page evaluates: a `var` for each sloppy-mode global in front of line 1 (the
    line numbers stay the sketch's own)."""
    names = read(code)
    if not names.assigned:
        return code
    return f"var {', '.join(sorted(names.assigned))}; {code}"


if __name__ == "__main__":
    found = read(open(sys.argv[1], encoding="utf-8", errors="replace").read())
    if not found.parsed:
        print("the sketch does not parse")
    for name, line in found.free.items():
        print(f"{line:5}  {name}  {'' if name in world.WORLD_NAMES else world.code_of(name)}")
    if found.assigned:
        print("declared by assignment:", " ".join(sorted(found.assigned)))
