"""The sketch's world against real Chromium: everything a sketch can reach is p5.brush's facade, p5's
helpers or JavaScript's own; what each hostile class of the compartment's design tried lands nowhere
(with a control on a page without the compartment, where it does); draw() runs its frames; a sketch
that holds its browser takes the browser with it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

from render_support import HOSTILE, SAME_IMAGE_MAX_PIXEL_SHARE, count_launches, differing_share, example
from salon.curate.sandbox import world
from salon.curate.sandbox.render import Renderer, RenderConfig
from test_render_realm import _open_page_verdict, plain_version
from test_render_sandbox import GOOD, good_alone  # noqa: F401  (the fixture: the good sketch rendered alone)

pytestmark = pytest.mark.browser

GOOD_SKETCHES = Path(__file__).resolve().parent / "sketches" / "good"
WALK = (Path(__file__).resolve().parent / "world_walk.js").read_text().replace("__JS_BUILTINS__", json.dumps(world.JS_BUILTINS))
# A sketch whose setup never ends: its world stays live (calls are refused once a painting is done).
HELD_IN_SETUP = """async function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(0, 0, 150);
  await new Promise(() => {});
}
"""


async def _walk_held_page(extra_roots: list[list[str]]) -> tuple[dict, list[str]]:
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        sp = await renderer._browsers[0].take()
        await sp.cdp.send("Runtime.evaluate", {"expression": f"window.__salon.start(0, {json.dumps(HELD_IN_SETUP)})"})
        for _ in range(100):  # until p5 runs setup: the instance exists
            if await sp.page.evaluate("() => !!window.p5 && !!p5.instance"):
                break
            await asyncio.sleep(0.1)
        found = await sp.page.evaluate(WALK, extra_roots)
        names = await sp.page.evaluate("() => window.__salon.worldNames")
        await sp.close()
    return found, names


async def test_nothing_the_sketch_can_reach_is_the_page_or_paints_but_through_the_brush():
    found, names = await _walk_held_page([])
    assert found["problems"] == [], found["problems"][:20]
    # the walk reached the facade's results and what p5.brush handed the sketch's own functions
    assert found["reached"] > 150 and found["handed"] >= 2, found
    assert set(names) == world.WORLD_NAMES


async def test_control_the_walk_finds_the_page_when_it_is_reachable():
    found, _ = await _walk_held_page([["brush", "circle"], ["p5", "instance"], ["document"]])
    problems = "\n".join(found["problems"])
    for expected in ["brush.circle: a function the world does not list", "p5.instance: a p5 instance", "document: a page global"]:
        assert expected in problems, problems[:2000]


@pytest.mark.parametrize("path", sorted(GOOD_SKETCHES.glob("*.js")), ids=lambda p: p.stem)
async def test_good_sketches_render_in_the_world(path):
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        result = await renderer.render(path.read_text(), seed=0)
    assert result.ok and result.paint_fraction > 0.01, (path.name, result)


def _png(verdict: dict) -> bytes:
    return base64.b64decode(verdict["image"].split(",", 1)[1])


# Each class of the hidden set that got past the rule that asked "who called": in the world, the
# painting is the brush wash the sketch made before it reached for anything else.
WORLD_CLASSES = {
    "world_page_turn": {"bare_primitives"},  # p5's fill and rect bound to a promise job and a timer
    "world_stack_depth": {"bare_primitives"},  # rect through native frames (map, apply.bind)
    "world_paper": {"bare_primitives"},  # p5's renderer's background replaced with scissored clears
}


async def test_what_the_hostile_classes_reach_for_is_not_there():
    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        for name, expected in WORLD_CLASSES.items():
            code = (HOSTILE / f"{name}.js").read_text()
            bad = await renderer.render(code, seed=0, timeout_s=30)
            honest = await renderer.render(plain_version(name), seed=0)
            assert not bad.ok and expected <= set(bad.violations), (name, bad)
            assert honest.ok and differing_share(bad.png, honest.png) < SAME_IMAGE_MAX_PIXEL_SHARE, (name, bad.details)
            # control: on a page without the compartment the same sketch paints past its wash
            control = _png(await _open_page_verdict(code))
            assert differing_share(control, honest.png) > 0.02, name


def _without_the_write(code: str) -> str:
    return code.replace("  for (const column of kept) for (let r = 0; r < column.length; r++) column[r] = 0;\n", "")


async def test_p5_brush_state_is_out_of_reach():
    # The field the sketch kept is a copy: writing into it changes nothing p5.brush draws.
    code = (HOSTILE / "world_brush_state.js").read_text()
    assert _without_the_write(code) != code
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        kept = await renderer.render(code, seed=0)
        unwritten = await renderer.render(_without_the_write(code), seed=0)
    assert kept.ok and unwritten.ok, (kept, unwritten)
    assert differing_share(kept.png, unwritten.png) < SAME_IMAGE_MAX_PIXEL_SHARE
    control_kept = _png(await _open_page_verdict(code))
    control_unwritten = _png(await _open_page_verdict(_without_the_write(code)))
    assert differing_share(control_kept, control_unwritten) > 0.02  # on an open page the write redirects the strokes


async def test_a_name_outside_the_world_is_refused_with_its_code_before_and_in_the_browser():
    # Names made at run time pass the static check: the page reports what they reached for, as the
    # error that followed names it (a name passed through a variable first is a runtime_error).
    made = {
        "external_access": 'globalThis["fe" + "tch"]("/x");',
        "bare_primitives": 'globalThis["re" + "ct"](0, 0, 9, 9);',
        "runtime_error": 'const f = globalThis["re" + "ct"]; f(0, 0, 9, 9);',
        "unknown_brush_method": 'brush["water" + "colour"](1);',
        "unknown_name": "(function () { lost = 1; })();\n  function later() { let lost; }",
    }
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        for code, line in made.items():
            sketch = ("function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.fill('#3a6ea5', 200);\n"
                      f"  brush.circle(0, 0, 150);\n  {line}\n}}\n")
            result = await renderer.render(sketch, seed=0)
            assert code in result.violations, (code, result)


async def test_draw_runs_its_frames_until_no_loop_or_the_limit():
    code = (GOOD_SKETCHES / "world_frames.js").read_text()  # strokes every frame, noLoop() at frame 90
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        ninety = await renderer.render(code, seed=0)
    async with Renderer(RenderConfig(browsers=1, frames=10)) as renderer:
        ten = await renderer.render(code, seed=0)
    assert ninety.ok and ten.ok, (ninety, ten)
    assert ninety.paint_fraction > 2 * ten.paint_fraction, (ninety.paint_fraction, ten.paint_fraction)


async def test_a_sketch_that_holds_its_browser_takes_it_along(good_alone, monkeypatch):  # noqa: F811
    launches = count_launches(monkeypatch)
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        held = await renderer.render((HOSTILE / "world_heavy_wash.js").read_text(), seed=0, timeout_s=4)
        after = await renderer.render(example(GOOD), seed=0)
    assert held.violations == ["timeout"], held
    assert len(launches) == 2  # the first browser, and the one that replaced it
    assert after.ok and differing_share(after.png, good_alone) < SAME_IMAGE_MAX_PIXEL_SHARE, after
