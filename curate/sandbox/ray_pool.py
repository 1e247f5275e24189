"""The render pool on Ray: actors anywhere on a Ray cluster, each owning a Renderer (its browsers).

    pool = RayRenderPool(RenderConfig(browsers=1), actors=4, address="local")   # or "host:6379", "auto"
    future = pool.submit(code, seed)           # concurrent.futures.Future[RenderResult], at once
    results = pool.render_many(items)          # input order
    pool.close()

    salon render --ray local sketches/*.js     # the command line (salon.apps.cmd_render)

Why Ray: once rendering outgrows one machine (one render keeps ~1.8 cores busy for 1-7 s, a
64-rollout GRPO step needs far more cores than a GPU node has), Ray is what RL stacks already
use to spread rollout work over a cluster; `benchmarks/bench_render_ray.py` measures its
overhead and holds the sizing plan.

How: each actor is an asyncio Ray actor with one `Renderer` started on its own loop, so it
renders `browsers x pages_per_browser` sketches at a time and queues the rest. The driver sends
each request to the live actor with the fewest requests in flight (least loaded, ties to the one
that rendered least). An actor that dies (its process killed, its node lost, its browsers unable
to start) fails every request it held with a RayActorError; those samples resolve as
`RenderResult.infra(...)` (render_unavailable, never a violation, never a bad painting), the
actor is marked dead and a fresh one takes its slot at the next submit. A request that never
answers resolves as infra after `deadline_s`.

`address="local"` starts a private local cluster (`ray.init(num_cpus=...)`) that `close()` shuts
down; any other address joins an existing cluster, whose nodes need salon, Chromium and the npm
assets installed (./setup.sh) exactly as a local machine does.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

from salon.curate.sandbox.futures import render_many, resolve, watchdog
from salon.curate.sandbox.render import RenderConfig, RenderResult
from salon.pool.errors import ConfigError, SetupError

log = logging.getLogger(__name__)


class RenderActor:
    """The actor's body (wrapped with ray.remote at pool start): one Renderer on the actor's loop."""

    def __init__(self, config: RenderConfig):
        self.config = config
        self.renderer = None
        self.failed: str | None = None
        self._starting = None

    async def _ensure(self) -> None:
        import asyncio

        from salon.curate.sandbox.render import Renderer

        if self.renderer is not None or self.failed:
            return
        if self._starting is None:  # concurrent first calls wait for one start
            self._starting = asyncio.ensure_future(self._start(Renderer))
        await self._starting

    async def _start(self, renderer_cls) -> None:
        try:
            renderer = renderer_cls(self.config)
            await renderer.start()
            self.renderer = renderer
        except Exception as e:  # no browser on this node: every request is infrastructure-unavailable
            self.failed = f"{type(e).__name__}: {e}"

    async def ready(self) -> dict:
        await self._ensure()
        return {"pid": os.getpid(), "failed": self.failed, "node": _node_id()}

    async def render(self, code, seed: int, timeout_s):
        await self._ensure()
        if self.renderer is None:
            return RenderResult.infra(f"render_unavailable: actor's renderer could not start: {self.failed}")
        try:
            return await self.renderer.render(code, seed, timeout_s)
        except Exception as e:  # the sandbox promises not to raise; keep the promise across Ray too
            return RenderResult.infra(f"render_unavailable: actor error: {type(e).__name__}: {e}")

    async def close(self) -> None:
        if self.renderer is not None:
            await self.renderer.close()
            self.renderer = None


def _node_id() -> str:
    import ray

    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:
        return ""


@dataclass
class _Slot:
    handle: object
    index: int
    generation: int = 0
    inflight: int = 0
    rendered: int = 0
    dead: str | None = None  # why, once its actor died
    info: dict = field(default_factory=dict)


class RayRenderPool:
    """`actors` Ray actors of `config`; least-loaded dispatch; dead actors replaced (module doc)."""

    def __init__(self, config: RenderConfig | None = None, actors: int = 0, address: str = "local",
                 cpus_per_actor: float = 2.0, local_cpus: int = 0, deadline_s: float | None = None,
                 wait_ready: bool = True):
        problems = []
        if actors < 0:
            problems.append(f"actors={actors}: 0 (one per {cpus_per_actor:g} cluster CPUs) or more")
        if cpus_per_actor <= 0:
            problems.append(f"cpus_per_actor={cpus_per_actor}: must be positive")
        if problems:
            raise ConfigError(problems, "Ray render pool")
        try:
            import ray
        except ImportError as e:
            raise SetupError(f"the Ray render pool needs ray ({e}): pip install 'salon[ray]'") from None
        self._ray = ray
        self.config = config or RenderConfig(browsers=1)
        self.cpus_per_actor = cpus_per_actor
        self.deadline_s = deadline_s or 4 * self.config.timeout_s + 120
        self._owns_ray = False
        if not ray.is_initialized():
            if address == "local":
                ray.init(num_cpus=local_cpus or os.cpu_count() or 1, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
                self._owns_ray = True
            else:
                try:
                    ray.init(address=address, log_to_driver=False, configure_logging=False)
                except Exception as e:
                    raise SetupError(f"cannot join the Ray cluster at {address!r}: {e}. Start one with "
                                     "`ray start --head` (or pass --ray local)") from None
        cluster_cpus = ray.cluster_resources().get("CPU", 1.0)
        self.n = actors or max(1, int(cluster_cpus // cpus_per_actor))
        self._actor_cls = ray.remote(RenderActor).options(num_cpus=cpus_per_actor, max_restarts=0,
                                                          max_concurrency=1000)
        self._lock = threading.Lock()
        self._slots = [self._spawn(i) for i in range(self.n)]
        self.replaced = 0
        self.unavailable = 0
        if wait_ready:
            self.wait_ready()

    # ---- actors -----------------------------------------------------------------------------
    def _spawn(self, index: int, generation: int = 0) -> _Slot:
        handle = self._actor_cls.remote(self.config)
        return _Slot(handle=handle, index=index, generation=generation)

    def wait_ready(self, timeout_s: float = 300.0) -> list[dict]:
        """Start every actor's browsers now (so the first batch does not pay for it)."""
        infos = []
        for slot in list(self._slots):
            try:
                slot.info = self._ray.get(slot.handle.ready.remote(), timeout=timeout_s)
            except Exception as e:
                slot.info = {"failed": f"{type(e).__name__}: {e}"}
            infos.append(slot.info)
        failed = [i for i in infos if i.get("failed")]
        if failed and len(failed) == len(infos):
            log.warning("no Ray render actor could start its browsers: %s", failed[0]["failed"])
        return infos

    def actor_pids(self) -> list[int | None]:
        """Process id of each slot's actor (None if it is dead): for tests and accounting."""
        out = []
        for slot in self._slots:
            try:
                out.append(None if slot.dead else self._ray.get(slot.handle.ready.remote(), timeout=60)["pid"])
            except Exception:
                out.append(None)
        return out

    def actor_handle(self, index: int):
        return self._slots[index].handle

    def _pick(self) -> _Slot:
        with self._lock:
            for i, slot in enumerate(self._slots):
                if slot.dead:  # replace at once: its requests already failed, new ones need a home
                    log.warning("Ray render actor %d died (%s): starting a new one", i, slot.dead)
                    self._slots[i] = self._spawn(i, slot.generation + 1)
                    self.replaced += 1
            slot = min(self._slots, key=lambda s: (s.inflight, s.rendered))
            slot.inflight += 1
            return slot

    def _finish(self, slot: _Slot, died: str | None) -> None:
        with self._lock:
            slot.inflight -= 1
            slot.rendered += 1
            if died and slot.dead is None and self._slots[slot.index] is slot:
                slot.dead = died

    # ---- the RenderBackend interface ----------------------------------------------------------
    def submit(self, code: str | None, seed: int = 0, timeout_s: float | None = None) -> Future:
        fut: Future = Future()
        slot = self._pick()
        fut.salon_actor = slot.index  # which slot took it: diagnostics and tests
        try:
            ref = slot.handle.render.remote(code, int(seed), timeout_s)
            inner = ref.future()
        except Exception as e:  # the cluster itself is gone
            self._finish(slot, f"{type(e).__name__}: {e}")
            self.unavailable += 1
            resolve(fut, RenderResult.infra(f"render_unavailable: Ray submit failed: {e}"))
            return fut
        started = time.monotonic()

        def done(f: Future) -> None:
            died = None
            try:
                result = f.result()
                if not isinstance(result, RenderResult):
                    raise TypeError(f"actor answered {type(result).__name__}")
            except self._ray.exceptions.RayActorError as e:
                died = str(e).splitlines()[0][:200]
                result = RenderResult.infra(f"render_unavailable: render actor {slot.index} died: {died}",
                                            int((time.monotonic() - started) * 1000))
            except Exception as e:  # lost object, worker crash, cancelled: machinery, not the sketch
                result = RenderResult.infra(f"render_unavailable: {type(e).__name__}: {str(e)[:200]}")
            self._finish(slot, died)
            if result.unavailable:
                self.unavailable += 1
            resolve(fut, result)

        inner.add_done_callback(done)
        watchdog(fut, self.deadline_s)
        return fut

    def render_many(self, items, progress: bool = False) -> list[RenderResult]:
        return render_many(self, items, progress, desc="render (ray)")

    def close(self) -> None:
        ray = self._ray
        with self._lock:
            slots, self._slots = self._slots, []
        closing = []
        for slot in slots:
            if not slot.dead:
                try:
                    closing.append(slot.handle.close.remote())
                except Exception:
                    pass
        try:
            ray.wait(closing, num_returns=len(closing), timeout=30)
        except Exception:
            pass
        for slot in slots:
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:
                pass
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()

    def __enter__(self) -> "RayRenderPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

