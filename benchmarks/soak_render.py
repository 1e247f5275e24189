"""Soak the render sandbox: many renders in a row, a quarter hostile, one browser killed midway.

    .venv/bin/python benchmarks/soak_render.py              # 1,000 renders
    .venv/bin/python benchmarks/soak_render.py -n 200 --window 50

Training renders thousands of sketches an hour for days. This prints, per window of renders:
throughput, the memory of the whole browser tree (PSS summed over every process under this
one, from /proc), and verdict counts; then peak memory, whether throughput decayed, and what
happened to the sketches in flight when a browser was SIGKILLed (they must come back as
`render_unavailable`, every other sketch must get its normal verdict).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

from proctree import tree_pss_mb
from salon.curate.sandbox.render import Renderer, RenderConfig

ROOT = Path(__file__).resolve().parent.parent
GOOD = ["hibiscus_02_five_petals", "hibiscus_03_layered", "jellyfish_01_bell", "still_02_teacup",
        "mountain_02_collapse", "koi_01_pond", "still_01_pears"]
HOSTILE_TIMEOUT_S = 5.0


def workload(n: int, seed: int) -> list[tuple[str, str, int]]:
    rng = random.Random(seed)
    good = {name: (ROOT / "curate/examples" / f"{name}.js").read_text() for name in GOOD}
    hostile = {p.stem: p.read_text().replace("__PORT__", "9") for p in sorted((ROOT / "tests/sketches/hostile").glob("*.js"))}
    items = []
    for i in range(n):
        if i % 4 == 3:
            name = rng.choice(sorted(hostile))
            items.append((f"hostile:{name}", hostile[name], i))
        else:
            name = rng.choice(sorted(good))
            items.append((f"good:{name}", good[name], i))
    return items


async def soak(n: int, window: int, kill_at: int) -> None:
    items = workload(n, seed=0)
    config = RenderConfig(render_rejects=True)  # hostile code must reach the page, not stop at the static gate
    me = os.getpid()
    rows, killed_pid, peak = [], None, 0.0
    bad_good = []
    async with Renderer(config) as renderer:
        print(f"{n} renders, {sum(k.startswith('hostile') for k, _, _ in items)} hostile, "
              f"{renderer.browsers} browsers on {renderer.gl.name}, recycle every {config.recycle_after}")
        print(f"{'renders':>9s} {'renders/s':>10s} {'tree MiB':>9s} {'ok':>4s} {'violations':>10s} {'unavail':>7s}")
        pending: set[asyncio.Task] = set()
        queue = list(items)
        stats, t_window, done = Counter(), time.perf_counter(), 0
        capacity = renderer.browsers * renderer.pages * 2

        async def one(kind, code, i):
            timeout = HOSTILE_TIMEOUT_S if kind.startswith("hostile") else None
            return kind, await renderer.render(code, seed=i, timeout_s=timeout)

        while queue or pending:
            while queue and len(pending) < capacity:
                pending.add(asyncio.ensure_future(one(*queue.pop(0))))
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                kind, result = task.result()
                done += 1
                if result.unavailable:
                    stats["unavailable"] += 1
                elif result.ok:
                    stats["ok"] += 1
                else:
                    stats["violations"] += 1
                    if kind.startswith("good") and killed_pid is None:
                        bad_good.append((kind, result.violations))
                if done == kill_at and killed_pid is None:
                    killed_pid = renderer.browser_pids()[0]
                    os.kill(killed_pid, signal.SIGKILL)
                    print(f"  -- SIGKILL browser {killed_pid} after {done} renders")
                if done % window == 0:
                    mem = tree_pss_mb(me)
                    peak = max(peak, mem)
                    rate = window / (time.perf_counter() - t_window)
                    rows.append((done, rate, mem, dict(stats)))
                    print(f"{done:9d} {rate:10.2f} {mem:9.0f} {stats['ok']:4d} {stats['violations']:10d} "
                          f"{stats['unavailable']:7d}", flush=True)
                    stats, t_window = Counter(), time.perf_counter()
    first = sum(r[1] for r in rows[: max(1, len(rows) // 4)]) / max(1, len(rows) // 4)
    last = sum(r[1] for r in rows[-max(1, len(rows) // 4):]) / max(1, len(rows) // 4)
    mems = [r[2] for r in rows]
    print(f"\npeak browser-tree memory {peak:.0f} MiB; first window {mems[0]:.0f} MiB, last {mems[-1]:.0f} MiB")
    print(f"throughput first quarter {first:.2f}/s, last quarter {last:.2f}/s ({last / first:.0%})")
    print(f"unavailable renders in total: {sum(r[3].get('unavailable', 0) for r in rows)} "
          f"(the sketches in flight on the killed browser)")
    print(f"good sketches with violations before the kill: {bad_good[:5] or 'none'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--kill-at", type=int, default=0, help="render count at which a browser is killed (default n/2)")
    args = ap.parse_args()
    asyncio.run(soak(args.n, args.window, args.kill_at or args.n // 2))


if __name__ == "__main__":
    main()
