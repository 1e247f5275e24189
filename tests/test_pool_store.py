"""The pool store on real SQLite: ids, dedupe, labels and undo, consensus, agreement, pairs,
near-duplicates, stats, filters, migrations."""

from __future__ import annotations

import hashlib
import io
import sqlite3

import pytest

from salon.pool import Candidate, GuidePhoto, Pool, candidate_id
from salon.pool.consensus import cohen_kappa, consensus, fleiss_kappa
from salon.pool.errors import PoolError
from salon.pool.images import check_png, image_relpath
from salon.pool.schema import SCHEMA_VERSION


def sketch(n: int, png=None, **kw) -> Candidate:
    return Candidate(code=f"function setup() {{ /* {n} */ }}\n", seed=n % 3, png=png,
                     ok=True if png is not None else kw.pop("ok", None), **kw)


def test_id_is_sha256_of_code_nul_seed():
    code = "function setup(){}\n"
    assert candidate_id(code, 7) == hashlib.sha256(code.encode() + b"\x00" + b"7").hexdigest()
    assert Candidate(code=code, seed=7).id == candidate_id(code, 7)
    assert candidate_id(code, 7) != candidate_id(code, 8)
    # code-less replies keep distinct ids through the reply
    assert Candidate(code="", reply="no idea").id != Candidate(code="", reply="can't").id


def test_same_sketch_stored_once_and_image_content_addressed(pool, make_png):
    png = make_png(1)
    first = sketch(1, png, subject="koi", model="m:a")
    assert pool.add_candidates([first, sketch(1, png, subject="koi", model="m:a")]) == [True, False]
    assert pool.add_candidate(sketch(1, png)) is False
    got = pool.get(first.id)
    assert got.subject == "koi" and got.ok is True and got.png is None
    path = pool.image_path(first.id)
    assert path == pool.dir / image_relpath(hashlib.sha256(png).hexdigest())
    assert path.read_bytes() == png
    assert not list(path.parent.glob(".tmp-*"))
    assert len(pool.candidates()) == 1


def test_rejected_and_unrendered_candidates_are_stored_and_later_rendered(pool, make_png):
    rejected = sketch(2, ok=False, violations=["no_painting_calls", "text_label"])
    unrendered = sketch(3)  # renderer unavailable: ok None, no image
    assert pool.add_candidates([rejected, unrendered]) == [True, True]
    assert pool.get(rejected.id).violations == ["no_painting_calls", "text_label"]
    assert pool.image_path(unrendered.id) is None
    assert pool.has_render([rejected.id, unrendered.id]) == {rejected.id}
    # a later import brings the render: the stored row takes it, once
    assert pool.add_candidate(sketch(3, make_png(3), paint_fraction=0.4)) is True
    got = pool.get(unrendered.id)
    assert got.ok is True and got.paint_fraction == 0.4 and pool.image_path(got.id).exists()
    assert pool.add_candidate(sketch(3, make_png(4))) is False  # first render wins


def test_candidate_metadata_round_trip(pool, make_png):
    guide = GuidePhoto(id=123, observation_url="https://inat/obs/1", photo_url="https://inat/p/1.jpg",
                       license="cc-by-sa", attribution="(c) ana, some rights reserved (CC BY-SA)")
    c = Candidate(code="x()", seed=5, subject="koi", prompt="paint koi", model="openai:q",
                  prompt_version="v2", sampling={"temperature": 0.9, "top_p": 0.95}, round=1,
                  parent_id="ab" * 32, guide=guide, reply="```js\nx()\n```", source="run-1",
                  ok=False, violations=["bare_primitives"], js_errors=["boom"], render_ms=812,
                  paint_fraction=0.12, png=make_png(9))
    pool.add_candidate(c)
    got = pool.get(c.id)
    for name in ("code", "seed", "subject", "prompt", "model", "prompt_version", "sampling", "round",
                 "parent_id", "reply", "source", "ok", "violations", "js_errors", "render_ms",
                 "paint_fraction", "image_sha256", "phash"):
        assert getattr(got, name) == getattr(c, name), name
    assert got.guide == GuidePhoto("123", "https://inat/obs/1", "https://inat/p/1.jpg", "CC-BY-SA",
                                   "(c) ana, some rights reserved (CC BY-SA)")
    assert got.created_at


