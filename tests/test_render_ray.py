"""The Ray render pool on a real local Ray cluster (several worker processes, no mocks).

An actor killed mid-batch (ray.kill, then SIGKILL of its process) must turn exactly the samples
it held into render_unavailable (no violation: missing, never a bad painting), the other actor's
samples must render, and later samples must render on the replacement actor.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from salon.curate.sandbox.render import RenderConfig, render_sketches  # noqa: E402
from salon.curate.sandbox.ray_pool import RayRenderPool  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"
HEAVY = (EXAMPLES / "jellyfish_02_drifting.js").read_text()
LIGHT = (EXAMPLES / "jellyfish_01_bell.js").read_text()
BLANK = (EXAMPLES / "hibiscus_04_blank.js").read_text()
PAINT_TOLERANCE = 0.01  # SwiftShader noise moves paint_fraction by far less than this


@pytest.fixture(scope="module")
def pool():
    # 4 logical CPUs on a small machine: two 1-CPU actors, one browser each, plus room for Ray itself
    p = RayRenderPool(RenderConfig(browsers=1, timeout_s=60), actors=2, cpus_per_actor=1, local_cpus=4)
    try:
        yield p
    finally:
        p.close()
        import ray

        assert not ray.is_initialized()


def _browsers_of(pid: int) -> list[int]:
    """Chromium processes launched by the Renderer of process `pid` (its marker switch names it)."""
    marker = f"--salon-browser={pid}-".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_ray_results_match_the_local_renderer(pool):
    codes = [LIGHT, BLANK, "function setup() { createCanvas(600, 600); }", None]
    local = render_sketches(codes, seeds=3, config=RenderConfig(browsers=1, timeout_s=60))
    remote = pool.render_many([(c, 3) for c in codes])
    for a, b in zip(local, remote):
        assert (a.ok, a.violations, a.unavailable) == (b.ok, b.violations, b.unavailable)
        if a.paint_fraction is not None:
            assert b.paint_fraction == pytest.approx(a.paint_fraction, abs=PAINT_TOLERANCE)
    assert remote[0].ok and remote[0].png
    assert remote[1].violations == ["blank_canvas"]
    assert remote[3].violations == ["no_sketch"]


def test_requests_spread_by_load(pool):
    futures = [pool.submit(HEAVY, s) for s in range(4)]
    assert sorted(f.salon_actor for f in futures) == [0, 0, 1, 1]
    assert all(f.result(timeout=240).ok for f in futures)


@pytest.mark.parametrize("how", ["ray.kill", "SIGKILL"])
def test_a_killed_actor_loses_only_its_samples_and_is_replaced(pool, how):
    import ray

    pids = pool.actor_pids()
    assert all(pids)
    replaced = pool.replaced
    futures = [pool.submit(HEAVY, s) for s in range(4)]
    victim = futures[0].salon_actor
    time.sleep(1.0)  # the victim's renders are under way
    if how == "ray.kill":
        ray.kill(pool.actor_handle(victim), no_restart=True)
    else:
        os.kill(pids[victim], signal.SIGKILL)
    results = [f.result(timeout=240) for f in futures]
    for f, r in zip(futures, results):
        if f.salon_actor == victim:
            assert r.unavailable and r.violations == [] and not r.ok, r
            assert "died" in r.js_errors[0]
        else:
            assert r.ok and not r.unavailable, r
    # the next samples render, on a fresh actor in the dead one's slot
    later = [pool.submit(LIGHT, s) for s in range(4)]
    assert all(f.result(timeout=240).ok for f in later)
    assert pool.replaced == replaced + 1
    new_pids = pool.actor_pids()
    assert new_pids[victim] not in (None, pids[victim]) and new_pids[1 - victim] == pids[1 - victim]
    # the dead actor's browsers went with it (Playwright's driver closes them when its parent dies)
    deadline = time.monotonic() + 30
    while _browsers_of(pids[victim]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _browsers_of(pids[victim]) == []


def test_an_actor_without_a_browser_answers_render_unavailable():
    import ray

    # joins the running cluster of the module fixture if there is one, else starts its own
    started = not ray.is_initialized()
    bad = RayRenderPool(RenderConfig(browsers=1, chromium="/nonexistent/chromium"), actors=1, cpus_per_actor=1,
                        local_cpus=2)
    try:
        result = bad.submit(LIGHT, 0).result(timeout=120)
        assert result.unavailable and result.violations == []
        assert "could not start" in result.js_errors[0]
    finally:
        bad.close()
    assert ray.is_initialized() != started


def test_salon_render_on_a_local_ray_cluster(tmp_path):
    import json
    import subprocess
    import sys

    sketch = tmp_path / "bell.js"
    sketch.write_text(LIGHT)
    blank = tmp_path / "blank.js"
    blank.write_text(BLANK)
    out = subprocess.run([sys.executable, "-m", "salon.apps.cli", "render", "--ray", "local", "--actors", "1",
                          "--json", "--out-dir", str(tmp_path / "png"), str(sketch), str(blank)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [(r["ok"], r["violations"], r["render_unavailable"]) for r in rows] == \
        [(True, [], False), (False, ["blank_canvas"], False)]
    assert Path(rows[0]["image"]).read_bytes().startswith(b"\x89PNG")
