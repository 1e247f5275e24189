"""Pulling judge references: one loader, the release kept once, and concurrent pulls that are safe.

Every process of a multi-GPU run loads the references `REPO@REV` into the same cache folder at
the same moment. Here several real processes do exactly that against the loopback Hub
(tests/hubserver.py, the real huggingface_hub client), released together by a file barrier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from hubserver import serve

from salon.pool import Candidate, Pool

PROCESSES = 6

# each child imports first, waits until every child is ready, then loads (pulls) and reads every image,
# a few times: an unpinned REPO (main) is resolved, and was pulled again, on every load
CHILD = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from salon.judges.references import load_references
    import huggingface_hub  # imported before the barrier, so the pulls start together

    barrier, n, spec, ROUNDS = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], 4
    (barrier / f"ready-{os.getpid()}").touch()
    while len(list(barrier.glob("ready-*"))) < n:
        time.sleep(0.005)
    for _ in range(ROUNDS):  # a later round of one process meets an earlier round of another
        refs = load_references(spec)
        sizes = [r.load().size for r in refs.references]
    print(json.dumps({"release": refs.release, "ids": sorted(r.id for r in refs.references),
                      "tiers": refs.tiers(), "sizes": len(sizes)}))
""")


def env_for(url, tmp_path):
    env = dict(os.environ, HF_ENDPOINT=url, HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf-home"),
               HF_HUB_DISABLE_TELEMETRY="1", HF_TOKEN="test-token", SALON_CACHE=str(tmp_path / "cache"))
    env.pop("HF_HUB_OFFLINE", None)
    return env


@pytest.fixture
def release(tmp_path, make_png):
    """A pushed pool: 2 love, 1 okay, 1 nope; yields (url, revision, love/okay ids)."""
    with serve() as (url, _):
        pool_dir = tmp_path / "pool"
        with Pool.open(pool_dir, create=True) as pool:
            cs = [Candidate(code=f"p{i}", png=make_png(i, size=128), ok=True, subject="koi", model="m:a")
                  for i in range(4)]
            pool.add_candidates(cs)
            for c, tier in zip(cs, ["love", "love", "okay", "nope"]):
                pool.label(c.id, tier, "ana")
        proc = subprocess.run([sys.executable, "-m", "salon.apps.cli", "pool", "push", "me/refs", "--pool",
                               str(pool_dir), "--json"], capture_output=True, text=True, env=env_for(url, tmp_path))
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield url, json.loads(proc.stdout)["revision"], sorted(c.id for c in cs[:3])


@pytest.mark.parametrize("rev", ["pinned", "main"])
def test_processes_pulling_one_release_at_once_all_load_it_whole(release, tmp_path, rev):
    url, revision, ids = release
    spec = f"me/refs@{revision}" if rev == "pinned" else "me/refs"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = env_for(url, tmp_path)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(barrier), str(PROCESSES), spec], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(PROCESSES)]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        got = json.loads(out)
        assert got["release"] == f"me/refs@{revision}"
        assert got["ids"] == ids and got["tiers"] == {"love": 2, "okay": 1} and got["sizes"] == 3
    folder = tmp_path / "cache" / "refs" / "me--refs" / (revision if rev == "pinned" else "main")
    leftovers = [p.name for p in folder.parent.iterdir() if ".pull-" in p.name]
    assert leftovers == []  # every temporary folder was cleaned up


def test_pulling_the_commit_a_folder_holds_changes_nothing(release, tmp_path):
    url, revision, _ = release
    env = env_for(url, tmp_path)
    to = tmp_path / "refs"
    script = ("import sys, json; from salon.pool.hub import pull; p = pull('me/refs', sys.argv[1]); "
              "print(json.dumps({'release': p.release, 'counts': p.counts}))")
    first = subprocess.run([sys.executable, "-c", script, str(to)], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    stamp = (to / "manifest.json").stat().st_mtime_ns
    time.sleep(0.01)
    again = subprocess.run([sys.executable, "-c", script, str(to)], capture_output=True, text=True, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout) == json.loads(first.stdout) == {
        "release": f"me/refs@{revision}", "counts": {"love": 2, "okay": 1, "nope": 1}}
    assert (to / "manifest.json").stat().st_mtime_ns == stamp  # not replaced under a reader