@pytest.mark.parametrize("given, expected", [
    ("CC0", "CC0"), ("cc0", "CC0"), ("CC0 1.0", "CC0"), ("cc-by-sa-4.0", "CC-BY-SA"),
    ("CC BY-SA", "CC-BY-SA"), ("cc_by", "CC-BY"), ("CC-BY-NC 4.0", "CC-BY-NC"), ("  ", None)])
def test_guide_licenses_normalise_and_cc0_is_free(given, expected):
    guide = GuidePhoto("1", license=given)
    assert guide.license == expected
    assert guide.free == (expected in ("CC0", "CC-BY", "CC-BY-SA"))


def test_labels_append_current_tier_undo_and_history(pool, make_png):
    c = sketch(1, make_png(1))
    pool.add_candidate(c)
    pool.label(c.id, "okay", "ana")
    pool.label(c.id, "love", "ana")
    pool.label(c.id, "nope", "ben")
    assert pool.current_labels() == {c.id: {"ana": "love", "ben": "nope"}}
    pool.undo(c.id, "ben")
    assert pool.current_labels() == {c.id: {"ana": "love"}}
    assert pool.consensus_tier(c.id) == "love"
    pool.undo(c.id, "ana")
    assert pool.current_labels() == {} and pool.consensus_tier(c.id) is None
    assert [(h.tier, h.labeler) for h in pool.label_history(c.id)] == [
        ("okay", "ana"), ("love", "ana"), ("nope", "ben"), (None, "ben"), (None, "ana")]


def test_label_errors_say_what_to_do(pool, make_png):
    c = sketch(1, make_png(1))
    pool.add_candidate(c)
    with pytest.raises(PoolError, match="unknown tier 'great': use one of love, okay, nope"):
        pool.label(c.id, "great", "ana")
    with pytest.raises(PoolError, match="import the sketch first"):
        pool.label("0" * 64, "love", "ana")
    with pytest.raises(PoolError, match="--by NAME"):
        pool.label(c.id, "love", " ")
    assert pool.label_history(c.id) == []


@pytest.mark.parametrize("votes, expected", [
    (["love"], "love"), (["love", "okay"], "okay"), (["love", "nope"], "nope"),
    (["love", "love", "okay"], "love"), (["love", "okay", "nope"], "nope"),
    (["okay", "okay", "love", "love"], "okay"), ([], None)])
def test_consensus_majority_ties_go_lower(votes, expected):
    assert consensus(votes) == expected


def test_kappa_values():
    # Cohen: 4 items, agree on 3 -> po=.75; marginals a: love 2 okay 2, b: love 1 okay 3 -> pe=.5
    pairs = [("love", "love"), ("okay", "okay"), ("okay", "okay"), ("love", "okay")]
    assert cohen_kappa(pairs) == pytest.approx(0.5)
    assert cohen_kappa([("love", "love"), ("love", "love")]) == pytest.approx(1.0)  # one tier, full agreement
    # Fleiss, 3 raters x 2 items, full agreement in two tiers -> 1; all-different -> negative
    assert fleiss_kappa([["love"] * 3, ["nope"] * 3]) == pytest.approx(1.0)
    assert fleiss_kappa([["love", "okay", "nope"], ["okay", "nope", "love"]]) < 0
    assert cohen_kappa([]) is None and fleiss_kappa([["love"]]) is None


