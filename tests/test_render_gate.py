"""Static gate checks: pure Python, no browser."""

import pytest

from salon.curate.sandbox import gate
from render_support import EXAMPLES

SKELETON = """function setup() {{
  createCanvas(600, 600, WEBGL);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  {body}
}}
"""


def sketch(body: str) -> str:
    return SKELETON.format(body=body)


def test_bundled_examples_pass_the_static_gate():
    examples = sorted(EXAMPLES.glob("*.js"))
    assert len(examples) >= 12
    for path in examples:
        assert gate.static_violations(path.read_text()) == [], path.name


@pytest.mark.parametrize("code, expected", [
    (None, ["no_sketch"]),
    ("   \n", ["no_sketch"]),
    ("Sure! Here is a painting of a hibiscus.", ["no_sketch", "no_painting_calls"]),
    (sketch("if (true) {"), ["syntax_error"]),
    (sketch("").replace("600, 600, WEBGL", "600, 600"), ["not_webgl"]),
    (sketch("fetch('https://example.com/x.png');"), ["external_access"]),
    (sketch("loadImage('flower.png');"), ["external_access"]),
    (sketch("const u = 'data:image/png;base64,AAAA';"), ["external_access"]),
    (sketch("document.body.innerHTML = 'hi';"), ["external_access"]),
    (sketch("eval('1+1');"), ["external_access"]),
    (sketch("text('hibiscus', 10, 10);"), ["text_label"]),
    (sketch("ellipse(10, 10, 20, 20);"), ["bare_primitives"]),
    (sketch("const g = createGraphics(10, 10);"), ["bare_primitives"]),
    (sketch("const c = document.createElement('canvas').getContext('2d');"), ["external_access"]),
    (sketch("fill(255); noStroke();"), ["bare_primitives"]),
    (sketch("setTimeout(() => brush.circle(0, 0, 9), 10);"), ["unknown_name"]),
    (sketch("const s = self; s['fe' + 'tch']('x');"), ["external_access"]),
    (sketch("brush.watercolorFlower(1, 2);"), ["unknown_brush_method"]),
    ("function setup() { createCanvas(600, 600, WEBGL); brush.fill('#fff', 9); }", ["no_painting_calls"]),
])
def test_static_violations(code, expected):
    assert gate.static_violations(code) == expected


def test_comments_and_strings_do_not_trip_checks():
    code = sketch("// fetch the text() from document.body, then ellipse(1,2,3,4)\n"
                  "  /* eval(x); brush.inventedThing(); */\n"
                  "  const note = 'a soft ellipse of colour';")
    assert gate.static_violations(code) == []


def test_method_calls_named_like_primitives_are_not_bare():
    # brush.rect / brush.circle / brush.line are p5.brush, not p5 primitives; nor is a function of
    # the sketch's own that happens to share a p5 name.
    assert gate.static_violations(sketch("brush.rect(1, 2, 3, 4); brush.line(0, 0, 9, 9);")) == []
    assert gate.static_violations(sketch("const ellipse = (x) => brush.circle(x, 0, 9); ellipse(3);")) == []


def test_a_polygon_of_the_brush_is_painting():
    assert gate.static_violations("function setup() { createCanvas(600, 600, WEBGL);\n"
                                  "  const p = new brush.Polygon([[0, 0], [50, 0], [0, 50]]); p.fill(); }") == []


def test_verdict_adds_blank_canvas_and_keeps_stable_order():
    assert gate.verdict(["text_label"], ["external_access", "runtime_error"], 0.0) == [
        "external_access", "text_label", "runtime_error", "blank_canvas"]
    assert gate.verdict([], [], 0.5) == []
    assert gate.verdict([], [], None) == []


def test_codes_are_the_stable_set():
    assert gate.VIOLATIONS == ("no_sketch", "syntax_error", "not_webgl", "external_access", "text_label",
                               "bare_primitives", "unknown_brush_method", "unknown_name", "no_painting_calls",
                               "call_shape", "path_order", "runtime_error", "timeout", "blank_canvas")
    assert gate.RENDER_UNAVAILABLE not in gate.VIOLATIONS
