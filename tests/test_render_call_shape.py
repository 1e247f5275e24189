"""Call shapes (salon.curate.sandbox.call_shapes): world calls in a shape p5.brush or p5 throws on,
caught before the browser with their own codes and lines; good sketches pass. The browser tests render
every mistake the gate catches and see it throw there, and every name of world.NAMED paint."""

from __future__ import annotations

import pytest

from render_support import EXAMPLES
from salon.curate.sandbox import call_shapes, gate, world
from salon.train.start.sketches import generate_sketches

GOOD = EXAMPLES.parent.parent / "tests" / "sketches" / "good"
LINE = 7  # the body's line in SKELETON


def sketch(body: str) -> str:
    return ("function setup() {\n  createCanvas(600, 600, WEBGL);\n  angleMode(DEGREES);\n  brush.noStroke();\n"
            f'  brush.fill("#3a6ea5", 200);\n  brush.circle(100, 100, 60);\n  {body}\n  noLoop();\n}}\n')


# (body on line 7, its code, what the detail says). Each throws in the sandbox (test below).
MISTAKES = [
    ("brush.circle(80, -20);", "call_shape", "`brush.circle(80, -20)` has 2 arguments; brush.circle needs 3 "
                                             "(x, y, radius)"),
    ("brush.circle(10, -20, -30);", "call_shape", "brush.circle's radius is `-30`; it must be above 0"),
    ("brush.circle(10, -20, 0);", "call_shape", "brush.circle's radius is `0`; it must be above 0"),
    ("const r = NaN; brush.circle(10, -20, r);", "call_shape", "brush.circle's radius is `r`; it must be above 0"),
    ("let r; brush.circle(0, 0, r);", "call_shape", "brush.circle's radius is `r`, which is always undefined here"),
    ("const v = {x: 10}; brush.circle(v.x, v.y, 20);", "call_shape", "brush.circle's y is `v.y`, which is always "
                                                                    "undefined here"),
    ("brush.circle(0, 0, undefined);", "call_shape", "radius is `undefined`, which is always undefined here"),
    ("brush.beginShape(); brush.vertex(0, 0); brush.vertex(-40); brush.vertex(50, 50); brush.endShape(CLOSE);",
     "call_shape", "`brush.vertex(-40)` has 1 argument; brush.vertex needs 2 (x, y)"),
    ("brush.rect(0, 0, 50);", "call_shape", "brush.rect needs 4 (x, y, w, h)"),
    ("brush.polygon([{x: 0, y: 0}, {x: 50, y: 0}, {x: 0, y: 50}]);", "call_shape",
     "brush.polygon's points hold `{x: 0, y: 0}`; each point must be an array [x, y]"),
    ("const pts = [[0, 0], 50, 0]; new brush.Polygon(pts).fill();", "call_shape", "brush.Polygon's points hold `50`"),
    ("brush.spline([[0, 0, 1]]);", "call_shape", "brush.spline has 1 point; it needs at least 2"),
    ("brush.stroke(); brush.circle(0, 0, 40);", "call_shape", "brush.stroke needs 1 (colour)"),
    ("brush.fillBleed(); brush.circle(0, 0, 40);", "call_shape", "brush.fillBleed needs 1 (strength)"),
    ('brush.set("pencil", "#222222", 1);', "call_shape", 'brush.set\'s brush "pencil" is not one p5.brush has (pen,'),
    ('brush.pick("crayonz");', "call_shape", 'brush.pick\'s brush "crayonz" is not one p5.brush has'),
    ("brush.mass(); brush.circle(0, 0, 40);", "call_shape", "brush.mass needs 1 (brush)"),
    ('brush.field("zigzags");', "call_shape", 'brush.field\'s field "zigzags" is not one p5.brush has'),
    ('brush.addField("mine"); brush.field("mine"); brush.set("2B", "#222222", 1); brush.line(0, 0, 50, 50);',
     "call_shape", "brush.addField needs 2 (name, function)"),
    ('brush.beginStroke("wavy", 0, 0); brush.move(0, 50, 1); brush.endStroke(0, 1);', "call_shape",
     'brush.beginStroke\'s stroke type "wavy" is not one p5.brush has (curve, segments)'),
    ('brush.add("mine", {type: "custom"});', "call_shape", 'brush.add\'s object has type "custom" but no `tip`'),
    ("background();", "call_shape", "background needs 1 (colour)"),
    ("brush.fill(color(), 100); brush.circle(0, 0, 20);", "call_shape", "color needs 1 (value)"),
    ('brush.fill(lerpColor("#ffffff"), 100); brush.circle(0, 0, 20);', "call_shape", "lerpColor needs 2 (from, to)"),
    ("const order = shuffle();", "call_shape", "shuffle needs 1 (array)"),
    ("brush.vertex(0, 0);", "path_order", "brush.vertex with no brush.beginShape open: p5.brush throws"),
    ("brush.endShape(CLOSE);", "path_order", "brush.endShape with no brush.beginShape open"),
    ("brush.beginShape(); brush.vertex(0, 0); brush.endShape(CLOSE);", "path_order",
     "brush.endShape after 1 call of brush.vertex since line 7; it needs at least 2"),
    ("brush.beginShape(); brush.vertex(0, 0); brush.vertex(9, 9); brush.endShape(); brush.circle(0, 0, 9); "
     "brush.vertex(5, 5);", "path_order", "brush.vertex with no brush.beginShape open: p5.brush throws; line 7 "
                                         "ended the last"),
    ("brush.beginShape(); brush.vertex(0, 0); brush.rect(0, 0, 9, 9); brush.vertex(5, 5); brush.endShape();",
     "path_order", "brush.rect at line 7 ended the last"),
    ("brush.move(0, 50, 1);", "path_order", "brush.move with no brush.beginStroke open"),
    ('brush.set("2B", "#222222", 1); brush.endStroke(0, 1);', "path_order", "brush.endStroke with no "
                                                                           "brush.beginStroke open"),
]

