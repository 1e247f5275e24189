"""The render sandbox: p5.js + p5.brush sketches -> PNG and a gate verdict, in headless Chromium.

    salon render examples/*.js --json          # the command line (salon.apps.cmd_render)

    from salon.curate.sandbox.render import Renderer, RenderConfig, render_sketches
    async with Renderer(RenderConfig()) as renderer:
        result = await renderer.render(code, seed=0)
    results = render_sketches([code_a, code_b], seeds=0)          # sync helper

Design: a few long-lived browsers (SwiftShader serialises inside one browser's GPU process,
so parallelism comes from browsers, not pages; one render already keeps about 1.8 cores busy,
so the default is one browser per two cores), each in a network namespace of its own
(isolation.py). Every sketch gets a fresh document, served with a Content Security Policy that
holds in every realm and makes the document's origin opaque, so no storage exists to leave
anything in (assets.py). The sketch's source is checked against its world before a browser is
touched (gate.py, names.py, call_shapes.py), then handed to the page as a string and evaluated there in an SES
compartment whose only globals are a frozen facade of p5.brush and p5's helpers that do not paint
(page/facade.js, page/start.js). A page (browser context and renderer process: pages.py) whose
sketch finished with no violation and nothing refused serves the next sketch in a new document,
its history reset (`sketches_per_page`); any other sketch's page is closed with its process, and
a sketch that timed out, crashed or held too much memory takes its browser along. Pages are
pre-warmed (p5 and p5.brush already parsed: the browser runs the page's scripts in each new
document, given once per page) while other sketches render, so a sketch's time is its own; every
request except the empty document, served once, is refused and reported; the guard's violations
and its "done" arrive over a binding the sketch cannot reach (pages.py), and the painting is then
read in an isolated world (capture.py) and by OCR (ocr.py), within the sketch's slot. A sketch
never raises: bad code gets violation codes (gate.py); a renderer that dies under it is retried
once in a fresh browser, and a browser that fails a known-good sketch too gets
`render_unavailable`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from typing import Annotated, Literal

from salon.curate.sandbox import gate, names, ocr
from salon.curate.sandbox.assets import page_assets
from salon.curate.sandbox.capture import Painting, read_painting
from salon.curate.sandbox.chromium import BASE_CHROMIUM_ARGS, find_chromium
from salon.curate.sandbox.gpu import GPU_FLAG_SETS, GPU_MODES, GLPath, choose_gl_path
from salon.curate.sandbox.gpu_watch import WATCH_EVERY_S
from salon.curate.sandbox.isolation import ISOLATION_MODES, Isolation, resolve_isolation
from salon.curate.sandbox.pages import SandboxBrowser, SandboxPage, pids_with_marker
from salon.pool.errors import ConfigError, SetupError
from salon.pool.field_checks import Range, at_least, field_problems, positive, raise_problems
from salon.pool.paint import paint_fraction

# The GPU path's arrangement, measured in steady state by bench_render.py --gpu on an H200 host with
# 16 cores (benchmarks/results/bench_render_gpu_h200.json, bench_render_gpu_arrangements_h200.json):
# one browser of one page per core, 7.5-8.4 heavy renders/s on vulkan-canvas; 16x2 was 8.5-8.9 in two
# runs, 24x1, 32x1, 24x2, 8x2, 8x4, 4x4 and 4x8 slower. The card is busy all the time there (about
# 120 ms per heavy painting, as much as one painting alone needs), so more pages only queue.
GPU_PAGES = 1


# What a crash retry renders when the sketch died twice: if this cannot render, the browser is at fault.
PROBE_SKETCH = """function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(0, 0, 120);
}
"""


def gpu_browsers() -> int:
    return os.cpu_count() or 1


@dataclass
class RenderConfig:
    size: Annotated[int, Range(64, 4096), "pixels"] = 600  # canvas is forced to size x size at pixel density 1
    timeout_s: Annotated[float, positive] = 45.0  # hard limit per sketch, page load excluded (heavy paintings take 10+ s on 2 cores)
    # draw() frames before the painting is read (a sketch without draw() is read after setup);
    # noLoop() ends sooner. Frames run back to back, not at 60 Hz: a sketch that paints a few strokes
    # a frame for 120 frames takes well under a second on top of its setup.
    frames: Annotated[int, Range(1, 100_000)] = 120
    # ...and frames stop after this much drawing (or half of timeout_s, if less), the painting read
    # as far as it got: a draw() that repaints everything each frame, never calling noLoop, is read
    # well inside the timeout
    frame_time_s: Annotated[float, positive] = 10.0
    # 0 = auto: one per two cores on SwiftShader (one render keeps ~1.8 busy), one per core on the GPU
    browsers: Annotated[int, at_least(0), "0 = one per two cores"] = 0
    # sketches in flight per browser; 0 = auto: 1 on SwiftShader (it queues them), GPU_PAGES on the GPU
    pages_per_browser: Annotated[int, at_least(0), "0 = auto"] = 0
    recycle_after: Annotated[int, at_least(1)] = 200  # renders before a browser is replaced (keeps memory flat)
    render_rejects: bool = False  # render sketches the static gate already rejected
    chromium: str = ""  # path; default $SALON_CHROMIUM, then chromium on PATH
    node_modules: str = ""  # where p5 and p5.brush live; default $SALON_NODE_MODULES, then ./node_modules
    gpu: Literal[GPU_MODES] = "auto"  # auto: the node's GPU when Chromium can draw on it, else SwiftShader; on; off (gpu.py)
    # WebGL bytes one sketch may hold (textures, buffers, drawing buffers): the card is shared
    gpu_memory_mb: Annotated[int, Range(16, 65536)] = 1024
    # auto: a network namespace where one can be made, else browser flags; netns; browser-flags
    isolation: Literal[ISOLATION_MODES] = "auto"
    # GPU flag set (gpu.GPU_FLAG_SETS): "" = the first that draws; vulkan-icd = exact repeats, 2D on the CPU
    gl: Annotated[Literal[("", *GPU_FLAG_SETS)], "'' = the first that draws"] = ""
    # Sketches one page renders in turn, each in a new document, while each finishes with no
    # violation and no refusal; 1 = a new browser context and renderer process for every sketch.
    # A new context costs about three times the CPU of a new document (process start-up); on the
    # H200 reuse took the GPU path from 5.1 to 8.3 heavy renders/s (bench_render_gpu_h200.json).
    sketches_per_page: Annotated[int, at_least(1), "1 = a new context per sketch"] = 50
    # Words on the painting itself, whatever drew them (ocr.py): every image that passed the page's
    # checks is read, and writing a judge would read makes it text_label. "off" skips the reading.
    text_check: Literal[ocr.TEXT_CHECKS] = "ocr"
    # The reading's time limit per image, in CPU seconds of its thread: past it the check stops, the
    # verdict stands on what was read and `details` says what was left (ocr.py says why)
    text_check_budget_s: Annotated[float, positive] = ocr.DEFAULT_BUDGET_S
    # What the browser's GPU process may grow by during one sketch, watched from outside the page
    # (gpu_watch.py): past it, the page is killed (runtime_error). 0 = gpu_memory_mb + 1024, room
    # for p5.brush's own buffers beside everything the page's budget counts.
    gpu_process_mb: Annotated[int, at_least(0), "0 = gpu_memory_mb + 1024"] = 0

    def __post_init__(self):
        problems = field_problems(self)
        if self.gl and self.gpu == "off":
            problems.append(f"gl={self.gl!r} names a GPU flag set, but gpu=off, and no flag set is used while the "
                            "gpu is off: use gpu=auto or on, or drop gl")
        raise_problems("RenderConfig", problems)

    @property
    def frame_budget_s(self) -> float:
        """How long draw() frames may run before the painting is read (page/start.js)."""
        return min(self.frame_time_s, self.timeout_s / 2)

    @property
    def gpu_process_limit_mb(self) -> int:
        """What the browser's GPU process may grow by during one sketch (gpu_process_mb; 0 = auto)."""
        return self.gpu_process_mb or self.gpu_memory_mb + 1024

    @property
    def browser_count(self) -> int:
        """Browsers on SwiftShader (the GPU path's own count: `arrangement`)."""
        return self.browsers or max(1, (os.cpu_count() or 1) // 2)

    def arrangement(self, gpu: bool) -> tuple[int, int]:
        """(browsers, pages per browser) on the chosen GL path. Tabs of one browser draw side by
        side on a GPU but queue behind SwiftShader's one GPU process (bench_render.py --gpu)."""
        if gpu:
            return self.browsers or gpu_browsers(), self.pages_per_browser or GPU_PAGES
        return self.browser_count, self.pages_per_browser or 1


@dataclass
class RenderResult:
    ok: bool
    violations: list[str] = field(default_factory=list)
    paint_fraction: float | None = None
    render_ms: int = 0
    js_errors: list[str] = field(default_factory=list)
    png: bytes | None = None
    unavailable: bool = False  # infrastructure failure: not the sketch's fault, never a score
    details: list[str] = field(default_factory=list)  # what the guard saw, for people
    gl: str = ""  # the GL path that drew it: "swiftshader" or the GPU flag set ("" when no browser ran)
    isolation: str = ""  # how the browser was kept off the network: "netns" or "browser-flags" (isolation.py)
    ocr_ms: int | None = None  # time the text check took on this image (None: not read)

    @classmethod
    def infra(cls, reason: str, render_ms: int = 0) -> RenderResult:
        return cls(ok=False, unavailable=True, render_ms=render_ms, js_errors=[reason])


@dataclass
class Drawn:
    """What a browser gave for one sketch, before the image is read (its paint fraction, the text
    check): `Renderer.read_drawn` makes the RenderResult once the browser is free for the next sketch."""
    png: bytes | None
    painting: Painting | None
    static: list[str]
    reported: list[tuple[str, str]]  # (violation code, detail) as the page and the watch reported them
    network: list[str]
    status: str
    js_errors: list[str]
    render_ms: int
    gl: str


class Renderer:
    """Renders sketches concurrently on long-lived browsers. Use as an async context manager."""

    def __init__(self, config: RenderConfig | None = None):
        self.config = config or RenderConfig()
        self._assets = page_assets(self.config)
        self._chromium = find_chromium(self.config.chromium)
        self._browsers: list[SandboxBrowser] = []
        self._capacity: asyncio.Semaphore | None = None
        self._playwright = None
        self._pw_cm = None
        self._restart_lock: asyncio.Lock | None = None
        self.gl: GLPath | None = None  # chosen at start()
        self.isolation: Isolation | None = None  # chosen at start()
        self.browsers, self.pages = self.config.arrangement(False)  # set for the chosen path at start()

    async def __aenter__(self) -> Renderer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def start(self) -> None:
        from playwright.async_api import async_playwright

        self._pw_cm = async_playwright()
        self._playwright = await self._pw_cm.start()
        self._restart_lock = asyncio.Lock()
        try:
            if self.config.text_check == "ocr":
                await asyncio.to_thread(ocr.preload)  # once per process, before the first painting waits on it
            self.isolation = resolve_isolation(self.config.isolation, self._chromium)
            self.gl = await choose_gl_path(self.config.gpu, self._playwright, self.isolation.executable,
                                           BASE_CHROMIUM_ARGS, binary=self._chromium, only=self.config.gl)
            self.browsers, self.pages = self.config.arrangement(self.gl.gpu)
            self._capacity = asyncio.Semaphore(self.browsers * self.pages)
            for _ in range(self.browsers):
                b = SandboxBrowser(self)
                await b.launch()
                self._browsers.append(b)
        except SetupError:
            await self.close()
            raise
        except Exception as e:
            await self.close()
            raise SetupError(f"could not start Chromium ({self._chromium or 'Playwright-managed'}): {e}. "
                             "Install it with `apt-get install -y chromium` or set SALON_CHROMIUM") from e

    async def close(self) -> None:
        for b in self._browsers:
            await b.close()
        self._browsers = []
        if self._pw_cm is not None:
            await self._pw_cm.__aexit__(None, None, None)
            self._pw_cm = None

    def browser_pids(self) -> list[int]:
        """Main process ids of the live browsers (Linux /proc; for memory accounting and tests)."""
        return pids_with_marker({b.marker for b in self._browsers if not b.dead})

    async def _browser_for_next(self) -> SandboxBrowser:
        while True:
            async with self._restart_lock:
                for b in self._browsers:
                    if b.dead and b.inflight == 0:
                        await b.close()
                        await b.launch()
                    elif b.renders >= self.config.recycle_after and b.inflight == 0:
                        await b.close()  # recycle: a fresh browser keeps memory flat
                        await b.launch()
                live = [b for b in self._browsers if not b.dead]
                if live:
                    return min(live, key=lambda b: (b.inflight, b.renders))
            await asyncio.sleep(0.05)  # every browser is to be replaced once its sketches in flight end

    async def render(self, code: str | None, seed: int = 0, timeout_s: float | None = None) -> RenderResult:
        """Render one sketch. Never raises for bad code; infrastructure failures come back
        as `unavailable=True` results. `timeout_s` overrides the config's for this sketch."""
        result = await self._render(code, seed, timeout_s)
        result.isolation = self.isolation.name if self.isolation else ""
        return result

    async def _render(self, code: str | None, seed: int, timeout_s: float | None) -> RenderResult:
        t0 = time.perf_counter()
        static = gate.static_violations(code)
        if static and not self.config.render_rejects:
            return RenderResult(ok=False, violations=static, render_ms=_ms(t0),
                                details=gate.static_details(code))
        timeout_s = timeout_s or self.config.timeout_s
        # A slot covers the drawing and the reading (paint fraction, OCR), though the browser is let go
        # once it has drawn: both are CPU work, and with the reading outside the slot 16 browsers drew
        # beside up to 16 text checks on 14 cores, and a 64-painting step on an H200 waited 9.15 s for
        # its paintings against 6.42 (the slowest drawing 9.3-10 s against 5.9-6.0, docs/training.md)
        async with self._capacity:
            try:
                browser = await self._browser_for_next()
            except Exception as e:
                return RenderResult.infra(f"render_unavailable: browser could not start: {e}", _ms(t0))
            drawn, crashed = await self._render_counted(browser, code, seed, static, timeout_s)
            if crashed:
                drawn = await self._after_crash(drawn, code, seed, static, timeout_s, t0)
            return await self.read_drawn(drawn)

    async def _after_crash(self, first: Drawn | RenderResult, code, seed, static, timeout_s,
                           t0: float) -> Drawn | RenderResult:
        """The renderer or the browser died under the sketch: once more, alone in a fresh browser."""
        again, crashed = await self._in_fresh_browser(code, seed, static, timeout_s)
        if not crashed:
            return again
        # Twice: the sketch's doing, unless a known-good sketch cannot render there either.
        probe, _ = await self._in_fresh_browser(PROBE_SKETCH, 0, [], timeout_s)
        probe = await self.read_drawn(probe)
        if not probe.ok:
            return RenderResult.infra("render_unavailable: the browser died under this sketch twice and failed "
                                      f"a known-good sketch too: {(probe.js_errors or [''])[0]}", _ms(t0))
        return RenderResult(ok=False, violations=gate.verdict(static, ["runtime_error"], None), render_ms=_ms(t0),
                            js_errors=again.js_errors, gl=again.gl or first.gl, details=[
                                "runtime_error: the sketch's renderer died twice, in two browsers, while a known-good "
                                f"sketch renders (out of memory, or a crash it causes): {(again.js_errors or [''])[0]}"])

    async def _render_counted(self, browser: SandboxBrowser, code, seed, static,
                              timeout_s) -> tuple[Drawn | RenderResult, bool]:
        browser.inflight += 1
        try:
            return await self._render_on(browser, code, seed, static, timeout_s)
        finally:
            browser.inflight -= 1
            browser.renders += 1

    async def _in_fresh_browser(self, code, seed, static, timeout_s) -> tuple[Drawn | RenderResult, bool]:
        """A render on a browser of its own, started for it and closed after (a crash retry)."""
        fresh = SandboxBrowser(self)
        try:
            await fresh.launch()
            return await self._render_counted(fresh, code, seed, static, timeout_s)
        except Exception as e:
            return RenderResult.infra(f"render_unavailable: a fresh browser could not start: {e}"), True
        finally:
            await fresh.close()

    async def _render_on(self, browser: SandboxBrowser, code: str, seed: int, static: list[str],
                         timeout_s: float) -> tuple[Drawn | RenderResult, bool]:
        """What this browser drew for the sketch (a RenderResult where the browser itself failed), and
        whether its renderer or the browser died under it."""
        try:
            sp = await browser.take()
        except Exception as e:  # the browser died before the sketch began: rendered again in a fresh one
            browser.dead = True
            return RenderResult.infra(f"render_unavailable: page could not open: {e}"), True
        t0 = time.perf_counter()
        sp.sketch = code or ""  # None (render_rejects) is an empty sketch: no_sketch, nothing else
        status, errors, painting, extra = "error", [], None, []
        watch = asyncio.ensure_future(self._watch_gpu(browser, sp, self.config.gpu_process_limit_mb))
        try:
            # start() returns once the sketch's top level has run; the guard's "done" comes over its
            # binding (pages.py). The source is a string literal, evaluated in a compartment (start.js).
            source = json.dumps(names.prepared(sp.sketch))
            await asyncio.wait_for(sp.cdp.send("Runtime.evaluate", {
                "expression": f"window.__salon.start({int(seed) & 0xFFFFFFFF}, {source})"}), timeout_s)
            left = lambda: max(0.1, timeout_s - (time.perf_counter() - t0))  # noqa: E731
            done = await asyncio.wait_for(asyncio.shield(sp.finished), left())
            status, errors = str(done.get("status")), [str(e)[:500] for e in done.get("errors", [])][:20]
            if int(done.get("sent", 0)) > len(sp.violations):
                extra.append(("runtime_error", "runtime_error: the page's report lost some of what it had sent"))
            # The read waits for the GPU process to finish drawing (SwiftShader draws behind the
            # page's back): it is part of the sketch's time, not extra.
            painting = await asyncio.wait_for(read_painting(sp, self.config.size), left())
        except asyncio.TimeoutError:
            if status != "error" or not sp.finished.done():  # no "done" in time, or a painting that would not come out
                status = "timeout"
                extra.append(("timeout", f"timeout: no finished painting within {timeout_s:g} s"))
        except Exception as e:
            await asyncio.sleep(0.05)  # let a 'disconnected' event land before deciding whose fault
            if browser.dead or not browser.browser.is_connected():
                browser.dead = True
                await sp.close(2)
                return RenderResult.infra(f"render_unavailable: browser died: {e}", _ms(t0)), True
            reason = sp.killed_for or ("page crashed (out of memory?)" if sp.crashed else str(e).splitlines()[0][:300])
            status, errors = "error", [reason]
            extra.append(("runtime_error", f"runtime_error: {reason}"))
        finally:
            watch.cancel()
        render_ms = _ms(t0)
        reported = sp.violations + extra  # salon's record of what the page reported, as it happened
        network = sp.network  # the next document starts a list of its own
        png = painting.png if painting else None
        clean = status == "ok" and png and not reported and not network and not static and not sp.crashed
        if not browser.reuse(sp, clean) and not await sp.close():
            browser.dead = True  # a page that will not close means a wedged browser: replace it
        # A sketch that held the browser (a timeout: its GPU process may still be drawing it), crashed
        # its renderer or was refused for the memory it held takes its browser with it: the next
        # sketch starts in a fresh one, its GPU process included, never behind what this one left.
        if status == "timeout" or sp.crashed or sp.killed_for or any("memory budget" in d for _, d in reported):
            browser.dead = True
        return Drawn(png, painting, static, reported, network, status, errors, render_ms, browser.r.gl.name), sp.crashed

    async def read_drawn(self, drawn: Drawn | RenderResult) -> RenderResult:
        """The verdict on what a browser drew: the page's report, the paint fraction and the text check
        (a RenderResult, where the browser itself failed, as it is)."""
        if isinstance(drawn, RenderResult):
            return drawn
        d = drawn
        fraction = await asyncio.to_thread(paint_fraction, d.png) if d.png else None
        runtime = [code for code, _ in d.reported] + [n.split(":")[0] for n in d.network]
        if d.painting and not d.painting.webgl or any("WEBGL" in e for e in d.js_errors):
            runtime.append("not_webgl")
        violations = gate.verdict(d.static, runtime, fraction)
        text = None
        if d.png is not None and not violations and self.config.text_check == "ocr":
            text = await asyncio.to_thread(ocr.words, d.png, self.config.text_check_budget_s)
            if text.words:
                violations = ["text_label"]  # the only one: there were none before the reading
        no_image = d.png is None and d.status == "ok" and not violations
        if no_image:  # finished, and nothing to judge: the sketch emptied, shrank or lost its canvas
            violations = ["blank_canvas"]
        return RenderResult(
            ok=not violations and d.png is not None, violations=violations, paint_fraction=fraction,
            render_ms=d.render_ms, js_errors=d.js_errors, png=d.png,
            details=[detail for _, detail in d.reported] + d.network + (text.details() if text else [])
            + ([f"blank_canvas: {d.painting.problem if d.painting else 'no painting'}"] if no_image else []),
            gl=d.gl, ocr_ms=text.ms if text else None)

    async def _watch_gpu(self, browser: SandboxBrowser, sp: SandboxPage, limit_mb: int) -> None:
        """Kill the page when the browser's GPU process grows past limit_mb during its sketch."""
        base = await asyncio.to_thread(browser.gpu_watch.used_mb)
        if base is None:
            return  # nothing to read here (no /proc, no driver figure): the page's own budget stands alone
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            now = await asyncio.to_thread(browser.gpu_watch.used_mb)
            if now is not None and now - base > limit_mb:
                sp.killed_for = (f"GPU memory: the browser's GPU process grew by {now - base:.0f} MB during the sketch, "
                                 f"past {limit_mb} MB (RenderConfig.gpu_process_mb)")
                sp.lost(sp.killed_for)
                await sp.close(2)
                return

    async def render_many(self, items, progress: bool = False, desc: str = "render") -> list[RenderResult]:
        """Render (code, seed) pairs concurrently; results in input order."""
        items = list(items)
        bar = _progress(len(items), desc) if progress else None

        async def one(code, seed):
            result = await self.render(code, seed)
            if bar is not None:
                bar.update(1)
            return result

        try:
            return await asyncio.gather(*(one(c, s) for c, s in items))
        finally:
            if bar is not None:
                bar.close()


def render_sketches(codes: list[str | None], seeds: list[int] | int = 0, config: RenderConfig | None = None,
                    progress: bool = False) -> list[RenderResult]:
    """Synchronous helper: start a renderer, render everything, stop it."""
    seed_list = list(seeds) if isinstance(seeds, (list, tuple)) else [seeds] * len(codes)
    if len(seed_list) != len(codes):
        raise ConfigError([f"got {len(codes)} sketches but {len(seed_list)} seeds"], "render_sketches")

    async def run():
        async with Renderer(config) as renderer:
            return await renderer.render_many(zip(codes, seed_list), progress=progress)

    return asyncio.run(run())


def _ms(t0: float) -> int:
    return int((time.perf_counter() - t0) * 1000)


def _progress(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="sketch", dynamic_ncols=True)
