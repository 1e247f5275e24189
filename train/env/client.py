"""Clients of `salon env serve`: a typed session client, and a render backend that renders
through a remote environment (so a trainer can use a Space's browsers instead of its own).

    with PaintEnvClient("http://127.0.0.1:8000") as env:     # one websocket session
        first = env.reset(seed=7, subject="koi")             # PaintObservation: prompt, references
        done = env.step("```javascript ... ```")             # PaintObservation: reward, components, PNG

    backend = EnvRenderBackend("http://127.0.0.1:8000", sessions=4)   # salon.curate.sandbox.backend
    backend.submit(code, seed).result()                      # RenderResult, like a local render

Both ride on OpenEnv's own `GenericEnvClient` (its websocket protocol, reconnects, capacity
errors), wrapped rather than subclassed. Any failure to reach the server is an infrastructure
failure: the render backend answers `RenderResult.infra(...)`, never a bad painting.
"""

from __future__ import annotations

import base64
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from salon.curate.sandbox.render import RenderResult
from salon.curate.sandbox.futures import render_many, resolve
from salon.train.env.wire import PaintAction, PaintObservation


class PaintEnvClient:
    """One session with a painting environment server (synchronous; one websocket)."""

    def __init__(self, base_url: str, message_timeout_s: float = 900.0):
        from openenv.core.generic_client import GenericEnvClient

        # 900 s: one step renders and judges; a big judge on a busy server takes minutes
        self._client = GenericEnvClient(base_url=base_url, message_timeout_s=message_timeout_s).sync()
        self.base_url = base_url

    def reset(self, seed: int | None = None, subject: str | None = None, **kwargs) -> PaintObservation:
        args = {k: v for k, v in dict(seed=seed, subject=subject, **kwargs).items() if v is not None}
        return _observation(self._client.reset(**args))

    def step(self, reply: str, return_image: bool = True) -> PaintObservation:
        return _observation(self._client.step(PaintAction(reply=reply, return_image=return_image).model_dump()))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "PaintEnvClient":
        self._client.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _observation(result) -> PaintObservation:
    data = dict(result.observation)
    data.pop("metadata", None)
    return PaintObservation(**data, reward=result.reward, done=result.done)


def to_render_result(obs: PaintObservation) -> RenderResult:
    """The render part of a step's observation, as the sandbox's own result type."""
    if obs.render_unavailable:
        return RenderResult.infra(obs.infra_error or "render_unavailable: remote renderer failed", obs.render_ms)
    png = base64.b64decode(obs.image_png_base64) if obs.image_png_base64 else None
    return RenderResult(ok=bool(obs.gate_passed), violations=list(obs.violations), paint_fraction=obs.paint_fraction,
                        render_ms=obs.render_ms, js_errors=list(obs.js_errors), png=png)


class EnvRenderBackend:
    """A RenderBackend whose renders are steps of a remote painting environment.

    `sessions` websocket sessions (one per worker thread; keep it within the server's
    max_sessions) render concurrently. The server also judges each painting; only the render
    part comes back here (the trainer judges with its own judge and references).
    """

    def __init__(self, base_url: str, sessions: int = 4, message_timeout_s: float = 900.0):
        self.base_url, self.message_timeout_s = base_url, message_timeout_s
        self._local = threading.local()
        self._clients: list[PaintEnvClient] = []
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max(1, sessions), thread_name_prefix="salon-env-render")

    def _client(self) -> PaintEnvClient:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = PaintEnvClient(self.base_url, self.message_timeout_s)
            with self._lock:
                self._clients.append(client)
        return client

    def _render(self, code: str | None, seed: int) -> RenderResult:
        try:
            client = self._client()
            client.reset(seed=int(seed))
            return to_render_result(client.step(code or ""))
        except Exception as e:  # server down, session refused, socket dropped: infrastructure
            self._local.client = None  # a fresh session next time
            return RenderResult.infra(f"render_unavailable: environment at {self.base_url}: "
                                      f"{type(e).__name__}: {str(e)[:200]}")

    def submit(self, code: str | None, seed: int = 0, timeout_s: float | None = None) -> Future:
        fut: Future = Future()
        try:
            inner = self._pool.submit(self._render, code, seed)
        except RuntimeError as e:  # closed
            resolve(fut, RenderResult.infra(f"render_unavailable: {e}"))
            return fut
        inner.add_done_callback(lambda f: resolve(fut, f.result() if f.exception() is None else
                                                  RenderResult.infra(f"render_unavailable: {f.exception()}")))
        return fut

    def render_many(self, items, progress: bool = False) -> list[RenderResult]:
        return render_many(self, items, progress, desc="render (env)")

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        with self._lock:
            clients, self._clients = self._clients, []
        for c in clients:
            try:
                c.close()
            except Exception:
                pass
