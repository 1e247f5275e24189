"""Ray render pool vs the local renderer: renders/s against the number of actors, same sketches.

    .venv/bin/python benchmarks/bench_render_ray.py [--actors 1 2] [--renders 8] [--repeat 2] [--json]

For each A in --actors: the local backend with A browsers, then a local Ray cluster with A
actors of one browser each (equal CPU: one browser per actor, and the cluster offers 2A CPUs as
Ray counts them, no more), both rendering the same --renders sketches (the bundled examples
that paint, round-robin, seeds 0..). Printed: renders/s of each, Ray's overhead per render
(1 - ray/local throughput; the target is under 5 %), and CPU-seconds per render measured on this
process's own tree (the browsers; for Ray also raylet, GCS and the actor processes).

Sizing plan (what the measured numbers mean for a 64-rollout GRPO step)
----------------------------------------------------------------------
A GRPO step's GPU part measured on an H200 (benchmarks/bench_train_gpu.py) is about 120 s of
generation, 1.4 s of judging and 1.3 s of optimisation: T_gpu ~ 123 s. Rendering starts when
generation returns (the reward adapter prefetches), and the judge waits for it, so rendering
adds to the step unless it finishes in a small share of T_gpu. With c = CPU-seconds per render
(printed below; ~1.8 cores busy for 1-7 s, i.e. 2-13 core-seconds, heavier sketches at the top):

    cores needed so that 64 renders take at most B seconds:   N = ceil(64 * c / B)
    but never more browsers than renders: one render cannot go faster than its own 1-7 s,
    so B >= the slowest render (~7 s) whatever N is.

    c = 4 core-s (typical):  B = 123 s (hide under a whole step)  ->  N = 3 cores
                             B = 12 s  (10 % of a step)            ->  N = 22 cores
    c = 13 core-s (heavy):   B = 12 s                              ->  N = 70 cores (~64 browsers)

Ray nodes: each actor reserves 2 CPUs for one browser, so N cores = N/2 actors; on 32-core CPU
nodes that is 1 node for the typical 10 %-of-a-step target (22 cores) and 3 nodes for heavy
sketches; at 64 rollouts there is no point past 64 browsers (128 cores, 4 nodes), where the
step's rendering time is the slowest single sketch. The script prints N for its own measured
c at both budgets. Eight GPUs generating 8 x 64 rollouts scale all of this by 8.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proctree import cpu_seconds, descendants  # noqa: E402

from salon.curate.sandbox.render import RenderConfig  # noqa: E402
from salon.curate.sandbox.backend import LocalRenderBackend  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"
STEP_GPU_S = 120 + 1.4 + 1.3
ROLLOUTS = 64


class TreeCpu:
    """CPU-seconds of this process's tree over a span, sampling often (renderers come and go)."""

    def __init__(self):
        self.last: dict[int, float] = {}
        self.start: dict[int, float] = {}
        self._stop = threading.Event()

    def _sample(self) -> None:
        for pid in descendants(os.getpid()) | {os.getpid()}:
            v = cpu_seconds(pid)
            if v is not None:
                self.start.setdefault(pid, v)
                self.last[pid] = v

    def __enter__(self):
        self._sample()
        self.start = dict(self.last)  # what ran before the span does not count
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()
        self.seconds = sum(v - self.start.get(pid, 0.0) for pid, v in self.last.items())


def sketches(n: int) -> list[tuple[str, int]]:
    good = [p for p in sorted(EXAMPLES.glob("*.js")) if "blank" not in p.name and "collapse" not in p.name]
    return [(good[i % len(good)].read_text(), i) for i in range(n)]


def timed(backend, items) -> tuple[float, float, int]:
    backend.render_many(items[:1])  # warm: first page, first actor call
    with TreeCpu() as cpu:
        t0 = time.perf_counter()
        results = backend.render_many(items)
        wall = time.perf_counter() - t0
    return wall, cpu.seconds, sum(r.ok for r in results)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--actors", type=int, nargs="+", default=[1, 2])
    p.add_argument("--renders", type=int, default=8)
    p.add_argument("--repeat", type=int, default=2, help="alternating runs of each; the best counts")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    import ray

    from salon.curate.sandbox.ray_pool import RayRenderPool

    items = sketches(a.renders)
    rows = []
    for n in a.actors:
        local = LocalRenderBackend(RenderConfig(browsers=n, timeout_s=90))
        pool = RayRenderPool(RenderConfig(browsers=1, timeout_s=90), actors=n, cpus_per_actor=2,
                             local_cpus=2 * n)
        try:  # alternate the two, best of --repeat each: the machine is shared, load comes and goes
            runs = [(timed(local, items), timed(pool, items)) for _ in range(a.repeat)]
        finally:
            local.close()
            pool.close()
        assert not ray.is_initialized()
        (lw, lc, lok), (rw, rc, rok) = min(r[0] for r in runs), min(r[1] for r in runs)
        row = {"actors": n, "renders": len(items), "local_rps": len(items) / lw, "ray_rps": len(items) / rw,
               "overhead": 1 - lw / rw, "local_cpu_per_render": lc / len(items),
               "ray_cpu_per_render": rc / len(items), "local_ok": lok, "ray_ok": rok}
        rows.append(row)
        if not a.json:
            print(f"A={n}: local {row['local_rps']:.3f} renders/s ({row['local_cpu_per_render']:.2f} CPU-s each)  "
                  f"ray {row['ray_rps']:.3f} renders/s ({row['ray_cpu_per_render']:.2f} CPU-s each)  "
                  f"overhead {row['overhead']:+.1%}  ok {lok}/{rok} of {len(items)}", flush=True)
    c = min(r["local_cpu_per_render"] for r in rows)
    plan = {"cpu_s_per_render": c,
            "cores_for_whole_step": math.ceil(ROLLOUTS * c / STEP_GPU_S),
            "cores_for_10pct_of_step": math.ceil(ROLLOUTS * c / (0.1 * STEP_GPU_S))}
    if a.json:
        print(json.dumps({"runs": rows, "plan": plan}))
    else:
        print(f"plan: {c:.2f} CPU-s per render -> {plan['cores_for_whole_step']} cores keep 64 renders under a "
              f"{STEP_GPU_S:.0f} s step, {plan['cores_for_10pct_of_step']} cores under 10 % of it "
              f"({math.ceil(plan['cores_for_10pct_of_step'] / 32)} node(s) of 32 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
