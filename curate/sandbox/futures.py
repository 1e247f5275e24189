"""Futures of RenderResults, as every render backend hands them out: resolved once whoever answers
first, resolved as render_unavailable when nobody answers in time, and waited for in input order.

    fut = Future(); watchdog(fut, 60)          # infra after 60 s unless answered
    resolve(fut, result)                       # False where a watchdog or close came first
    results = render_many(backend, [(code, seed), ...], progress=True)

Used by the local backend (backend.py), the Ray pool (ray_pool.py), the trainer's render workers
and the environment client; it stands on render.py only.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, InvalidStateError

from salon.curate.sandbox.render import RenderResult


def render_many(backend, items, progress: bool = False, desc: str = "render") -> list[RenderResult]:
    """Submit everything at once, wait for all; results in input order. For any backend."""
    items = list(items)
    futures = [backend.submit(code, seed) for code, seed in items]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(futures), desc=desc, unit="sketch", dynamic_ncols=True)
        for f in futures:
            f.add_done_callback(lambda _: bar.update(1))
    try:
        return [f.result() for f in futures]
    finally:
        if bar is not None:
            bar.close()


def resolve(fut: Future, result: RenderResult) -> bool:
    """Set the result unless someone (a callback, a watchdog, close) already did."""
    try:
        fut.set_result(result)
        return True
    except InvalidStateError:
        return False


def watchdog(fut: Future, deadline_s: float) -> None:
    """Resolve `fut` as an infrastructure failure unless something answers within `deadline_s`."""
    timer = threading.Timer(deadline_s, resolve, (fut, RenderResult.infra(
        f"render_unavailable: no answer within {deadline_s:g} s")))
    timer.daemon = True
    timer.start()
    fut.add_done_callback(lambda _: timer.cancel())
