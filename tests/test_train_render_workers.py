"""A render worker never outlives its trainer: killed however, the trainer leaves no Chromium behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from render_support import EXAMPLES

# The trainer's stand-in: a pool that has rendered once (so its browsers are up), then waits.
TRAINER = textwrap.dedent("""
    import sys, time
    from salon.curate.sandbox.render import RenderConfig
    from salon.train.render_workers import RenderPool

    pool = RenderPool(RenderConfig(browsers=1, timeout_s=60), workers=1)
    result = pool.submit(open(sys.argv[1]).read(), 0).result()
    print(result.ok, pool._workers[0].process.pid, flush=True)
    time.sleep(600)
""")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def _descendants(pid: int) -> set[int]:
    tree, out, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for a reaper that a container may lack)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_trainer_leaves_no_render_worker_or_browser(tmp_path, how):
    sketch = EXAMPLES / "hibiscus_01_sketch.js"
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, str(sketch)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        ok, worker = trainer.stdout.readline().split()
        assert ok == "True"
        left = {int(worker)} | _descendants(int(worker))
        assert any("chromium" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
                   for p in left if _running(p)), "the worker should hold a browser before the kill"
        os.kill(trainer.pid, how)
        trainer.wait(10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_running(p) for p in left):
            time.sleep(0.25)
        assert [p for p in left if _running(p)] == [], "the worker or its browsers outlived the trainer"
    finally:
        if trainer.poll() is None:
            trainer.kill()
