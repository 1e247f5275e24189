"""Call shapes: world calls a sketch makes in a shape p5.brush or p5 cannot run, read from its syntax
tree before the browser, each with its line and what is wrong.

    python -m salon.curate.sandbox.call_shapes sketch.js      # each mistake with its line

Two codes (gate.VIOLATIONS), both against world.py's tables and nothing else:
  call_shape   a call with fewer arguments than it needs (world.CALL_NEEDS), or with one the source
               settles as `undefined` (`undefined` itself, a variable declared without a value and never
               given one, a field an object literal lacks); a number it cannot take (a radius of 0 or
               less); a brush, field or stroke type p5.brush does not have; points that are not arrays
               [x, y]; an object without a field its type needs (a custom brush's tip)
  path_order   brush.vertex or brush.endShape with no shape begun, an endShape after fewer than two
               vertices, brush.move or brush.endStroke with no stroke begun (world.PATHS)
Only what the source settles is judged: an argument computed at run time, a call through a variable,
a spread, a name declared twice or assigned anywhere, a statement that may call the sketch's own code
between two path calls is left to the page, which reports what then throws as runtime_error. A
variable's literal is followed only while it cannot have changed: a `const`, or a name never assigned,
declared once, read after its declaration inside its scope, and (for an object or array) handed only to
world calls, whose arguments the facade copies.
"""

from __future__ import annotations

import sys

from salon.curate.sandbox import names, world

UNDEFINED = "undefined"  # what `_Sketch.value` answers for an expression the source settles as undefined
_LITERALS = frozenset({"number", "string", "template_string", "array", "object", "true", "false", "null"})
# Every object has these from Object.prototype: reading one from a literal is never undefined.
_OBJECT_FIELDS = frozenset("constructor hasOwnProperty isPrototypeOf propertyIsEnumerable toLocaleString "
                           "toString valueOf __proto__".split())
# Namespaces of JavaScript's own whose functions call no sketch code unless handed a function.
_BUILTIN_NAMESPACES = frozenset({"Math", "JSON", "Number", "String", "Object", "Array", "console"})
_FUNCTIONS = frozenset({"function_declaration", "function_expression", "arrow_function", "method_definition",
                        "generator_function_declaration", "generator_function"})
_STOPS = frozenset({"return_statement", "throw_statement", "break_statement", "continue_statement"})
_SKIPPED = frozenset({"function_declaration", "generator_function_declaration", "class_declaration", "comment",
                      "empty_statement"})
_ROLES = {getattr(p, role): (p, role) for p in world.PATHS for role in ("begin", "step", "end")}
_ROLES.update({name: (p, "also_ends") for p in world.PATHS for name in p.also_ends})
CLOSED = "closed"  # a path state: nothing begun (else the steps since its begin, or None: not known)


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def _line(node) -> int:
    return node.start_point[0] + 1