def test_stats_shape_counts_and_agreement(pool, make_png):
    cs = [sketch(i, make_png(i), subject="koi" if i < 3 else "fern", model=f"m:{i % 2}") for i in range(5)]
    cs.append(sketch(9, ok=False, violations=["timeout"], model="m:1"))
    cs.append(sketch(10, model="m:1"))  # not rendered
    pool.add_candidates(cs)
    for c, a, b in zip(cs[:4], ["love", "okay", "nope", "love"], ["love", "okay", "okay", None]):
        pool.label(c.id, a, "ana")
        if b:
            pool.label(c.id, b, "ben")
    stats = pool.stats()
    assert stats["candidates"] == 7
    assert stats["tiers"] == {"love": 2, "okay": 1, "nope": 1, "unlabelled": 3}  # nope+okay -> nope
    assert stats["by_model"]["m:1"] == {"candidates": 4, "ok": 2, "rejected": 1, "unrendered": 1}
    assert stats["by_subject"]["koi"]["candidates"] == 3 and stats["by_subject"]["unknown"]["candidates"] == 2
    assert stats["violations"] == {"timeout": 1}
    assert stats["labelers"] == {"ana": 4, "ben": 3}
    # 3 shared: (love,love) (okay,okay) (nope,okay): po=2/3; a: 1/1/1, b: 1/2/0 -> pe=3/9
    assert stats["agreement"]["method"] == "cohen"
    assert stats["agreement"]["candidates"] == 3
    assert stats["agreement"]["kappa"] == pytest.approx((2 / 3 - 1 / 3) / (1 - 1 / 3))
    pool.label(cs[0].id, "love", "cy")
    assert pool.stats()["agreement"]["method"] == "fleiss"


def test_filters(pool, make_png):
    cs = [sketch(i, make_png(i), subject="koi", model="m:a") for i in range(4)]
    cs.append(sketch(7, ok=False, violations=["timeout"], subject="fern", model="m:b"))
    pool.add_candidates(cs)
    pool.label(cs[0].id, "love", "ana")
    pool.label(cs[1].id, "nope", "ben")
    assert [c.id for c in pool.candidates(tier="love")] == [cs[0].id]
    assert len(pool.candidates(tier="unlabelled")) == 3
    assert [c.id for c in pool.candidates(ok=False)] == [cs[4].id]
    assert len(pool.candidates(subject="koi", model="m:a")) == 4
    assert [c.id for c in pool.candidates(labeled_by="ben")] == [cs[1].id]
    assert len(pool.candidates(unlabelled_by="ana")) == 4
    assert [c.id for c in pool.candidates(limit=2, offset=1)] == [cs[1].id, cs[2].id]
    with pytest.raises(PoolError, match="unknown tier"):
        pool.candidates(tier="best")


def test_near_duplicates_by_perceptual_hash(pool, make_png):
    base = sketch(1, make_png(1))
    near = sketch(2, make_png(1, noise=800))  # flipped pixels: the same painting, hash a few bits off
    other = sketch(3, make_png(3))
    rejected_copy = Candidate(code="r", png=make_png(1), ok=False, violations=["text_label"])
    pool.add_candidates([base, near, other, rejected_copy])
    assert pool.near_duplicates() == {near.id: base.id}
    assert pool.stats()["near_duplicates"] == 1
    assert near.id not in {c.id for c in pool.candidates(hide_duplicates=True)}
    assert 1 < bin(int(base.phash, 16) ^ int(near.phash, 16)).count("1") <= 6  # the distances used below
    assert pool.recompute_duplicates(distance=1) == 0
    assert pool.dup_distance() == 1 and pool.near_duplicates() == {}
    assert pool.recompute_duplicates(distance=6) == 1


def test_a_snapshot_reads_one_moment_while_another_process_writes(pool, make_png):
    pool.add_candidates([sketch(1, make_png(1)), sketch(2, make_png(2))])
    first, second = (c.id for c in pool.candidates())
    pool.label(first, "love", by="ana")
    with Pool.open(pool.dir, create=True) as other:  # a second connection: another labeler, another process
        with pool.snapshot() as s:
            before = s.candidates()
            other.label(first, "nope", by="bo")
            other.label(second, "okay", by="ana")
            other.add_pair_choice(first, second, "left", by="bo")
            other.add_candidate(sketch(3, make_png(3)))
            assert s.current_labels() == {first: {"ana": "love"}}
            assert s.pair_choices() == [] and len(s.candidates()) == 2
            assert s.query("SELECT count(*) AS n FROM labels")[0]["n"] == 1
        assert [c.id for c in before] == [first, second] and before[0] == pool.get(first)
    assert pool.current_labels() == {first: {"ana": "love", "bo": "nope"}, second: {"ana": "okay"}}
    with pool.snapshot() as s:
        assert len(s.candidates()) == 3 and len(s.pair_choices()) == 1
        assert [c.id for c in s.candidates([second, "f" * 64, first])] == [second, first]