# What the source does not settle, or settles as fine: none of these is a mistake.
NOT_MISTAKES = [
    "brush.circle(-70, -10, -40, -50);",  # an optional argument after the radius changes what it means
    "brush.circle(0, 0, 0.5);",
    "let r; r = 30; brush.circle(0, 0, r);",
    "let r; if (random() < 2) r = 30; brush.circle(0, 0, r);",
    "const v = {x: 10}; v.y = 5; brush.circle(v.x, v.y, 20);",
    "const grow = (o) => { o.y = 5; }; const v = {x: 10}; grow(v); brush.circle(v.x, v.y, 20);",
    "const v = {x: 10, ...{y: 4}}; brush.circle(v.x, v.y, 20);",
    "const r = random(10, 40); brush.circle(0, 0, r);",
    "const args = [0, 0, 30]; brush.circle(...args);",
    "const pts = [[0, 0]]; pts.push([50, 0], [0, 50]); brush.spline(pts);",
    "brush.polygon([[0, 0], [50, 0], [0, 50]]);",
    "brush.spline([[0, 0], [50, 50], [90, 0]]);",
    "const petal = (x) => brush.vertex(x, 0); brush.beginShape(); petal(1); petal(2); brush.endShape();",
    "brush.beginShape(); for (let i = 0; i < 5; i++) brush.vertex(i * 10, i * 5); brush.endShape(CLOSE);",
    "brush.beginShape(); brush.vertex(0, 0); if (random() < 2) { brush.vertex(50, 0); } brush.endShape(CLOSE);",
    "brush.beginShape(); brush.vertex(0, 0); brush.beginShape(); brush.vertex(50, 0); brush.vertex(0, 50); "
    "brush.endShape(CLOSE);",
    "brush.beginShape(); brush.vertex(0, 0); brush.circle(20, 20, 10); brush.vertex(0, 50); brush.endShape(CLOSE);",
    "brush.beginShape(); brush.vertex(Math.max(1, 2), 0); brush.vertex(0, 50); brush.endShape(CLOSE);",
    'brush.add("mine", {type: "marker", weight: 2}); brush.set("mine", "#222222", 1); brush.line(0, 0, 50, 50);',
    'const tips = ["a"]; brush.add(tips[0], {type: "marker"}); brush.set("pencil", "#222222", 1);',
    'brush.add("mine", {type: "custom", tip: (t) => t.circle(0, 0, 50)});',
    'brush.set("2B", "#222222", 1); brush.beginStroke("curve", 0, 0); brush.move(0, 50, 1); brush.endStroke(0, 1);',
    "const color = (c) => c; brush.fill(color(), 100); brush.circle(0, 0, 20);",
]


@pytest.mark.parametrize("body, code, says", MISTAKES, ids=[m[0][:40] for m in MISTAKES])
def test_each_mistake_is_caught_with_its_code_line_and_what_is_wrong(body, code, says):
    found = call_shapes.mistakes(sketch(body))
    assert [c for c, _ in found][:1] == [code], found
    assert found[0][1].startswith(f"{code}: line {LINE}: ") and says in found[0][1], found
    assert code in gate.static_violations(sketch(body))
    assert found[0][1] in gate.static_details(sketch(body))


