"""The names a sketch uses, read from its syntax tree, against its world: pure Python, no browser."""

from __future__ import annotations

from salon.curate.sandbox import names, world
from render_support import EXAMPLES


def test_the_bundled_examples_use_only_their_world():
    for path in sorted(EXAMPLES.glob("*.js")):
        assert names.outside_world(path.read_text()) == [], path.name


def test_free_names_with_their_first_line():
    found = names.read("function setup() {\n  createCanvas(600, 600, WEBGL);\n  fill(3);\n  fill(4);\n}\n")
    assert found.parsed and found.free == {"createCanvas": 2, "WEBGL": 2, "fill": 3}


def test_declared_names_are_not_free_in_any_form():
    code = """function setup(a, {b, c: d}, [e, f = 2], ...g) {
  const h = 1; let [i] = [2]; var {j} = {j: 3};
  for (const k of [1]) {} for (let l in {}) {}
  try {} catch (m) {}
  class N {} const o = function p() { return p; }; const q = (r) => r; const s = ({t}) => t;
  return [a, b, d, e, f, g, h, i, j, k, l, m, N, o, q, s, arguments];
}"""
    assert names.read(code).free == {}


def test_properties_labels_and_typeof_are_no_use_of_a_name():
    code = "function setup() { brush.circle(0, 0, 9); const o = {fill: 1}; o.rect = 2; top: for (;;) break top; typeof window; }"
    assert names.outside_world(code) == []


def test_each_name_outside_the_world_has_its_code():
    code = "function setup() { ellipse(1); text('hi'); document.title; setTimeout(setup); fetch('/'); }"
    assert [c for c, _ in names.outside_world(code)] == ["bare_primitives", "text_label", "external_access",
                                                         "unknown_name", "external_access"]
    assert names.outside_world(code)[0][1] == "bare_primitives: line 1: `ellipse` is not in the sketch's world"


def test_sloppy_globals_are_declared_on_line_one():
    code = "function setup() {\n  palette = ['#fff'];\n  for (i = 0; i < 2; i++) {}\n  width = 3;\n}\n"
    found = names.read(code)
    assert found.assigned == {"palette", "i"} and found.free == {"width": 4}  # the world's: not redeclared
    prepared = names.prepared(code)
    assert prepared.startswith("var i, palette; function setup() {\n") and prepared.count("\n") == code.count("\n")
    assert names.prepared("function setup() {}") == "function setup() {}"


def test_a_sketch_that_does_not_parse_is_left_to_the_syntax_check():
    found = names.read("function setup() { if (x { }")
    assert not found.parsed and names.outside_world("function setup() { if (x { }") == []


def test_the_world_lists_are_disjoint_from_the_coded_names():
    assert not world.WORLD_NAMES & set(world.NAME_CODES)
    assert world.code_of("fill") == "bare_primitives" and world.code_of("window") == "external_access"
    assert world.code_of("textSize") == "text_label" and world.code_of("whatever") == "unknown_name"
