"""Benchmark what an idle curation app costs: CPU with no browser connected, salon vs bare Gradio.

    .venv/bin/python benchmarks/bench_app_idle.py [--seconds 10] [--rounds 3]

Runs, one after the other, in a fresh subprocess each: `salon app` on an empty pool, and a
bare `gr.Blocks()` with the same queue, mounted on FastAPI and served by uvicorn the same way.
After a settling pause it reads the process's CPU time (user + system, os.times in the child)
over `--seconds`, and prints the percent of one core per round and the ratio salon / bare.
A ratio near 1 means the idle cost is Gradio's own (its queue polls: `Queue.start_processing`
sleeps 1 ms between checks of an empty queue, `start_progress_updates` 10 ms), not salon's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import os, sys, threading, time
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
import uvicorn
kind, seconds, pool = sys.argv[1], float(sys.argv[2]), sys.argv[3]
if kind == "salon":
    from salon.apps.app import AppConfig, build
    app = build(AppConfig(pool=pool, create_pool=True, user="bench"))
else:
    import gradio as gr
    from fastapi import FastAPI
    with gr.Blocks() as demo:
        gr.Markdown("idle")
    demo.queue(default_concurrency_limit=4)
    app = gr.mount_gradio_app(FastAPI(), demo, path="/", ssr_mode=False)

def measure():
    time.sleep(5)  # startup done
    t = os.times(); start = t.user + t.system
    time.sleep(seconds)
    t = os.times()
    print(f"{100 * (t.user + t.system - start) / seconds:.2f}", flush=True)
    os._exit(0)

threading.Thread(target=measure, daemon=True).start()
uvicorn.run(app, host="127.0.0.1", port=0, log_level="warning")
"""


def idle_percent(kind: str, seconds: float, pool: str) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(seconds), pool],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"salon": [], "bare gradio": []}
        for _ in range(args.rounds):  # interleaved: the machine's noise hits both alike
            runs["salon"].append(idle_percent("salon", args.seconds, f"{tmp}/pool"))
            runs["bare gradio"].append(idle_percent("bare", args.seconds, f"{tmp}/pool"))
    for kind, values in runs.items():
        print(f"{kind:12s} idle CPU, % of one core over {args.seconds:.0f} s: "
              + " ".join(f"{v:.2f}" for v in values) + f"  (median {statistics.median(values):.2f})")
    bare = statistics.median(runs["bare gradio"])
    print(f"salon / bare gradio: {statistics.median(runs['salon']) / bare:.2f}" if bare else "bare: 0")


if __name__ == "__main__":
    main()