def _snippet(node, limit: int = 48) -> str:
    text = " ".join(_text(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _arguments(node) -> list:
    args = node.child_by_field_name("arguments")
    return [] if args is None else [a for a in args.named_children if a.type != "comment"]


class _Sketch:
    """One parsed sketch: where each name is declared, assigned and used, and what the source settles."""

    def __init__(self, root, free: set[str]):
        self.root, self.free = root, free
        self.bindings: dict[str, list] = {}
        self.assigned: set[str] = set()
        self.uses: dict[str, list] = {}
        self.calls: list = []
        binders, idents = set(), []
        for node in _descendants(root):
            for ident in names.declared_by(node):
                self.bindings.setdefault(_text(ident), []).append(ident)
                binders.add(ident.id)
            target = None
            if node.type in ("assignment_expression", "augmented_assignment_expression"):
                target = node.child_by_field_name("left")
            elif node.type == "update_expression":
                target = node.child_by_field_name("argument")
            elif node.type == "for_in_statement" and node.child_by_field_name("kind") is None:
                target = node.child_by_field_name("left")
            if target is not None:  # a pattern's names, or a member's object: assigned, never followed
                self.assigned.update(_text(n) for n in _descendants(target) if n.type == "identifier")
            if node.type in ("call_expression", "new_expression"):
                self.calls.append(node)
            elif node.type in ("identifier", "shorthand_property_identifier"):
                idents.append(node)
        for node in idents:
            if node.id not in binders:
                self.uses.setdefault(_text(node), []).append(node)

    # ---- what the source settles ---------------------------------------------------------------
    def callee(self, call) -> str | None:
        """The world call's key (`brush.circle`, `brush.Polygon`, `color`), or None: not the world's."""
        fn = call.child_by_field_name("function" if call.type == "call_expression" else "constructor")
        if fn is None:
            return None
        if fn.type == "identifier":
            return _text(fn) if _text(fn) in self.free and _text(fn) in world.WORLD_NAMES else None
        if fn.type == "member_expression":
            obj, prop = fn.child_by_field_name("object"), fn.child_by_field_name("property")
            if obj.type == "identifier" and _text(obj) == "brush" and "brush" in self.free \
                    and prop.type == "property_identifier":
                return f"brush.{_text(prop)}"
        return None

    def _declarator(self, ident):
        """The declarator whose value `ident` holds wherever it is read: a name declared once, never
        assigned, read after its declaration and inside its scope; None where that is not so."""
        name = _text(ident)
        binds = self.bindings.get(name, [])
        if name in self.assigned or len(binds) != 1 or binds[0].parent.type != "variable_declarator":
            return None
        declarator = binds[0].parent
        if declarator.child_by_field_name("name").id != binds[0].id or ident.start_byte < declarator.end_byte:
            return None
        scope = _scope(declarator)
        return declarator if scope.start_byte <= ident.start_byte and ident.end_byte <= scope.end_byte else None

    def is_function(self, name: str) -> bool:
        """Whether a name of the sketch's may hold one of its functions."""
        return any(b.parent.type != "variable_declarator" or (b.parent.child_by_field_name("value") is not None and
                   b.parent.child_by_field_name("value").type in _FUNCTIONS | {"identifier", "member_expression"})
                   for b in self.bindings.get(name, [])) or name in self.assigned

    def _kept(self, name: str) -> bool:
        """Every use of an object or array `name` only reads a field or hands it to a world call (the
        facade copies what crosses), so it still holds what its literal says."""
        for use in self.uses.get(name, []):
            parent = use.parent
            if parent.type == "member_expression" and parent.child_by_field_name("object").id == use.id:
                outer = parent.parent
                if outer.type == "call_expression" and outer.child_by_field_name("function").id == parent.id:
                    return False
                if outer.type in ("assignment_expression", "augmented_assignment_expression", "update_expression") \
                        or (outer.type == "unary_expression" and _text(outer.children[0]) == "delete"):
                    return False
            elif not (parent.type == "arguments" and self.callee(parent.parent) is not None):
                return False
        return True

    def value(self, node, depth: int = 0):
        """What an expression is, as far as the source settles it: UNDEFINED, a literal's node (a
        number, signed number, string, array, object...), or None (known only at run time)."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        kind = node.type
        if kind in _LITERALS:
            return node
        if kind == "undefined":
            return UNDEFINED
        if kind == "unary_expression":
            op, arg = _text(node.children[0]), node.child_by_field_name("argument")
            return UNDEFINED if op == "void" else node if op in "-+" and arg.type == "number" else None
        if kind in ("identifier", "shorthand_property_identifier"):
            name = _text(node)
            if name in self.free:
                return UNDEFINED if name == "undefined" else node if name == "NaN" else None
            declarator = self._declarator(node)
            if declarator is None or depth > 8:
                return None
            init = declarator.child_by_field_name("value")
            if init is None:
                return UNDEFINED
            held = self.value(init, depth + 1)
            return None if held not in (None, UNDEFINED) and held.type in ("array", "object") \
                and not self._kept(name) else held
        if kind == "member_expression" and node.child_by_field_name("optional_chain") is None:
            prop = node.child_by_field_name("property")
            obj = self.value(node.child_by_field_name("object"), depth + 1)
            if prop.type != "property_identifier" or obj in (None, UNDEFINED) or obj.type != "object":
                return None
            fields = _fields(obj)
            if fields is None or _text(prop) in _OBJECT_FIELDS:
                return None
            if _text(prop) not in fields:
                return UNDEFINED
            return None if fields[_text(prop)] is None else self.value(fields[_text(prop)], depth + 1)
        return None

    def number(self, node) -> float | None:
        held = self.value(node)
        if held in (None, UNDEFINED):
            return None
        if held.type == "identifier":  # NaN
            return float("nan")
        sign = 1.0
        if held.type == "unary_expression":
            sign, held = (-1.0 if _text(held.children[0]) == "-" else 1.0), held.child_by_field_name("argument")
        if held.type != "number":
            return None
        text = _text(held).replace("_", "")
        try:
            return sign * (float(int(text, 0)) if text[:2].lower() in ("0x", "0o", "0b") else float(text))
        except ValueError:
            return None

    def string(self, node) -> str | None:
        held = self.value(node)
        if held in (None, UNDEFINED) or held.type not in ("string", "template_string"):
            return None
        if any(c.type in ("escape_sequence", "template_substitution") for c in held.named_children):
            return None
        return _text(held)[1:-1]


def _scope(declarator):
    """Where a declared name holds: a let or const's block (or for statement), a var's function."""
    declaration = declarator.parent
    if declaration.type == "lexical_declaration":
        return declaration.parent
    node = declaration.parent
    while node.type != "program" and not (node.type == "statement_block" and node.parent.type in _FUNCTIONS):
        node = node.parent
    return node


def _descendants(node):
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _fields(obj) -> dict | None:
    """An object literal's fields, each to its value's node (None: a method); None where a spread or
    a computed key leaves them unknown."""
    found = {}
    for child in obj.named_children:
        if child.type == "pair":
            key = child.child_by_field_name("key")
            if key.type == "computed_property_name":
                return None
            found[_text(key)[1:-1] if key.type == "string" else _text(key)] = child.child_by_field_name("value")
        elif child.type == "shorthand_property_identifier":
            found[_text(child)] = child
        elif child.type == "method_definition":
            found[_text(child.child_by_field_name("name"))] = None
        elif child.type != "comment":
            return None
    return found


# ---- call_shape ----------------------------------------------------------------------------------
def _added(sketch: _Sketch) -> dict[str, set[str] | None]:
    """The names of each kind the sketch can use: p5.brush's and those it adds (None: one it adds
    under a name the source does not settle, so any may exist)."""
    known: dict[str, set[str] | None] = {kind: set(found) for kind, found in world.NAMED.items()}
    for call in sketch.calls:
        kind = world.ADDS_NAMED.get(sketch.callee(call))
        if kind is not None and known[kind] is not None:
            args = _arguments(call)
            name = sketch.string(args[0]) if args else None
            known[kind] = None if name is None else known[kind] | {name}
    return known


def _call_mistakes(sketch: _Sketch, call, key: str, needs: world.Needs, known: dict) -> list[str]:
    args = _arguments(call)
    if any(a.type == "spread_element" for a in args):
        return []
    found = []
    if len(args) < len(needs.params):
        found.append(f"`{_snippet(call)}` has {len(args)} argument{'' if len(args) == 1 else 's'}; {key} needs "
                     f"{len(needs.params)} ({', '.join(needs.params)})")
    for param, arg in zip(needs.params, args):
        if sketch.value(arg) == UNDEFINED:
            found.append(f"{key}'s {param} is `{_snippet(arg)}`, which is always undefined here")
    for i in needs.positive if len(args) <= len(needs.params) else ():  # an optional argument after them can
        n = sketch.number(args[i]) if i < len(args) else None                 # change what they mean (a circle's r)
        if n is not None and not n > 0:
            found.append(f"{key}'s {needs.params[i]} is `{_snippet(args[i])}`; it must be above 0")
    for i, kind in needs.named:
        name = sketch.string(args[i]) if i < len(args) else None
        if name is not None and known[kind] is not None and name not in known[kind]:
            found.append(f"{key}'s {kind} \"{name}\" is not one p5.brush has ({', '.join(world.NAMED[kind])}) "
                         "nor one the sketch adds")
    if needs.points is not None and needs.points < len(args):
        found += _point_mistakes(sketch, args[needs.points], key, needs.least_points)
    for i, type_name, field in needs.typed_fields:
        held = sketch.value(args[i]) if i < len(args) else None
        fields = _fields(held) if held not in (None, UNDEFINED) and held.type == "object" else None
        if fields is not None and fields.get("type") is not None and sketch.string(fields["type"]) == type_name \
                and field not in fields:
            found.append(f"{key}'s object has type \"{type_name}\" but no `{field}`, which that type needs")
    return found


def _point_mistakes(sketch: _Sketch, arg, key: str, least: int) -> list[str]:
    held = sketch.value(arg)
    if held in (None, UNDEFINED) or held.type != "array":
        return []
    points = [p for p in held.named_children if p.type != "comment"]
    if any(p.type == "spread_element" for p in points):
        return []
    for point in points:
        settled = sketch.value(point)
        if settled not in (None, UNDEFINED) and settled.type != "array":
            return [f"{key}'s points hold `{_snippet(point)}`; each point must be an array [x, y]"]
    if len(points) < least:
        return [f"{key} has {len(points)} point{'' if len(points) == 1 else 's'}; it needs at least {least}"]
    return []


# ---- path_order ----------------------------------------------------------------------------------
def _inert(sketch: _Sketch, statement) -> bool:
    """Whether a statement surely neither begins nor ends a path: every call in it is a world call
    other than a path's, or of JavaScript's own namespaces handed no function."""
    for node in _descendants(statement):
        if node.type not in ("call_expression", "new_expression"):
            continue
        key = sketch.callee(node)
        if key is not None:
            if key in _ROLES:
                return False
            continue
        fn = node.child_by_field_name("function")
        obj = fn.child_by_field_name("object") if fn is not None and fn.type == "member_expression" else None
        if obj is None or obj.type != "identifier" or _text(obj) not in _BUILTIN_NAMESPACES \
                or _text(obj) not in sketch.free:
            return False
        if any(a.type in ("arrow_function", "function_expression") or a.type == "identifier"
               and sketch.is_function(_text(a)) for a in _arguments(node)):
            return False
    return True


def _direct_call(sketch: _Sketch, statement):
    """The world call a statement is, alone (`brush.vertex(1, 2);`), with its key; else None."""
    if statement.type != "expression_statement" or not statement.named_children:
        return None
    expr = statement.named_children[0]
    key = sketch.callee(expr) if expr.type == "call_expression" else None
    return (expr, key) if key in _ROLES else None


def _walk(sketch: _Sketch, statements, states: dict) -> tuple[list[tuple[int, str]], dict]:
    """One statement list in order, from `states` (path -> CLOSED, the steps since its begin, or None):
    its first path mistake (the call throws: nothing after it runs) and the states it ends in."""
    states, began, ended = dict(states), {}, {}
    for statement in statements:
        if statement.type in _SKIPPED:
            continue
        direct = _direct_call(sketch, statement)
        if direct is None:
            if statement.type in _STOPS:
                break
            if not _inert(sketch, statement):
                states = dict.fromkeys(states)
            continue
        call, key = direct
        path, role = _ROLES[key]
        state, line = states[path], _line(call)
        if role == "begin":
            states[path], began[path] = 0, line
        elif role == "also_ends":
            states[path], ended[path] = CLOSED, f"{key} at line {line} ended the last"
        elif state == CLOSED:
            last = f"; {ended[path]}" if path in ended else ""
            return [(line, f"{key} with no {path.begin} open: p5.brush throws{last}")], states
        elif role == "step":
            states[path] = None if state is None else state + 1
        else:
            if state is not None and state < path.least_steps:
                return [(line, f"{key} after {state} call{'' if state == 1 else 's'} of {path.step} since "
                               f"line {began[path]}; it needs at least {path.least_steps}")], states
            states[path], ended[path] = CLOSED, f"line {line} ended the last"
    return [], states


def _path_mistakes(sketch: _Sketch) -> list[tuple[int, str]]:
    """Every statement list, each from what is known where it starts: nothing begun at the top of the
    sketch, and at the top of `setup` what the sketch's top level left; not known in any other."""
    top = [c for c in sketch.root.named_children]
    found, after_top = _walk(sketch, top, dict.fromkeys(world.PATHS, CLOSED))
    for node in _descendants(sketch.root):
        if node.type != "statement_block":
            continue
        parent = node.parent
        is_setup = parent.type == "function_declaration" and parent.parent.id == sketch.root.id \
            and _text(parent.child_by_field_name("name")) == "setup"
        found += _walk(sketch, node.named_children, after_top if is_setup else dict.fromkeys(world.PATHS))[0]
    return found


def mistakes(code: str | None) -> list[tuple[str, str]]:
    """(violation code, detail) for every call the sketch makes in a shape it cannot run, by line."""
    if not code or not code.strip():
        return []
    tree = names.parse(code)
    if tree.root_node.has_error:
        return []
    sketch = _Sketch(tree.root_node, set(names.read(code).free))
    known = _added(sketch)
    found = [(_line(call), "call_shape", message) for call in sketch.calls
             if (key := sketch.callee(call)) in world.CALL_NEEDS
             for message in _call_mistakes(sketch, call, key, world.CALL_NEEDS[key], known)]
    found += [(line, "path_order", message) for line, message in _path_mistakes(sketch)]
    return [(code, f"{code}: line {line}: {message}") for line, code, message in sorted(found)]


if __name__ == "__main__":
    for _, detail in mistakes(open(sys.argv[1], encoding="utf-8", errors="replace").read()):
        print(detail)
