"""Where sketches get rendered: one small interface over the local sandbox, a Ray cluster, or a
remote OpenEnv environment, all answering with the same `RenderResult`.

    backend = open_backend(BackendConfig(backend="ray", address="local", actors=2), RenderConfig())
    future = backend.submit(code, seed)          # concurrent.futures.Future[RenderResult], at once
    results = backend.render_many([(code, seed), ...], progress=True)   # input order
    backend.close()

The contract every backend keeps, the sandbox's own: a future always resolves to a
`RenderResult` and never raises; a failure of the machinery (a browser, a worker, an actor, a
server that died or never started) is `RenderResult.infra(...)` (`unavailable=True`, no
violations), which the reward turns into a missing score, never a bad painting.

Backends:
    local   LocalRenderBackend: one Renderer on an asyncio loop in a thread of this process
    ray     salon.curate.sandbox.ray_pool.RayRenderPool: Ray actors, each owning a Renderer
    env     salon.train.env.client.EnvRenderBackend: steps of a `salon env serve` server
            (lives in train: it speaks the environment's protocol, which sits above curate)
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Annotated, Iterable, Literal, Protocol, runtime_checkable

from salon.curate.sandbox.futures import render_many, resolve
from salon.curate.sandbox.render import RenderConfig, RenderResult, Renderer
from salon.pool.field_checks import at_least, field_problems, positive, raise_problems

BACKENDS = ("local", "ray")


@runtime_checkable
class RenderBackend(Protocol):
    def submit(self, code: str | None, seed: int = 0, timeout_s: float | None = None) -> Future:
        """Start rendering; the future resolves to a RenderResult (infra on any failure)."""
        ...

    def render_many(self, items: Iterable[tuple[str | None, int]], progress: bool = False) -> list[RenderResult]:
        ...

    def close(self) -> None:
        ...


@dataclass
class BackendConfig:
    backend: Literal[BACKENDS] = "local"
    address: str = "local"  # ray: a cluster address (ray://host:10001, host:6379, auto) or local
    # ray: actors (each owns RenderConfig.browsers browsers); 0 = one per 2 cluster CPUs
    actors: Annotated[int, at_least(0), "0 = one per two cluster CPUs"] = 0
    cpus_per_actor: Annotated[float, positive] = 2.0  # ray: CPUs reserved per actor (one SwiftShader render keeps ~1.8 busy)
    # ray, address=local: CPUs the local cluster offers; 0 = all of this machine
    local_cpus: Annotated[int, at_least(0), "0 = all"] = 0

    def __post_init__(self):
        p = field_problems(self)
        if self.backend == "ray" and not self.address:
            p.append("address is empty: give a Ray address (host:6379, ray://host:10001, auto) or local")
        raise_problems("render backend", p)


def open_backend(config: BackendConfig, render: RenderConfig | None = None) -> RenderBackend:
    """A started backend of the configured kind."""
    if config.backend == "ray":
        from salon.curate.sandbox.ray_pool import RayRenderPool  # here: Ray is an optional extra

        return RayRenderPool(render, actors=config.actors, address=config.address,
                             cpus_per_actor=config.cpus_per_actor, local_cpus=config.local_cpus)
    return LocalRenderBackend(render)


class LocalRenderBackend:
    """A Renderer on its own asyncio loop in a daemon thread of this process.

    For callers that are not asyncio code, or whose loop must not be blocked by browser work
    (the environment server's request loop, the CLI): `submit` is thread-safe and returns at once.
    A renderer that cannot start answers every submit with render_unavailable.
    """

    def __init__(self, config: RenderConfig | None = None):
        self.config = config or RenderConfig()
        self._loop = asyncio.new_event_loop()
        self._renderer: Renderer | None = None
        self._failed: str | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="salon-render-loop")
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            renderer = Renderer(self.config)
            self._loop.run_until_complete(renderer.start())
            self._renderer = renderer
        except Exception as e:  # no browser: every render is infrastructure-unavailable
            self._failed = f"{type(e).__name__}: {e}"
        self._ready.set()
        self._loop.run_forever()

    def submit(self, code: str | None, seed: int = 0, timeout_s: float | None = None) -> Future:
        fut: Future = Future()
        if self._failed or self._renderer is None or self._loop.is_closed():
            resolve(fut, RenderResult.infra(f"render_unavailable: renderer could not start: {self._failed}"))
            return fut

        async def one():
            try:
                return await self._renderer.render(code, seed, timeout_s)
            except Exception as e:  # the sandbox promises not to raise; keep the promise here too
                return RenderResult.infra(f"render_unavailable: {type(e).__name__}: {e}")

        inner = asyncio.run_coroutine_threadsafe(one(), self._loop)
        inner.add_done_callback(lambda f: resolve(fut, f.result() if not f.cancelled() and f.exception() is None
                                                  else RenderResult.infra("render_unavailable: renderer closed")))
        return fut

    def render_many(self, items, progress: bool = False) -> list[RenderResult]:
        return render_many(self, items, progress)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._renderer is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._renderer.close(), self._loop).result(30)
            except Exception:
                pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> "LocalRenderBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
