"""The verdict out of the sketch's reach, against real Chromium: sketches that change what the page's
own code calls (its realm is theirs too), paint outside p5.brush by every route, or write words
without a glyph call. Each also paints a brush wash, as a policy's reply would, and the next
render after each is unchanged.

The control test runs the same forgeries against a page without the new protections (the guard's
old way: a verdict in a Set, "who called" read from a stack string, the capture made in the
sketch's realm), so these tests cannot pass by accident.
"""

from __future__ import annotations

import asyncio

import pytest

from render_support import HOSTILE, SAME_IMAGE_MAX_PIXEL_SHARE, count_launches, differing_share, example, pixels
from salon.curate.sandbox import pages
from salon.curate.sandbox.assets import find_node_modules
from salon.curate.sandbox.chromium import find_chromium
from salon.curate.sandbox.render import Renderer, RenderConfig
from test_render_sandbox import GOOD, good_alone  # noqa: F401  (the fixture: the good sketch rendered alone)

pytestmark = pytest.mark.browser

JS_CONTENT_TYPE = "text/javascript; charset=utf-8"  # p5 fails to parse under another type

# What each must be told; all of them paint a brush wash as well. Each changed what the page's own
# code calls, or painted around the brush, when the sketch ran in the page's realm: in its
# compartment (world.py) the first name it reaches for outside its world is refused.
REALM_VERDICTS = {
    "realm_set_add": {"bare_primitives"},  # Set.prototype.add made to drop strings, then rect and ellipse
    "realm_set_iterator": {"bare_primitives"},  # the Set iterator hides codes, then quads
    "realm_string_includes": {"bare_primitives"},  # String.prototype.includes always false, then triangles
    "realm_prepare_stack": {"bare_primitives"},  # Error.prepareStackTrace makes every stack p5.brush's
    "realm_source_url": {"bare_primitives"},  # a sourceURL comment names the sketch p5.brush
    "realm_math_max": {"bare_primitives"},  # Math.max answers 0, then textures through drawingContext
    "gl_scissor_words": {"bare_primitives"},  # SCORE 10 in scissored clears on drawingContext
    "pixels_words": {"bare_primitives"},  # NICE ART written into pixels[] (loadPixels / updatePixels)
    "brush_words": {"text_label"},  # WOW in thick brush.line strokes: every call p5.brush's, the image has a word
    "bound_native_jobs": {"bare_primitives"},  # WebGL calls bound to p5's context, run by promise jobs and as draw
    "brush_field_paint": {"bare_primitives"},  # a field function p5.brush calls paints rect and a raw clear
    "report_revoke": {"external_access"},  # hunts down the report channel on the window
}


def plain_version(name: str) -> str:
    """The hostile sketch with everything after its brush wash removed: what it honestly painted."""
    code = (HOSTILE / f"{name}.js").read_text()
    head, _ = code.split("  brush.circle(300, 300, 150);\n", 1)
    return head + "  brush.circle(300, 300, 150);\n}\n"


async def test_sketches_that_change_the_realm_or_paint_around_the_brush_get_their_codes(good_alone):
    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        for name, expected in REALM_VERDICTS.items():
            bad = await renderer.render((HOSTILE / f"{name}.js").read_text(), seed=0, timeout_s=30)
            assert not bad.ok and not bad.unavailable, (name, bad)
            assert expected <= set(bad.violations), (name, bad.violations, bad.details)
            assert bad.paint_fraction > 0.05 and "blank_canvas" not in bad.violations, (name, bad)
            after = await renderer.render(example(GOOD), seed=0)
            assert after.ok, (name, after)
            assert differing_share(after.png, good_alone) < SAME_IMAGE_MAX_PIXEL_SHARE, name


async def test_paint_outside_the_brush_never_reaches_the_canvas():
    # What the page refused was skipped, not only reported: the stored image is the brush wash alone.
    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        for name in ["gl_scissor_words", "pixels_words", "bound_native_jobs", "realm_set_add"]:
            bad = await renderer.render((HOSTILE / f"{name}.js").read_text(), seed=0, timeout_s=30)
            honest = await renderer.render(plain_version(name), seed=0)
            assert honest.ok, (name, honest)
            assert differing_share(bad.png, honest.png) < SAME_IMAGE_MAX_PIXEL_SHARE, (name, bad.details)


