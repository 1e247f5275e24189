"""Several writers at once (threads, processes) lose and duplicate nothing; a writer killed with
SIGKILL mid-write loses no committed label and leaves a healthy database."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading

from conftest import _png

from salon.pool import Candidate, Pool


def _candidates(n: int, start: int = 0) -> list[Candidate]:
    return [Candidate(code=f"c{i}", seed=0, png=_png(i, size=16), ok=True, model=f"m{i % 3}")
            for i in range(start, start + n)]


def test_threads_sharing_and_not_sharing_a_pool(tmp_path):
    shared = Pool.open(tmp_path / "pool", create=True)
    base = _candidates(20)
    shared.add_candidates(base)
    errors = []

    def work(k: int):
        try:
            pool = shared if k % 2 else Pool.open(tmp_path / "pool", create=True)
            # every thread also adds the same 10 overlapping candidates plus 5 of its own
            pool.add_candidates(_candidates(10, 100) + _candidates(5, 200 + 5 * k))
            for i in range(30):
                pool.label(base[(i + k) % 20].id, ("love", "okay", "nope")[i % 3], f"t{k}")
            pool.add_pair_choice(base[k].id, base[k + 1].id, "left", f"t{k}")
            if pool is not shared:
                pool.close()
        except Exception as e:  # collected: a thread's failure must fail the test
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    conn = sqlite3.connect(tmp_path / "pool" / "pool.db")
    assert conn.execute("SELECT count(*) FROM candidates").fetchone()[0] == 20 + 10 + 8 * 5
    assert conn.execute("SELECT count(DISTINCT id) FROM candidates").fetchone()[0] == 70
    assert conn.execute("SELECT count(*) FROM labels").fetchone()[0] == 8 * 30
    assert conn.execute("SELECT count(*) FROM pair_choices").fetchone()[0] == 8
    assert sum(shared.stats()["labelers"].values()) == 8 * 20  # 30 labels over 20 ids per thread
    shared.close()


def _process_writer(pool_dir: str, k: int, ids: list[str]) -> None:
    with Pool.open(pool_dir, create=True) as pool:
        for i in range(0, 60, 10):  # overlapping batches with every other process
            pool.add_candidates(_candidates(10, i))
        for i, cid in enumerate(ids):
            pool.label(cid, ("love", "okay", "nope")[(i + k) % 3], f"p{k}")


def test_processes_write_at_once(tmp_path):
    pool_dir = str(tmp_path / "pool")
    with Pool.open(pool_dir, create=True) as pool:
        ids = [c.id for c in _candidates(60)]
        pool.add_candidates(_candidates(5))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(pool_dir, k, ids)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with Pool.open(pool_dir, create=True) as pool:
        assert len(pool.candidates()) == 60
        current = pool.current_labels()
        assert len(current) == 60 and all(len(by) == 4 for by in current.values())
        for c in pool.candidates():
            assert hashlib.sha256(pool.image_path(c.id).read_bytes()).hexdigest() == c.image_sha256
    conn = sqlite3.connect(os.path.join(pool_dir, "pool.db"))
    assert conn.execute("SELECT count(*) FROM labels").fetchone()[0] == 4 * 60


KILLED_WRITER = r"""
import sys
from salon.pool import Candidate, Pool
sys.path.insert(0, sys.argv[2])
from conftest import _png
pool = Pool.open(sys.argv[1], create=True)
ids = [line.strip() for line in open(sys.argv[1] + "/ids.txt")]
i = 0
while True:
    if i % 5 == 0:  # interleave candidate writes (images + rows) with labels
        c = Candidate(code=f"late{i}", png=_png(1000 + i, size=32), ok=True)
        pool.add_candidate(c)
        print("candidate", c.id, flush=True)
    label = pool.label(ids[i % len(ids)], ("love", "okay", "nope")[i % 3], "killed")
    print("label", label.seq, label.candidate_id, label.tier, flush=True)
    i += 1
"""


def test_sigkill_mid_write_loses_no_committed_label(tmp_path):
    pool_dir = tmp_path / "pool"
    with Pool.open(pool_dir, create=True) as pool:
        base = _candidates(10)
        pool.add_candidates(base)
    (pool_dir / "ids.txt").write_text("\n".join(c.id for c in base))
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(pool_dir), os.path.dirname(__file__)],
                             stdout=subprocess.PIPE, text=True)
    lines = []
    while len(lines) < 300:  # let it get well into its loop, then kill it without warning
        line = child.stdout.readline()
        assert line, "writer exited early"
        lines.append(line.split())
    child.send_signal(signal.SIGKILL)
    lines += [line.split() for line in child.stdout.read().splitlines() if line.strip()]
    child.wait()
    assert child.returncode == -signal.SIGKILL

    conn = sqlite3.connect(pool_dir / "pool.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = {seq: (cid, tier) for seq, cid, tier in conn.execute("SELECT seq, candidate_id, tier FROM labels")}
    reported = [line for line in lines if line and line[0] == "label"]
    assert reported, "the writer committed nothing before the kill"
    for _, seq, cid, tier in reported:
        assert rows[int(seq)] == (cid, tier)
    with Pool.open(pool_dir, busy_timeout_s=5, create=True) as pool:
        for _, cid in (line[:2] for line in lines if line and line[0] == "candidate"):
            c = pool.get(cid)
            assert c is not None and hashlib.sha256(pool.image_path(cid).read_bytes()).hexdigest() == c.image_sha256
        pool.label(base[0].id, "love", "after")  # nothing is left locked
        assert pool.check() == []
