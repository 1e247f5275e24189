"""A reused page against real Chromium: each sketch is a new document, and a page serves the next
sketch only after one that finished clean (RenderConfig.sketches_per_page)."""

from __future__ import annotations

import asyncio

import pytest

from playwright.async_api import Route

from render_support import HOSTILE, SAME_IMAGE_MAX_PIXEL_SHARE, differing_share, example
from salon.curate.sandbox import pages as render_pages
from salon.curate.sandbox.assets import PAGE_ORIGIN
from salon.curate.sandbox.render import Renderer, RenderConfig
from salon.pool.errors import ConfigError

pytestmark = pytest.mark.browser

GOOD = "hibiscus_03_layered"

# What a sketch could have left in the document after it, read from that document.
LEFT_BEHIND = """async () => {
  const storage = {};
  for (const [name, read] of Object.entries({
    localStorage: () => localStorage.getItem("left"), sessionStorage: () => sessionStorage.getItem("left"),
    cookie: () => document.cookie, indexedDB: () => indexedDB.databases(),
  })) { try { storage[name] = String(await read()); } catch (e) { storage[name] = e.name; } }
  return { name: window.name, history: history.length, hash: location.hash, global: typeof leftBehind,
           p5: typeof p5.prototype.leftBehind, origin: origin, storage };
}"""


def spy_on_reuse(monkeypatch) -> list[tuple[object, bool, bool, int]]:
    """(page, kept, clean, the page's sketches so far) for every sketch the renderer finishes."""
    seen = []
    real = render_pages.SandboxBrowser.reuse

    def reuse(self, sp, clean):
        kept = real(self, sp, clean)
        seen.append((sp, kept, clean, sp.sketches))
        return kept

    monkeypatch.setattr(render_pages.SandboxBrowser, "reuse", reuse)
    return seen


async def test_a_clean_sketch_leaves_nothing_for_the_next_document(monkeypatch):
    seen = spy_on_reuse(monkeypatch)
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        alone = await renderer.render(example(GOOD), seed=0)
        leaver = await renderer.render((HOSTILE / "world_leave_state.js").read_text(), seed=0)
        assert alone.ok and leaver.ok, (alone, leaver)
        page, kept, _, _ = seen[-1]
        assert kept, "a clean sketch's page is reused"
        browser = renderer._browsers[0]
        while (sp := await browser.take()) is not page:  # the leaver's page, with its next document
            browser.warm.append(_done(sp))
        left = await sp.page.evaluate(LEFT_BEHIND)
        assert left == {"name": "", "history": 1, "hash": "", "global": "undefined", "p5": "undefined",
                        "origin": "null", "storage": {k: "SecurityError" for k in
                                                      ("localStorage", "sessionStorage", "cookie", "indexedDB")}}
        browser.warm.insert(0, _done(sp))  # the next sketch gets this very document
        after = await renderer.render(example(GOOD), seed=0)
    assert seen[-1][0] is page and after.ok
    # p5.brush is loaded afresh in each document: the brush, field and scale the leaver set are gone
    assert differing_share(after.png, alone.png) < SAME_IMAGE_MAX_PIXEL_SHARE


async def test_only_a_page_whose_sketch_finished_clean_is_reused(monkeypatch):
    seen = spy_on_reuse(monkeypatch)
    limit = 2
    async with Renderer(RenderConfig(browsers=1, render_rejects=True, sketches_per_page=limit)) as renderer:
        for code in [example(GOOD), (HOSTILE / "fetch_obfuscated.js").read_text(),
                     (HOSTILE / "infinite_loop.js").read_text()] + [example(GOOD)] * 4:
            await renderer.render(code, seed=0, timeout_s=5 if "while (true)" in code else 60)
    assert [clean for _, _, clean, _ in seen] == [True, False, False, True, True, True, True]
    assert all(kept == (clean and sketches < limit) for _, kept, clean, sketches in seen)
    assert sum(1 for _, kept, clean, _ in seen if clean and not kept) == 2  # two pages reached the limit


async def test_per_sketch_only_the_empty_document_crosses_to_the_browser(monkeypatch):
    """p5 and p5.brush (1 MB) are the browser's to run in each new document, given once per page:
    serving them for every sketch was most of the Python and driver time of a render. The sketch
    itself is a string handed to start(), never a script the page loads."""
    served = []
    real = Route.fulfill

    async def fulfill(self, **kw):
        served.append((self.request.url, len(kw.get("body") or b"")))
        return await real(self, **kw)

    monkeypatch.setattr(Route, "fulfill", fulfill)
    async with Renderer(RenderConfig(browsers=1)) as renderer:
        results = [await renderer.render(example(GOOD), seed=seed) for seed in range(3)]
    assert all(r.ok for r in results), results
    urls = [url for url, _ in served]
    assert urls == [PAGE_ORIGIN + "/"] * len(urls) and len(urls) >= 3
    assert max(size for _, size in served) < 50_000  # p5.min.js alone is 990 kB


def test_sketches_per_page_is_validated():
    with pytest.raises(ConfigError, match="sketches_per_page"):
        RenderConfig(sketches_per_page=0)


def _done(value):
    future = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future
