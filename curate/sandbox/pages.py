"""The render sandbox's browsers and pages: a long-lived Chromium each, with pre-warmed pages.

    browser = SandboxBrowser(renderer); await browser.launch()   # render.Renderer does this
    page = await browser.take()                                  # a warm page, p5 and p5.brush loaded
    if not browser.reuse(page, clean): await page.close()         # kept for the next sketch, or closed

A page is a browser context of its own (renderer process, storage, routing) holding one document
at a time. Each sketch gets a new document; the page that held it serves the next sketch only when
the sketch finished with no violation and nothing refused, up to RenderConfig.sketches_per_page,
and is closed with its process otherwise. What could outlive a document is taken away by
construction: the origin is opaque (assets.PAGE_CSP's sandbox: no storage of any kind), the
history is reset to the one document, the back-forward cache is off, and the guard empties
window.name before anything else runs. The page's own scripts (assets.py) are the browser's
to run in every new document, given once per page; every request but the empty document and the
sketch, each served once, is refused, and reported when the document is the sketch's.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from salon.curate.sandbox.chromium import BASE_CHROMIUM_ARGS
from salon.curate.sandbox.assets import HTML_CONTENT_TYPE, PAGE_CSP, PAGE_ORIGIN, REPORT_BINDING
from salon.curate.sandbox.gpu import driver_env
from salon.curate.sandbox.gpu_watch import GpuWatch

async def give_page_scripts(cdp, scripts: tuple[str, ...]) -> None:
    """The page's own scripts (assets.PageAssets.scripts), once per page: the browser runs them
    in every new document of it, in this order, before anything of the document's own."""
    await cdp.send("Page.enable")  # the scripts are the Page domain's, dropped if it is disabled
    # The guard's channel out, in every document before the guard runs (guard.js takes it); only
    # with the Runtime domain enabled is it there before the page's scripts.
    await cdp.send("Runtime.enable")
    await cdp.send("Runtime.addBinding", {"name": REPORT_BINDING})
    for source in scripts:
        await cdp.send("Page.addScriptToEvaluateOnNewDocument", {"source": source})


def pids_with_marker(markers: set[str]) -> list[int]:
    """Process ids whose command line holds one of these switches (a browser's marker: launch())."""
    wanted = {m.encode() for m in markers}
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if wanted.intersection(args):
                pids.append(int(entry.name))
    return sorted(pids)


class SandboxPage:
    """A page (its own context: renderer process, storage, routing) and the document it holds."""

    def __init__(self, context, page):
        self.context, self.page = context, page
        self.cdp = None  # the page's DevTools session (its history is reset per document)
        self.frame_id = ""  # the main frame's, for the isolated world of each new document
        self.capture_world = 0  # execution context of this document's isolated world (render.py reads the painting there)
        self.sketches = 0  # sketches this page has rendered, one document each
        self.new_document()

    def new_document(self) -> None:
        """State of the next document; until `loading` ends, what the browser reports belongs to
        the document being left (the previous sketch, already judged), not the next one."""
        self.loading = True
        self.network: list[str] = []  # what the browser saw the page try, as guard-style details
        self.crashed = False
        self.killed_for = ""  # why salon killed the page from outside (render.py's GPU memory watch)
        self.sketch: str | None = None  # set when the sketch starts (render.py hands it to the page)
        self.served: set[str] = set()  # the document is served once
        # What the guard reported over its binding, as it happened: salon's record, not the page's.
        self.violations: list[tuple[str, str]] = []  # (code, detail)
        self.finished: asyncio.Future = asyncio.get_running_loop().create_future()  # the guard's "done" message

    def on_report(self, event: dict) -> None:
        """A Runtime.bindingCalled event: one message of the guard's, kept unless it belongs to a
        document already left (the previous sketch, judged) or is not the guard's shape."""
        if self.loading or event.get("name") != REPORT_BINDING:
            return
        try:
            message = json.loads(event.get("payload", ""))
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if message.get("t") == "violation" and len(self.violations) < 500:
            self.violations.append((str(message.get("code", "")), str(message.get("detail", ""))[:300]))
        elif message.get("t") == "done" and not self.finished.done():
            self.finished.set_result(message)

    def lost(self, why: str, crashed: bool = False) -> None:
        """The renderer or the browser went away: no "done" will come for this document."""
        self.crashed = self.crashed or crashed
        if not self.finished.done():
            self.finished.set_exception(RuntimeError(why))
            self.finished.exception()  # retrieved: render.py may have stopped waiting already

    def refuse(self, what: str) -> None:
        if not self.loading and len(self.network) < 20:
            self.network.append(f"external_access: {what}")

    async def close(self, timeout_s: float = 5.0) -> bool:
        try:
            await asyncio.wait_for(self.context.close(), timeout_s)
            return True
        except Exception:
            return False


