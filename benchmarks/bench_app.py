"""Benchmark the curation app's label view in Chromium: keypress to next painting, and to ack.

    .venv/bin/python benchmarks/bench_app.py [--sizes 100 10000] [--labels 200] [--gap-ms 60]

For each pool size: builds a pool from synthetic PNGs with `Pool.add_candidates` (no
rendering), launches `salon app` on it as a subprocess on 127.0.0.1, opens the page in Debian
Chromium (Playwright) and labels `--labels` paintings with the keys 1/2/3, waiting for each
next painting before the next key (and `--gap-ms` more, a fast labeler's pace). The page
records, for every key (salon.js, window.salon.metrics):
  - paint: keydown event -> the frame after the next painting was put on screen (decoded
    image swapped in, requestAnimationFrame, then a task: the frame has been painted),
  - ack: keydown event -> the server answered that the label is committed to the store.
Prints median / p95 / max of both per size, side by side, and counts the label rows the store
holds (one per acknowledged key). Targets: paint median <= 20 ms and p95 <= 35 ms at every size; ack p95 < 300 ms.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_pool import painting  # benchmarks/ is on sys.path when run as a script
from salon.pool import Candidate, Pool

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--no-first-run"]


def build_pool(folder: Path, n: int) -> None:
    code = "function setup() { createCanvas(600, 600, WEBGL); brush.rect(0, 0, %d, 10); }"
    with Pool.open(folder, create=True) as pool:
        pool.add_candidates(
            Candidate(code=code % i, seed=i, subject=f"subject {i % 5}", model=f"bench:m{i % 3}",
                      ok=True, png=painting(i, 256), paint_fraction=0.5, render_ms=1000)
            for i in range(n))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(pool_dir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = os.environ | {"GRADIO_ANALYTICS_ENABLED": "False"}
    proc = subprocess.Popen([sys.executable, "-m", "salon.apps.cli", "app", "--pool", str(pool_dir),
                             "--port", str(port), "--user", "bench"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    for line in proc.stdout:
        if "Running on local URL:" in line:
            return proc, line.split("URL:")[1].strip()
    raise RuntimeError(f"salon app exited with {proc.wait()}")


def summary(values: list[float]) -> str:
    v = sorted(values)
    p95 = v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))]
    return f"median {statistics.median(v):6.1f}  p95 {p95:6.1f}  max {v[-1]:6.1f}"


def measure(browser, url: str, labels: int, gap_ms: float) -> dict:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url)
    page.wait_for_selector(".salon-stage[data-id]", timeout=60_000)
    page.wait_for_timeout(1000)  # let the prefetch window fill, as a person would look first
    for i in range(labels):
        if page.evaluate("window.salon.label.pos >= window.salon.label.ids.length - 1"):
            # End of the queue (the 100-painting pool): restart it on the "all" view, where
            # labelled paintings stay, and relabel from the top.
            page.select_option("[data-f=view]", "all")
            page.dispatch_event("[data-f=view]", "change")
            page.wait_for_function("window.salon.label.pos === 0 && "
                                   "document.querySelector('.salon-stage').dataset.id")
            page.wait_for_timeout(1000)
        page.keyboard.press("123"[i % 3])
        page.wait_for_function(f"window.salon.metrics.paint.length > {i}", timeout=30_000)
        page.wait_for_timeout(gap_ms)
    page.wait_for_function(f"window.salon.metrics.ack.length >= {labels}", timeout=60_000)
    metrics = page.evaluate("window.salon.metrics")
    page.close()
    return metrics


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--labels", type=int, default=200)
    parser.add_argument("--gap-ms", type=float, default=60.0)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("SALON_CHROMIUM", "/usr/bin/chromium"),
                                    args=CHROMIUM_ARGS)
        for n in args.sizes:
            folder = Path(tmp) / f"pool-{n}"
            t = time.perf_counter()
            build_pool(folder, n)
            built = time.perf_counter() - t
            proc, url = launch(folder)
            try:
                m = measure(browser, url, args.labels, args.gap_ms)
            finally:
                proc.kill()
                proc.wait()
            with Pool.open(folder, create=True) as pool:
                stored = sum(len(pool.label_history(cid)) for cid, by in pool.current_labels().items()
                             if "bench" in by)
            rows.append((n, built, m, stored))
        browser.close()
    print(f"{'pool':>6}  {'built':>6}  keypress -> next painting (ms)              "
          f"keypress -> ack (ms)                        labels stored")
    for n, built, m, stored in rows:
        print(f"{n:>6}  {built:5.1f}s  {summary(m['paint'])}   {summary(m['ack'])}   "
              f"{stored}/{len(m['ack'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