async def test_the_painting_is_read_outside_the_realm_whatever_the_sketch_replaces():
    # realm_call_forgery replaces Function.prototype.call and toDataURL to answer a forged image;
    # second_instance starts a p5 of its own with a red canvas. Neither image is what salon stores.
    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        honest = await renderer.render(plain_version("realm_call_forgery"), seed=0)
        forged = await renderer.render((HOSTILE / "realm_call_forgery.js").read_text(), seed=0)
        second = await renderer.render((HOSTILE / "second_instance.js").read_text(), seed=0)
    assert honest.ok, honest
    for r in (forged, second):
        assert r.png is not None and differing_share(r.png, honest.png) < SAME_IMAGE_MAX_PIXEL_SHARE, r
    red = pixels(second.png)[:, :, 0].mean() - pixels(second.png)[:, :, 1].mean()
    assert red < 30  # not the second instance's flat red block
    assert "bare_primitives" in second.violations, second  # p5 itself is not in the sketch's world


async def test_a_report_that_does_not_arrive_whole_is_never_ok(monkeypatch):
    # A channel that lost what the guard sent (here: salon drops every violation message it gets)
    # must not turn a violation into ok: the guard's "done" says how many it sent.
    real = pages.SandboxPage.on_report

    def lossy(self, event):
        if '"t":"violation"' not in event.get("payload", ""):
            real(self, event)

    monkeypatch.setattr(pages.SandboxPage, "on_report", lossy)
    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        lost = await renderer.render((HOSTILE / "realm_set_add.js").read_text(), seed=0)
        assert not lost.ok and "runtime_error" in lost.violations, lost

        # and a page whose "done" never arrives is a timeout, never a painting
        def deaf(self, event):
            if '"t":"done"' not in event.get("payload", ""):
                real(self, event)

        monkeypatch.setattr(pages.SandboxPage, "on_report", deaf)
        silent = await renderer.render(example("jellyfish_01_bell"), seed=0, timeout_s=8)
    assert silent.violations == ["timeout"] and not silent.unavailable, silent


async def test_words_on_the_image_are_text_label_and_the_check_can_be_off():
    code = (HOSTILE / "brush_words.js").read_text()
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        read = await renderer.render(code, seed=0)
        good = await renderer.render(example("mountain_01_lake"), seed=0)
    async with Renderer(RenderConfig(browsers=1, text_check="off")) as renderer:
        unread = await renderer.render(code, seed=0)
    assert read.violations == ["text_label"], read
    assert any("read 'WOW'" in d or "read 'wow'" in d.lower() for d in read.details), read.details
    assert read.ocr_ms is not None and read.ocr_ms > 0
    assert good.ok and good.ocr_ms is not None and good.ocr_ms > 0, good
    assert unread.ok and unread.ocr_ms is None, unread


async def test_a_sketch_that_kills_its_renderer_is_retried_then_judged(monkeypatch):
    launches = count_launches(monkeypatch)
    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        started = len(launches)
        bomb = await renderer.render((HOSTILE / "memory_bomb.js").read_text(), seed=0, timeout_s=20)
        retried = len(launches) - started
        after = await renderer.render(example("jellyfish_01_bell"), seed=0)
    assert bomb.violations == ["runtime_error"] and not bomb.unavailable, bomb
    assert any("died twice" in d for d in bomb.details), bomb.details
    assert retried == 2  # the retry's fresh browser and the known-good probe's
    assert after.ok, after


async def test_a_browser_that_fails_the_known_good_probe_is_unavailable(monkeypatch):
    real = pages.SandboxBrowser.launch
    launched = []

    async def broken_after_first(self):
        launched.append(self)
        if len(launched) > 1:
            raise RuntimeError("chromium would not start")
        await real(self)

    monkeypatch.setattr(pages.SandboxBrowser, "launch", broken_after_first)
    async with Renderer(RenderConfig(browsers=1, render_rejects=True)) as renderer:
        bomb = await renderer.render((HOSTILE / "memory_bomb.js").read_text(), seed=0, timeout_s=20)
    assert bomb.unavailable and bomb.violations == [], bomb


