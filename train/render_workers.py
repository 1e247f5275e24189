"""Render workers: long-lived processes that own the render sandbox, fed through queues.

    with RenderPool(RenderConfig(browsers=2), workers=1) as pool:
        futures = [pool.submit(code, seed) for code, seed in items]   # returns at once
        results = [f.result() for f in futures]                       # RenderResult each

Why processes: the trainer's process is busy with the GPU (generation, the judge's forward
passes, the optimiser step) and Python's GIL; a worker process runs its own asyncio loop with
one `Renderer` (a few Chromium browsers), so paintings render while the trainer does other work,
and a crash in the browser machinery never takes the trainer down.

A future always resolves to a `RenderResult`, never an exception: a worker that dies, a
request that outlives `deadline_s`, or a pool that is closed gives `RenderResult.infra(...)`,
an infrastructure failure that the reward adapter turns into a missing score (never a bad
painting). A dead worker is restarted on the next submit.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing as mp
import os
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future

from salon.curate.sandbox.render import RenderConfig, RenderResult
from salon.curate.sandbox.futures import resolve, watchdog

log = logging.getLogger(__name__)

_STOP = None
_ORPHANED = "orphaned"  # the parent is gone or SIGTERM came: close the browsers and exit


def _worker_main(config: RenderConfig, requests, results, parent: int, cores: frozenset[int] | None = None) -> None:
    """Worker process: one asyncio loop, one Renderer, requests rendered concurrently; on `cores`
    when given (its browsers inherit them).

    The worker ends its browsers itself when the pool says stop, when it is sent SIGTERM, or
    when its parent (the trainer) is gone however it went: a trainer killed with SIGTERM or
    SIGKILL runs none of its own cleanup, and a daemon process outlives a parent that did not
    exit normally, so without this its Chromium processes would go on drawing for nobody."""
    import asyncio
    import signal

    from salon.curate.sandbox.render import Renderer

    # a session of its own, so a Ctrl-C in the terminal reaches the trainer alone, which closes the pool;
    # before, the worker and its browsers took the keystroke too and printed tracebacks over the trainer's message
    os.setsid()
    if cores:  # before any browser starts: every Chromium process inherits the mask
        os.sched_setaffinity(0, cores)

    async def serve():
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue = asyncio.Queue()

        def post(item) -> None:
            try:
                loop.call_soon_threadsafe(inbox.put_nowait, item)
            except RuntimeError:  # the loop is already closed: the worker is ending anyway
                pass

        def read_requests() -> None:  # a thread, not the loop's executor: asyncio.run would wait on it
            while True:
                try:
                    item = requests.get()
                except (EOFError, OSError):
                    item = _STOP
                post(item)
                if item is _STOP:
                    return

        def watch_parent() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            post(_ORPHANED)

        loop.add_signal_handler(signal.SIGTERM, inbox.put_nowait, _ORPHANED)
        async with Renderer(config) as renderer:
            results.put(("ready", renderer.browsers * renderer.pages))  # its sketches in flight at once
            threading.Thread(target=read_requests, daemon=True, name="salon-render-requests").start()
            threading.Thread(target=watch_parent, daemon=True, name="salon-render-parent").start()

            async def one(rid, code, seed, timeout_s):
                try:
                    res = await renderer.render(code, seed, timeout_s)
                except Exception as e:  # the sandbox promises not to raise; keep the promise here too
                    res = RenderResult.infra(f"render_unavailable: worker error: {type(e).__name__}: {e}")
                results.put((rid, res))

            tasks = set()
            while True:
                item = await inbox.get()
                if item is _STOP or item is _ORPHANED:
                    break
                task = asyncio.create_task(one(*item))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if item is _ORPHANED:  # nobody will read the results: stop drawing now
                for task in tasks:
                    task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        # leaving the `async with` closed every browser

    try:
        asyncio.run(serve())
    except Exception as e:  # browser could not start at all: say so, the pool answers infra
        results.put(("failed", f"{type(e).__name__}: {e}"))


class _Worker:
    """One worker process and what it was handed: `pending` (request id -> future) until each answer
    comes back; `on_change` runs after every answer and when the worker fails, so the pool can hand
    it (or another) the next request."""

    def __init__(self, ctx, config: RenderConfig, on_result, on_change, cores: frozenset[int] | None = None):
        self.requests = ctx.Queue()
        self.results = ctx.Queue()
        self.process = ctx.Process(target=_worker_main, args=(config, self.requests, self.results, os.getpid(), cores),
                                   daemon=True, name="salon-render")
        self.process.start()
        self.pending: dict[int, Future] = {}
        self.lock = threading.Lock()
        self.failed: str | None = None
        self.slots = 1  # sketches it renders at once: its browsers x pages, once it says it is ready
        self._on_result, self._on_change = on_result, on_change
        self.reader = threading.Thread(target=self._read, daemon=True, name="salon-render-reader")
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                rid, payload = self.results.get(timeout=1.0)
            except queue.Empty:
                if not self.process.is_alive():
                    self._fail_all(f"render worker exited (code {self.process.exitcode})")
                    return
                continue
            except (EOFError, OSError):
                self._fail_all("render worker queue closed")
                return
            if rid == "ready":
                self.slots = max(1, int(payload))
                self._on_change()
                continue
            if rid == "failed":
                self._fail_all(f"render worker could not start: {payload}")
                return
            with self.lock:
                fut = self.pending.pop(rid, None)
            if fut is not None and resolve(fut, payload):
                self._on_result(payload)
            self._on_change()

    def _fail_all(self, reason: str) -> None:
        self.failed = reason
        with self.lock:
            pending, self.pending = self.pending, {}
        for fut in pending.values():
            resolve(fut, RenderResult.infra(f"render_unavailable: {reason}"))
        self._on_change()

    @property
    def alive(self) -> bool:
        return self.failed is None and self.process.is_alive()

    @property
    def free(self) -> int:
        """Requests it can start now (0 when it is down)."""
        return self.slots - len(self.pending) if self.alive else 0

    def submit(self, rid: int, code, seed: int, timeout_s: float | None, fut: Future) -> None:
        with self.lock:
            self.pending[rid] = fut
        self.requests.put((rid, code, int(seed), timeout_s))

    def close(self, wait_s: float = 30.0) -> None:
        try:
            self.requests.put(_STOP)
        except (OSError, ValueError):
            pass
        self.process.join(wait_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)
        self._fail_all("render pool closed")


class RenderPool:
    """`workers` processes, each with a Renderer of `config`. Requests wait here and go, one at a time,
    to the worker with the most free slots (browsers x pages) whenever one has a slot: bound
    late, so a worker that drew light paintings takes more of them while another is still on a heavy
    one (handed out in turns at submission, 64 paintings on 4 workers wait for the worker whose 16 are
    heaviest).
    With `trainer_cores` N, the workers and their browsers run on this process's CPUs but its first N,
    which the trainer keeps: where Chromium would take every core, the judge's pre-processing and
    kernel launches wait for one (the pairwise judge ran 1.30-1.49 s per 64 comparisons beside 16
    busy browsers on an H200's 16 cores, 1.17-1.2 s alone)."""

    def __init__(self, config: RenderConfig | None = None, workers: int = 1, deadline_s: float | None = None,
                 trainer_cores: int = 0):
        self.config = config or RenderConfig()
        self.n = max(1, workers)
        self.cores = render_cores(trainer_cores)
        # a request that never comes back (wedged worker) still resolves: infra, after the deadline
        self.deadline_s = deadline_s or 4 * self.config.timeout_s + 60
        self._ctx = mp.get_context("spawn")  # never fork a process that holds CUDA or torch threads
        self._workers: list[_Worker] = []
        self._waiting: deque = deque()  # (request id, code, seed, timeout_s, future) no worker has yet
        self._ids = itertools.count()
        self._lock = threading.RLock()  # a worker's answer hands out the next request under it
        self.rendered = 0
        self.unavailable = 0

    def __enter__(self) -> "RenderPool":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        with self._lock:
            if not self._workers:
                self._workers = [self._spawn() for _ in range(self.n)]

    def _spawn(self) -> _Worker:
        return _Worker(self._ctx, self.config, self._count, self._hand_out, self.cores)

    def _count(self, result: RenderResult) -> None:
        self.rendered += 1
        self.unavailable += bool(result.unavailable)

    def submit(self, code: str | None, seed: int = 0, timeout_s: float | None = None) -> Future:
        """Start rendering as soon as a worker has a slot; the future resolves to a RenderResult (infra on
        any failure)."""
        self.start()
        fut: Future = Future()
        watchdog(fut, self.deadline_s)  # from now: waiting here counts against the deadline too
        with self._lock:
            self._restart_dead()
            self._waiting.append((next(self._ids), code, seed, timeout_s, fut))
        self._hand_out()
        return fut

    def _restart_dead(self) -> None:
        """On a submit, never from a failure itself: a worker that cannot start is not respawned in a loop."""
        for slot, worker in enumerate(self._workers):
            if not worker.alive:
                log.warning("render worker %d is down (%s): restarting it", slot, worker.failed)
                self._workers[slot] = self._spawn()  # first: what closing the old one fails over goes here
                worker.close(1)

    def _hand_out(self) -> None:
        """Each waiting request to the worker with the most free slots, while one has a slot; with no
        worker alive, what waits fails (infra) rather than waiting out its deadline."""
        with self._lock:
            while self._waiting:
                rid, code, seed, timeout_s, fut = self._waiting[0]
                if fut.done():  # the deadline came first
                    self._waiting.popleft()
                    continue
                if not any(w.alive for w in self._workers):
                    if not self._workers:
                        return  # closed: close() answers what waits
                    reasons = sorted({w.failed or "exited" for w in self._workers})
                    for *_, waiting in self._waiting:
                        resolve(waiting, RenderResult.infra(f"render_unavailable: no render worker alive "
                                                            f"({'; '.join(reasons)})"))
                    self._waiting.clear()
                    return
                worker = max(self._workers, key=lambda w: w.free)
                if worker.free <= 0:
                    return  # the next answer hands out the next request
                self._waiting.popleft()
                worker.submit(rid, code, seed, timeout_s, fut)

    def close(self) -> None:
        with self._lock:
            workers, self._workers = self._workers, []
            waiting, self._waiting = self._waiting, deque()
        for *_, fut in waiting:
            resolve(fut, RenderResult.infra("render_unavailable: render pool closed"))
        for w in workers:
            w.close()


def render_cores(trainer_cores: int) -> frozenset[int] | None:
    """The CPUs render workers run on: this process's allowed CPUs but the first `trainer_cores`;
    None (no mask) for 0, where the OS cannot pin, or where too few would be left (a log line says so)."""
    if trainer_cores <= 0 or not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) - trainer_cores < 1:
        log.warning("render.trainer_cores=%d leaves no core of this process's %d to the render workers: they "
                    "run on all of them", trainer_cores, len(allowed))
        return None
    return frozenset(allowed[trainer_cores:])