@pytest.mark.parametrize("body", NOT_MISTAKES, ids=[b[:40] for b in NOT_MISTAKES])
def test_what_the_source_does_not_settle_is_left_to_the_page(body):
    assert call_shapes.mistakes(sketch(body)) == []


def test_shapes_across_functions_and_frames():
    helper = ("function petal(x) {\n  brush.beginShape();\n  brush.vertex(x, 0);\n  brush.endShape();\n}\n"
              "function setup() {\n  createCanvas(600, 600, WEBGL);\n  petal(3);\n}\n")
    assert call_shapes.mistakes(helper) == [("path_order", "path_order: line 4: brush.endShape after 1 call of "
                                                           "brush.vertex since line 2; it needs at least 2")]
    # draw() may continue what setup or the frame before began: not known where it starts
    frames = ("function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.beginShape();\n}\n"
              "function draw() {\n  brush.vertex(1, 2);\n  brush.vertex(5, 2);\n  brush.endShape();\n  noLoop();\n}\n")
    assert call_shapes.mistakes(frames) == []
    # a shape the top level begins is still open in setup
    top = "brush.beginShape();\nfunction setup() {\n  brush.vertex(1, 2);\n  brush.vertex(3, 4);\n  brush.endShape();\n}\n"
    assert call_shapes.mistakes(top) == []
    # a name declared in another function is not the one a call reads
    scoped = "function a() { let r; return r; }\nfunction setup() { const r = 5; brush.circle(0, 0, r); }\n"
    assert call_shapes.mistakes(scoped) == []
    shadowed = "const brush = {circle() {}};\nfunction setup() { brush.circle(0, 0); }\n"
    assert call_shapes.mistakes(shadowed) == []
    assert call_shapes.mistakes("function setup() { brush.circle(0, 0 }") == []  # the syntax check's
    assert call_shapes.mistakes(None) == [] and call_shapes.mistakes("") == []


def test_good_sketches_and_the_start_corpus_have_no_mistakes():
    paths = sorted(EXAMPLES.glob("*.js")) + sorted(GOOD.glob("*.js"))
    assert len(paths) >= 20
    for path in paths:
        assert call_shapes.mistakes(path.read_text()) == [], path.name
    for seed in (0, 7):
        for s in generate_sketches(500, seed=seed):
            assert call_shapes.mistakes(s.code) == [], s.code


def test_the_codes_sit_with_the_static_ones_and_the_table_names_world_calls():
    assert gate.VIOLATIONS.index("call_shape") < gate.VIOLATIONS.index("path_order") < \
        gate.VIOLATIONS.index("runtime_error")
    for key in world.CALL_NEEDS:
        name = key.removeprefix("brush.")
        assert (name in gate.BRUSH_API) if key.startswith("brush.") else (name in world.WORLD_NAMES), key
    for path in world.PATHS:
        assert {path.begin, path.step, path.end, *path.also_ends} <= {f"brush.{n}" for n in gate.BRUSH_API}


@pytest.mark.browser
async def test_every_mistake_the_gate_catches_throws_in_the_sandbox():
    from salon.curate.sandbox.render import Renderer, RenderConfig

    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        results = await renderer.render_many([(sketch(body), 0) for body, _, _ in MISTAKES])
    for (body, code, _), r in zip(MISTAKES, results):
        assert not r.unavailable and "runtime_error" in r.violations and code in r.violations, (body, r)


@pytest.mark.browser
def test_every_name_of_the_table_paints():
    from salon.curate.sandbox.render import render_sketches

    lines = [f'brush.set("{b}", "#222222", 1); brush.line({-250 + 40 * i}, -200, {-220 + 40 * i}, -150);'
             for i, b in enumerate(world.NAMED["brush"])]
    lines += [f'brush.set("2B", "#222222", 1); brush.field("{f}"); brush.line({-250 + 40 * i}, 0, {-220 + 40 * i}, 60);'
              for i, f in enumerate(world.NAMED["field"])]
    lines += ["brush.noField();"] + [f'brush.beginStroke("{t}", {60 * i}, 150); brush.move(0, 50, 1); '
                                     "brush.endStroke(0, 1);" for i, t in enumerate(world.NAMED["stroke type"])]
    code = sketch("\n  ".join(lines))
    assert gate.static_violations(code) == []
    [result] = render_sketches([code], seeds=[0])
    assert result.ok, result
