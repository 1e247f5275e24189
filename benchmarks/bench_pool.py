"""Benchmark the pool store: import throughput (rendering excluded), stats, listing and export.

    .venv/bin/python benchmarks/bench_pool.py [--candidates 10000] [--labels 5000] [--size 256]

Builds a fresh pool in a temporary folder from synthetic PNGs (distinct block paintings, the
size given), then prints, measured side by side in one run:
  - import throughput through `salon pool import` (JSONL rows with image paths; the render
    function is never called) and through `Pool.add_candidates` (the API a generation run uses),
  - label throughput (one transaction per label, as the app writes them),
  - `stats()` and `candidates(tier=..., hide_duplicates=True)` times (median of 5),
  - export time and dataset size.
`stats` must stay well under a second at 10,000 candidates and 5,000 labels.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from salon.pool import Candidate, Pool
from salon.pool.export import export_pool
from salon.curate.ingest import import_paths


def painting(i: int, size: int) -> bytes:
    rng = np.random.default_rng(i)
    blocks = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    pixels = np.kron(blocks, np.ones((size // 8, size // 8, 1), dtype=np.uint8))
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


def code(i: int) -> str:
    return (f"function setup() {{\n  createCanvas(600, 600, WEBGL);\n  background(250, 245, 235);\n"
            f"  brush.fill('#{i % 0xFFFFFF:06x}', 80);\n  brush.circle({i % 200}, {i % 150}, 90);\n}}\n") * 8


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def never_render(candidates, progress):
    raise AssertionError("the benchmark imports rendered candidates only")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--labels", type=int, default=5_000)
    parser.add_argument("--size", type=int, default=256, help="PNG side in pixels")
    args = parser.parse_args()
    n, half = args.candidates, args.candidates // 2
    work = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    print(f"pool benchmark: {n} candidates ({args.size}px PNGs), {args.labels} labels, in {work}")

    t0 = time.perf_counter()
    pngs = [painting(i, args.size) for i in range(n)]
    (work / "in").mkdir()
    rows = []
    for i in range(half):
        (work / "in" / f"{i}.png").write_bytes(pngs[i])
        rows.append(json.dumps({"code": code(i), "seed": i % 4, "subject": f"s{i % 10}", "model": f"m:{i % 3}",
                                "image": f"{i}.png", "ok": i % 7 != 0,
                                "violations": [] if i % 7 else ["bare_primitives"], "paint_fraction": 0.4}))
    (work / "in" / "rows.jsonl").write_text("\n".join(rows) + "\n")
    print(f"  inputs prepared in {time.perf_counter() - t0:.1f}s (not counted)")

    pool = Pool.open(work / "pool", create=True)
    t_cli, outcomes = timed(lambda: import_paths(pool, [work / "in" / "rows.jsonl"], render=never_render))
    assert all(o.error is None and o.new for o in outcomes)
    print(f"  import (salon pool import, JSONL + PNG files): {half / t_cli:8.0f} candidates/s  ({t_cli:.2f}s for {half})")

    batch = [Candidate(code=code(i), seed=i % 4, subject=f"s{i % 10}", model=f"m:{i % 3}", png=pngs[i],
                       ok=i % 7 != 0, violations=[] if i % 7 else ["timeout"]) for i in range(half, n)]
    t_api, added = timed(lambda: pool.add_candidates(batch))
    assert all(added)
    print(f"  import (Pool.add_candidates, in memory):       {(n - half) / t_api:8.0f} candidates/s  ({t_api:.2f}s for {n - half})")
    t_again, again = timed(lambda: pool.add_candidates(batch[:1000]))
    assert not any(again)
    print(f"  re-import of known candidates (dedupe):        {1000 / t_again:8.0f} candidates/s")

    ids = [c.id for c in pool.candidates()]
    labelers = ["ana", "ben", "cy"]
    tiers = ["love", "okay", "nope"]

    def label_all():
        # 70 % of the labels' candidates get one labeler, the rest two who agree 3 times in 4
        spread = max(1, int(args.labels * 0.7))
        for k in range(args.labels):
            j = k % spread
            tier = tiers[j % 3] if k < spread or j % 4 else tiers[(j + 1) % 3]
            pool.label(ids[(j * 7919) % len(ids)], tier, labelers[k % 3])

    t_label, _ = timed(label_all)
    print(f"  labels (one transaction each):                 {args.labels / t_label:8.0f} labels/s")

    t_stats, stats = timed(pool.stats, repeat=5)
    print(f"  stats():                                       {t_stats * 1000:8.1f} ms   "
          f"(tiers {stats['tiers']}, {stats['agreement']}, "
          f"near-duplicates {stats['near_duplicates']})")
    t_list, listed = timed(lambda: pool.candidates(tier="unlabelled", hide_duplicates=True), repeat=5)
    print(f"  candidates(tier='unlabelled', hide dups):      {t_list * 1000:8.1f} ms   ({len(listed)} rows)")
    t_page, _ = timed(lambda: pool.candidates(tier="unlabelled", hide_duplicates=True, limit=50), repeat=5)
    print(f"  the same, one page of 50:                      {t_page * 1000:8.1f} ms")
    t_current, _ = timed(pool.current_labels, repeat=5)
    print(f"  current_labels():                              {t_current * 1000:8.1f} ms")

    t_export, result = timed(lambda: export_pool(pool, work / "export"))
    size = sum(p.stat().st_size for p in (work / "export").rglob("*") if p.is_file())
    print(f"  export:                                        {t_export:8.2f} s    ({result.labelled} labelled, "
          f"{result.candidates} candidates, {size / 2**20:.0f} MiB, shards {sum(map(len, result.shards.values()))})")
    pool.close()
    print(f"  verdict: stats {'well under' if t_stats < 0.25 else 'NOT well under'} one second")


if __name__ == "__main__":
    main()