class SandboxBrowser:
    """A long-lived Chromium with a small queue of pre-warmed pages."""

    def __init__(self, renderer):
        self.r = renderer
        self.browser = None
        self.inflight = 0
        self.renders = 0
        self.dead = False
        self.warm: list[asyncio.Task] = []

    async def launch(self) -> None:
        # An inert switch that names this browser, so its process can be found (memory, tests).
        self.marker = f"--salon-browser={os.getpid()}-{id(self)}-{time.monotonic_ns()}"
        gl = self.r.gl
        self.browser = await self.r._playwright.chromium.launch(
            executable_path=self.r.isolation.executable, headless=True, args=BASE_CHROMIUM_ARGS + gl.args + [self.marker],
            env=driver_env() if gl.gpu else None)
        self.browser.on("disconnected", lambda _: setattr(self, "dead", True))
        pids = pids_with_marker({self.marker})
        self.gpu_watch = GpuWatch(pids[0] if pids else None, on_card=gl.gpu)
        self.dead = False
        self.renders = 0
        self._refill()

    def _refill(self) -> None:
        while not self.dead and len(self.warm) < self.r.pages:
            self.warm.append(asyncio.ensure_future(self._new_page()))

    async def _new_page(self) -> SandboxPage:
        size = self.r.config.size
        context = await self.browser.new_context(
            viewport={"width": size, "height": size}, device_scale_factor=1,
            service_workers="block", java_script_enabled=True, accept_downloads=False)
        page = await context.new_page()
        sp = SandboxPage(context, page)
        assets = self.r._assets

        async def route(route):
            req = route.request
            path = req.url[len(PAGE_ORIGIN):] if req.url.startswith(PAGE_ORIGIN) else None
            if path == "/" and path not in sp.served:
                sp.served.add(path)
                await route.fulfill(body=assets.document, content_type=HTML_CONTENT_TYPE,
                                    headers={"Content-Security-Policy": PAGE_CSP})
            else:
                sp.refuse(("navigation to " if req.is_navigation_request() else "request to ") + req.url[:120])
                await route.abort("blockedbyclient")

        async def route_ws(ws):
            sp.refuse("WebSocket " + ws.url[:120])
            await ws.close()

        def console(msg):
            # the browser's own report of what the page's policy refused, in whichever frame
            if sp.sketch is not None and ("Content Security Policy" in msg.text or "Trusted Type" in msg.text):
                sp.refuse("refused by the page's policy: " + msg.text[:160])

        await context.route("**/*", route)
        await context.route_web_socket("**/*", route_ws)
        context.on("page", lambda p: (sp.refuse("popup"), asyncio.ensure_future(p.close())) if p != page else None)
        page.on("dialog", lambda d: (sp.refuse(f"dialog {d.type}"), asyncio.ensure_future(d.dismiss())))
        page.on("crash", lambda _: sp.lost("page crashed (out of memory?)", crashed=True))
        self.browser.on("disconnected", lambda _: sp.lost("browser disconnected"))
        page.on("console", console)
        # New realms are refused in the page (guard.js); the browser reports any that appear anyway.
        page.on("frameattached", lambda f: sp.refuse(f"a new realm: frame {f.url[:80] or 'about:blank'}"))
        page.on("worker", lambda w: sp.refuse(f"a new realm: worker {w.url[:80]}"))
        page.on("framenavigated", lambda f: sp.refuse(f"navigation to {f.url[:120]}") if f == page.main_frame else None)
        try:
            sp.cdp = await context.new_cdp_session(page)
            sp.cdp.on("Runtime.bindingCalled", lambda event: sp.on_report(event))
            await give_page_scripts(sp.cdp, assets.scripts)
            sp.frame_id = (await sp.cdp.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
            await self._load(sp)
        except BaseException:
            await sp.close()
            raise
        return sp

    async def _load(self, sp: SandboxPage) -> None:
        """A new document in the page: p5 and p5.brush loaded, the guard first, history emptied."""
        sp.new_document()
        await sp.page.goto(PAGE_ORIGIN + "/", wait_until="load")
        # Only this document is left in the page's history: nothing to go back to, no count of
        # earlier documents (history.length) for a sketch to read.
        await sp.cdp.send("Page.resetNavigationHistory")
        if not await sp.page.evaluate("() => !!(window.__salon && window.__salon.ready) && history.length === 1"):
            errors = await sp.page.evaluate("() => (window.__salon && window.__salon.errors) || []")
            raise RuntimeError(f"sandbox page did not load p5/p5.brush/ses or lost its report channel: {errors[:3]}")
        # A world of its own over this document's DOM, with builtins no sketch has touched.
        world = await sp.cdp.send("Page.createIsolatedWorld", {"frameId": sp.frame_id, "worldName": "salon-capture"})
        sp.capture_world = world["executionContextId"]
        sp.loading = False

    async def _next_document(self, sp: SandboxPage) -> SandboxPage:
        """The same page with a new document, or a new page if it will not load (a sketch's
        unload handler that never returns, a renderer that died)."""
        try:
            await asyncio.wait_for(self._load(sp), 15)
            return sp
        except Exception:
            await sp.close(2)
            return await self._new_page()

    def reuse(self, sp: SandboxPage, clean: bool) -> bool:
        """After a sketch: True when its page serves the next one (its next document loading in the
        warm queue), which it does only after a sketch that finished clean; False when the caller
        is to close it, with its renderer process."""
        sp.sketches += 1
        sp.loading = True  # from here on, what the page does is the judged sketch's, and refused unreported
        if not (clean and not self.dead and sp.sketches < self.r.config.sketches_per_page):
            return False
        self.warm.append(asyncio.ensure_future(self._next_document(sp)))
        return True

    async def take(self) -> SandboxPage:
        if not self.warm:
            self._refill()
        task = self.warm.pop(0)
        try:
            return await task
        finally:
            self._refill()

    async def close(self) -> None:
        self.dead = True
        for task in self.warm:
            task.cancel()
        for task in self.warm:
            try:
                page = await task
                await page.close()
            except BaseException:
                pass
        self.warm = []
        if self.browser is not None:
            try:
                await asyncio.wait_for(self.browser.close(), 10)
            except Exception:
                pass