# --- control: the same forgeries against a page without the new protections ----------------------

# The guard's old way, in the sketch's realm: a verdict kept in a Set, "who called" read from a
# stack string with String.prototype.includes, the capture made with toDataURL.call, no lockdown.
OPEN_PAGE = """<!doctype html><html><body><script src="/p5.min.js"></script><script src="/p5.brush.js"></script>
<script>
  const flags = new Set();
  const sketchCalled = () => String(new Error().stack).split("\\n").slice(2).some((l) => l.includes("sketch.js"));
  for (const name of ["rect", "ellipse", "quad", "triangle"]) {
    const real = p5.prototype[name];
    p5.prototype[name] = function (...a) { if (sketchCalled()) flags.add("bare_primitives"); return real.apply(this, a); };
  }
  const toDataURL = HTMLCanvasElement.prototype.toDataURL;
  window.verdict = () => ({ flags: [...flags], image: toDataURL.call(document.querySelector("canvas"), "image/png") });
</script><script src="/sketch.js"></script></body></html>"""


async def _open_page_verdict(sketch: str) -> dict:
    from playwright.async_api import async_playwright

    nm = find_node_modules()
    files = {"/": (OPEN_PAGE.encode(), "text/html; charset=utf-8"), "/p5.min.js": ((nm / "p5/lib/p5.min.js").read_bytes(), JS_CONTENT_TYPE),
             "/p5.brush.js": ((nm / "p5.brush/dist/p5.brush.js").read_bytes(), JS_CONTENT_TYPE),
             "/sketch.js": (sketch.encode(), JS_CONTENT_TYPE)}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=find_chromium(), args=["--no-sandbox", "--disable-gpu"])
        page = await browser.new_page()

        async def route(r):
            path = "/" + r.request.url.split("/", 3)[-1]
            body, kind = files.get(path, (b"", "text/plain"))
            await r.fulfill(body=body, content_type=kind)

        await page.route("**/*", route)
        await page.goto("http://control.test/")
        # polled with plain evaluations: Playwright's own injected helpers share this realm, and
        # a sketch that replaces String.prototype.includes breaks them too
        for _ in range(300):
            if await page.evaluate("!!(window.p5 && p5.instance && p5.instance._setupDone)"):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        verdict = await page.evaluate("() => window.verdict()")
        await browser.close()
    return verdict


async def test_control_the_forgeries_work_on_a_page_without_the_protections():
    forged = await _open_page_verdict((HOSTILE / "realm_call_forgery.js").read_text())
    assert forged["image"].startswith("data:image/png")
    import base64

    png = base64.b64decode(forged["image"].split(",", 1)[1])
    top_red = pixels(png)[:300, :, 0].mean() - pixels(png)[:300, :, 1].mean()
    assert top_red > 100  # the capture answered the sketch's hand-made image
    for name in ["realm_set_add", "realm_string_includes", "realm_prepare_stack"]:
        open_verdict = await _open_page_verdict((HOSTILE / f"{name}.js").read_text())
        assert open_verdict["flags"] == [], (name, open_verdict["flags"])  # the bare primitives went unseen
    # and the same check sees an honest bypass on that page, so it is the forgery that hid it
    plain_bypass = (HOSTILE / "realm_set_add.js").read_text().replace("Set.prototype.add = ", "const unused = ")
    assert (await _open_page_verdict(plain_bypass))["flags"] == ["bare_primitives"]


async def test_gpu_memory_is_bounded_from_outside_the_page():
    # The browser's GPU memory (on SwiftShader: the process it draws in) grows by tens of MB under a
    # heavy painting; with the outside bound set below that, the page is killed mid-sketch.
    async with Renderer(RenderConfig(browsers=1, gpu_process_mb=1)) as renderer:
        killed = await renderer.render(example("mountain_01_lake"), seed=0)
    assert killed.violations == ["runtime_error"] and not killed.unavailable, killed
    assert any("GPU memory" in d and "gpu_process_mb" in d for d in killed.details), killed.details
