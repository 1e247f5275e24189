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


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs: one kept, one to render on")
def test_trainer_cores_keep_the_render_workers_and_their_browsers_off_the_trainers_cores():
    """render.trainer_cores=1: the worker and every Chromium process under it run on this process's
    CPUs but the first, and the painting still comes out."""
    from salon.curate.sandbox.render import RenderConfig
    from salon.train.render_workers import RenderPool, render_cores

    allowed = sorted(os.sched_getaffinity(0))
    with RenderPool(RenderConfig(browsers=1, timeout_s=60), workers=1, trainer_cores=1) as pool:
        result = pool.submit((EXAMPLES / "hibiscus_01_sketch.js").read_text(), 0).result()
        worker = pool._workers[0].process.pid
        browsers = _descendants(worker)
        masks = {pid: os.sched_getaffinity(pid) for pid in [worker, *browsers] if _running(pid)}
    assert result.ok, result.violations
    assert len(masks) > 2  # the worker and Chromium's processes
    assert all(mask == set(allowed[1:]) for mask in masks.values()), masks
    assert render_cores(0) is None and render_cores(len(allowed)) is None  # off; nothing left to render on


def test_trainer_cores_are_refused_where_no_local_worker_runs():
    from salon.pool.errors import ConfigError
    from salon.train.config_render import RenderSettings

    assert RenderSettings(trainer_cores=2).trainer_cores == 2
    with pytest.raises(ConfigError) as e:
        RenderSettings(trainer_cores=2, backend="env", env_url="http://127.0.0.1:8000")
    assert "render.trainer_cores=2 places the local backend's workers only" in str(e.value)
    with pytest.raises(ConfigError):
        RenderSettings(trainer_cores=-1)


def test_requests_wait_here_until_a_worker_has_a_free_slot():
    """Two workers of one browser each: two sketches render at once, the other four wait in the pool
    (not in a worker's queue) and all come out."""
    from salon.curate.sandbox.render import RenderConfig
    from salon.train.render_workers import RenderPool

    codes = [(EXAMPLES / f"{name}.js").read_text() for name in
             ("hibiscus_01_sketch", "still_02_teacup", "koi_01_pond") * 2]
    with RenderPool(RenderConfig(browsers=1, timeout_s=60), workers=2) as pool:
        futures = [pool.submit(code, 0) for code in codes]
        in_flight = [len(w.pending) for w in pool._workers]
        waiting = len(pool._waiting)
        results = [f.result(timeout=300) for f in futures]
        assert not pool._waiting and all(not w.pending for w in pool._workers)
    assert in_flight == [1, 1] and waiting == 4
    assert all(r.ok for r in results), [r.violations for r in results]


class _StandIn:
    """A worker as the pool sees one (free slots, pending answers), answered by the test."""

    def __init__(self, pool, slots: int):
        self.pool, self.slots, self.pending, self.alive, self.failed = pool, slots, {}, True, None
        self.given: list[int] = []

    @property
    def free(self) -> int:
        return self.slots - len(self.pending) if self.alive else 0

    def submit(self, rid, code, seed, timeout_s, fut):
        self.pending[rid] = fut
        self.given.append(seed)

    def answer(self):
        from salon.curate.sandbox.render import RenderResult

        rid = min(self.pending)
        self.pending.pop(rid).set_result(RenderResult(ok=True))
        self.pool._hand_out()

    def close(self, wait_s=0):
        self.alive = False


def test_a_worker_that_answers_takes_the_next_request_while_another_is_still_busy():
    """Bound late: the worker on a heavy painting keeps it; the one that answers takes what waits, and a
    worker with more free slots is served first."""
    from salon.train.render_workers import RenderPool

    pool = RenderPool(workers=2)
    heavy, light = _StandIn(pool, 1), _StandIn(pool, 2)
    pool._workers = [heavy, light]
    futures = [pool.submit("code", seed) for seed in range(6)]
    assert light.given == [0, 2] and heavy.given == [1]  # the most free slots first, then in turns
    for _ in range(3):
        light.answer()
    assert light.given == [0, 2, 3, 4, 5] and heavy.given == [1] and not pool._waiting
    assert [f.done() for f in futures] == [True, False, True, True, False, False]
    heavy.answer()
    light.answer()
    light.answer()
    assert all(f.done() for f in futures)


def test_what_waits_fails_as_unavailable_when_no_worker_is_left():
    from salon.train.render_workers import RenderPool

    pool = RenderPool(workers=1)
    only = _StandIn(pool, 1)
    pool._workers = [only]
    first, second = pool.submit("code", 0), pool.submit("code", 1)
    only.alive, only.failed = False, "render worker exited (code -9)"
    pool._hand_out()
    result = second.result(timeout=1)
    assert result.unavailable
    assert result.js_errors == ["render_unavailable: no render worker alive (render worker exited (code -9))"]
    assert not first.done()  # the worker's own answer (or its failure) resolves what it holds
    pool._workers = []
