"""`salon env serve` under concurrent clients: steps/s and step latency (median, p95).

    .venv/bin/python benchmarks/bench_env.py [--clients 8] [--episodes 2] [--browsers 0] [--json]

Starts `salon env serve` as its own process on 127.0.0.1 (default judge: paint_fraction), then
--clients threads, each with its own websocket session (PaintEnvClient), run --episodes
episodes each (reset with a fresh seed, step with a bundled example sketch that paints).
A step's latency is the client's wall time for step() (render + judge + transfer); steps/s is
all steps over the wall time of the whole run. Rendering dominates: the figure to compare is the
same sketches through `benchmarks/bench_render.py` on the same browsers.
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from salon.train.env.client import PaintEnvClient

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--episodes", type=int, default=2, help="per client")
    p.add_argument("--browsers", type=int, default=0, help="server's browsers (default one per two cores)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "salon.apps.cli", "env", "serve", "--port", str(port),
                               "--max-sessions", str(a.clients), "--browsers", str(a.browsers)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("bench_env: the server did not come up")
        good = [p.read_text() for p in sorted(EXAMPLES.glob("*.js")) if "blank" not in p.name
                and "collapse" not in p.name]
        with PaintEnvClient(url) as warm:  # first page and first judge call out of the measurement
            warm.reset(seed=0)
            warm.step(good[0])
        latencies: list[float] = []
        rewards: list = []
        lock = threading.Lock()

        def client(i: int) -> None:
            with PaintEnvClient(url) as env:
                for e in range(a.episodes):
                    env.reset(seed=1000 * i + e)
                    t0 = time.perf_counter()
                    obs = env.step(good[(i * a.episodes + e) % len(good)], return_image=True)
                    with lock:
                        latencies.append(time.perf_counter() - t0)
                        rewards.append(obs.reward)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(30)
    lat = sorted(latencies)
    row = {"clients": a.clients, "steps": len(lat), "wall_s": wall, "steps_per_s": len(lat) / wall,
           "median_step_s": statistics.median(lat), "p95_step_s": lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)],
           "null_rewards": sum(r is None for r in rewards)}
    if a.json:
        print(json.dumps(row))
    else:
        print(f"{row['clients']} clients, {row['steps']} steps in {wall:.1f} s: {row['steps_per_s']:.3f} steps/s, "
              f"median step {row['median_step_s']:.2f} s, p95 {row['p95_step_s']:.2f} s, "
              f"null rewards {row['null_rewards']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
