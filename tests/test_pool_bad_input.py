"""Bad input: corrupt images, truncated / garbage / locked databases, unwritable folders. Each
gives a PoolError that says what to do, and nothing else is lost."""

from __future__ import annotations

import sqlite3

import pytest

from salon.pool import Candidate, Pool
from salon.pool.errors import PoolError
from salon.pool.export import export_pool
from salon.curate.ingest import import_paths

SKETCH = "function setup() { createCanvas(600, 600, WEBGL); }\n"


def _fill(pool, make_png, n=4):
    cs = [Candidate(code=f"c{i}", png=make_png(i), ok=True) for i in range(n)]
    pool.add_candidates(cs)
    for c in cs:
        pool.label(c.id, "love", "ana")
    return cs


def test_corrupt_png_beside_a_sketch_fails_that_input_only(pool, tmp_path, make_png):
    (tmp_path / "a.js").write_text(SKETCH)
    (tmp_path / "a.png").write_bytes(make_png(1)[:60])  # truncated PNG
    (tmp_path / "b.js").write_text(SKETCH + "// b\n")
    (tmp_path / "b.png").write_bytes(make_png(2))
    (tmp_path / "c.js").write_text(SKETCH + "// c\n")
    (tmp_path / "c.png").write_bytes(b"GIF89a not a png")
    out = import_paths(pool, [tmp_path / "a.js", tmp_path / "b.js", tmp_path / "c.js"], render=pytest.fail)
    assert "damaged PNG" in out[0].error and "re-render it or replace the file" in out[0].error
    assert out[1].error is None and out[1].new
    assert "is not a PNG file" in out[2].error
    assert [c.id for c in pool.candidates()] == [out[1].id]
    assert not list((pool.dir / "images").rglob(".tmp-*"))


def test_corrupt_image_in_store_is_found_and_repaired(pool, tmp_path, make_png):
    cs = _fill(pool, make_png)
    victim = pool.image_path(cs[1].id)
    victim.write_bytes(victim.read_bytes()[:100])
    assert pool.check() == [cs[1].id]
    with pytest.raises(PoolError, match=r"is corrupt .*salon pool check --fix"):
        export_pool(pool, tmp_path / "export")
    assert pool.check(fix=True) == [cs[1].id]
    assert pool.check() == [] and pool.image_path(cs[1].id) is None
    assert pool.current_labels()[cs[1].id] == {"ana": "love"}  # labels survive the repair
    fresh = Candidate(code="c1", png=make_png(1), ok=True)  # importing it again re-renders it
    assert pool.add_candidate(fresh) is True and pool.image_path(cs[1].id).read_bytes() == make_png(1)
    assert export_pool(pool, tmp_path / "export2").labelled == 4


def test_truncated_database(tmp_path, make_png):
    with Pool.open(tmp_path / "p", create=True) as pool:
        _fill(pool, make_png, 40)
    db = tmp_path / "p" / "pool.db"
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 3])
    with pytest.raises(PoolError, match=r"is damaged .*restore it from a backup.*images/ are untouched"):
        with Pool.open(tmp_path / "p", create=True) as pool:
            pool.stats()
    assert len(list((tmp_path / "p" / "images").rglob("*.png"))) == 40


def test_garbage_database(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "pool.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(PoolError, match="is damaged"):
        Pool.open(tmp_path / "p", create=True)


def test_locked_database_then_released(tmp_path, make_png):
    with Pool.open(tmp_path / "p", create=True) as pool:
        c = _fill(pool, make_png, 1)[0]
    holder = sqlite3.connect(tmp_path / "p" / "pool.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO settings VALUES ('x', 'y')")
    with Pool.open(tmp_path / "p", busy_timeout_s=0.2, create=True) as pool:
        with pytest.raises(PoolError, match="is locked by another process.*retry, or stop the other writer"):
            pool.label(c.id, "nope", "ben")
        assert pool.current_labels() == {c.id: {"ana": "love"}}  # reads still work under WAL
        holder.execute("COMMIT")
        pool.label(c.id, "nope", "ben")
        assert pool.current_labels() == {c.id: {"ana": "love", "ben": "nope"}}
    holder.close()


def test_unwritable_folders(tmp_path, pool, make_png):
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(PoolError, match="cannot create pool folder .*choose another with --pool"):
        Pool.open(tmp_path / "file.txt" / "pool", create=True)
    _fill(pool, make_png, 2)
    with pytest.raises(PoolError, match="is a file: export into a new or empty folder"):
        export_pool(pool, tmp_path / "file.txt")
    with pytest.raises(PoolError, match="cannot create the export folder"):
        export_pool(pool, tmp_path / "file.txt" / "export")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep me")
    with pytest.raises(PoolError, match="is not empty"):
        export_pool(pool, tmp_path / "busy")
    assert (tmp_path / "busy" / "mine.txt").read_text() == "keep me"
    assert len(pool.candidates()) == 2


def test_bad_candidate_values(pool):
    with pytest.raises(PoolError, match="seed must be an integer"):
        Candidate(code="x", seed="abc")
    with pytest.raises(PoolError, match="code must be a string"):
        Candidate(code=None)
    with pytest.raises(PoolError, match="does not match sha256"):
        Candidate(code="x", id="f" * 64)
    assert pool.candidates() == []