def test_pair_choices(pool, make_png):
    a, b = sketch(1, make_png(1)), sketch(2, make_png(2))
    pool.add_candidates([a, b])
    choice = pool.add_pair_choice(a.id, b.id, "right", "ana", shown_left=b.id)
    assert pool.pair_choices() == [choice]
    assert (choice.winner, choice.shown_left) == ("right", b.id)
    assert pool.add_pair_choice(a.id, b.id, "tie", "ben").shown_left == a.id
    for bad, match in [(dict(winner="both"), "left, right or tie"), (dict(right_id=a.id), "two different"),
                       (dict(shown_left="c" * 64), "shown_left"), (dict(right_id="f" * 64), "no candidate")]:
        kw = dict(left_id=a.id, right_id=b.id, winner="left", by="ana") | bad
        with pytest.raises(PoolError, match=match):
            pool.add_pair_choice(**kw)
    assert len(pool.pair_choices()) == 2


def test_resolve_id_prefix(pool, make_png):
    c = sketch(1, make_png(1))
    pool.add_candidate(c)
    assert pool.resolve_id(c.id[:8].upper()) == c.id
    with pytest.raises(PoolError, match="at least 6 hex"):
        pool.resolve_id("abc")
    with pytest.raises(PoolError, match="no candidate"):
        pool.resolve_id("f" * 10 if not c.id.startswith("f") else "0" * 10)


def test_schema_version_and_newer_database_refused(tmp_path):
    with Pool.open(tmp_path / "p", create=True) as p:
        p.add_candidate(sketch(1))
    conn = sqlite3.connect(tmp_path / "p" / "pool.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(PoolError, match="upgrade salon"):
        Pool.open(tmp_path / "p", create=True)


def test_perceptual_hash_is_imagehash_phash(make_png):
    import imagehash
    from PIL import Image

    pngs = [make_png(seed, size=size, noise=noise) for seed in range(6) for size in (64, 128) for noise in (0, 300)]
    for png in pngs:
        assert check_png(png, "test image") == str(imagehash.phash(Image.open(io.BytesIO(png))))


def test_a_pool_hashed_before_imagehash_is_rehashed_when_opened(tmp_path, make_png):
    import imagehash
    from PIL import Image

    base, near, other = sketch(1, make_png(1)), sketch(2, make_png(1, noise=800)), sketch(3, make_png(3))
    with Pool.open(tmp_path / "p", create=True) as p:
        p.add_candidates([base, near, other])
        (tmp_path / "p" / image_relpath(other.image_sha256)).unlink()  # lost in a crash: no hash then
    conn = sqlite3.connect(tmp_path / "p" / "pool.db")
    conn.execute("UPDATE candidates SET phash = '0000000000000000', dup_of = NULL")  # the old hashes, all alike
    conn.execute("UPDATE candidates SET dup_of = ? WHERE id = ?", (base.id, other.id))
    conn.commit()
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with Pool.open(tmp_path / "p", create=True) as p:
        got = {c.id: c for c in p.candidates()}
        assert p.near_duplicates() == {near.id: base.id}
    for c, png in ((base, make_png(1)), (near, make_png(1, noise=800))):
        assert got[c.id].phash == str(imagehash.phash(Image.open(io.BytesIO(png))))
    assert got[other.id].phash is None


def test_releases_recorded(pool):
    r = pool.record_release("me/pool", "a" * 40, endpoint="http://x", candidates=3, labelled=2, message="m")
    assert pool.releases() == [r]
    assert pool.stats()["latest_release"]["revision"] == "a" * 40


def test_default_pool_dir_from_env(tmp_path, monkeypatch):
    from salon.pool import default_pool_dir

    monkeypatch.setenv("SALON_POOL", str(tmp_path / "elsewhere"))
    assert default_pool_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("SALON_POOL")
    assert str(default_pool_dir()) == "salon-pool"
