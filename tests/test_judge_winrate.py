"""Reference loading, the seeded reference draw, win-rate, image judges and the registry."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from salon.judges import adversarial
from salon.judges.image_judges import colourfulness, composition, diversity, paint_fraction
from salon.judges.references import ReferenceSet, load_references
from salon.judges.registry import JUDGES, load_judge, resolve
from salon.judges.verdict import Reference, Verdict, verdict_from_orders
from salon.judges.winrate import draw_references, group_seed, win_rate
from salon.pool.errors import ConfigError, JudgeError


def refs(love=4, okay=4, nope=2):
    out = [Reference(id=f"{t}{i}", tier=t) for t, n in (("love", love), ("okay", okay), ("nope", nope))
           for i in range(n)]
    return ReferenceSet(out, release="me/pool@" + "a" * 40)


def test_draw_is_seeded_mixed_and_recorded():
    a = draw_references(refs(), k=4, seed=11)
    assert a == draw_references(refs(), k=4, seed=11)
    assert [r.tier for r in a.references].count("love") == 2 and [r.tier for r in a.references].count("okay") == 2
    assert {draw_references(refs(), k=4, seed=s).references[0].id for s in range(20)} != {a.references[0].id}
    rec = a.record()
    assert rec["seed"] == 11 and len(rec["references"]) == 4
    json.dumps(rec)  # loggable as is


def test_draw_mix_is_configurable_and_never_draws_nope():
    d = draw_references(refs(), k=4, mix={"love": 1.0}, seed=0)
    assert {r.tier for r in d.references} == {"love"}
    d = draw_references(refs(love=1), k=4, mix={"love": 0.75, "okay": 0.25}, seed=0)
    assert [r.tier for r in d.references].count("love") == 1 and len(d.references) == 4  # topped up from okay
    assert all(r.tier != "nope" for s in range(10) for r in draw_references(refs(), k=6, seed=s).references)


def test_fewer_references_than_k_uses_all_and_untiered_draws_uniformly():
    few = [Reference(id=f"p{i}") for i in range(3)]
    assert [r.id for r in draw_references(few, k=4).references] == ["p0", "p1", "p2"]
    many = [Reference(id=f"p{i}") for i in range(10)]
    d = draw_references(many, k=4, seed=3)
    assert len({r.id for r in d.references}) == 4 and d.mix is None


def test_draw_config_problems_are_reported_together():
    with pytest.raises(ConfigError) as e:
        draw_references(refs(), k=0, mix={"love": -1})
    assert len(e.value.problems) == 2


def test_group_seed_is_stable_and_distinguishes_groups():
    assert group_seed(1, 5, "hibiscus") == group_seed(1, 5, "hibiscus")
    assert group_seed(1, 5, "hibiscus") != group_seed(1, 6, "hibiscus")


def test_win_rate_is_the_mean_and_none_when_any_verdict_is_missing():
    ok = [verdict_from_orders(0.8, 0.4, reference=str(i), judge="j", prompt_version="v") for i in range(2)]
    assert ok[0].p == pytest.approx(0.7) and win_rate(ok) == pytest.approx(0.7)
    missing = ok + [Verdict(reference="x", judge="j", prompt_version="v", reason="timeout")]
    assert win_rate(missing) is None and win_rate([]) is None
    half = verdict_from_orders(0.9, None, reference="r", judge="j", prompt_version="v", reason="timeout")
    assert half.p is None and half.reason == "timeout"


def save(img, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)
    return path


def test_plain_folder_references_are_paths_with_tiers_from_subfolders(tmp_path):
    save(Image.new("RGB", (8, 8), "red"), tmp_path / "a.png")
    save(Image.new("RGB", (8, 8), "blue"), tmp_path / "love" / "b.png")
    save(Image.new("RGB", (8, 8), "green"), tmp_path / "nope" / "c.png")
    (tmp_path / "notes.txt").write_text("not an image")
    rs = load_references(str(tmp_path))
    assert rs.release is None
    assert {(r.id, r.tier) for r in rs.references} == {(str(tmp_path / "a.png"), None),
                                                      (str(tmp_path / "love" / "b.png"), "love")}


def pulled_folder(folder, revision="b" * 40):
    manifest = {"repo_id": "me/pool", "revision": revision, "references": []}
    for i, tier in enumerate(["love", "okay", "nope"]):
        save(Image.new("RGB", (8, 8), (i * 80, 0, 0)), folder / "refs" / tier / f"id{i}.png")
        manifest["references"].append({"id": f"id{i}", "tier": tier, "path": f"refs/{tier}/id{i}.png"})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_pulled_folder_references_are_pool_ids_with_the_release(tmp_path):
    rs = load_references(pulled_folder(tmp_path))
    assert rs.release == "me/pool@" + "b" * 40
    assert [(r.id, r.tier) for r in rs.references] == [("id0", "love"), ("id1", "okay")]  # nope is no reference
    assert rs.references[0].load().size == (8, 8)


def test_pinned_release_is_read_from_the_cache_without_the_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("SALON_CACHE", str(tmp_path))
    rev = "c" * 40
    pulled_folder(tmp_path / "refs" / "me--pool" / rev, revision=rev)
    rs = load_references(f"me/pool@{rev}")
    assert rs.release == f"me/pool@{rev}" and len(rs.references) == 2


def test_unknown_references_say_what_to_do(tmp_path):
    with pytest.raises(JudgeError, match="no such folder"):
        load_references(str(tmp_path / "missing" / "x.png"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(JudgeError, match="holds no reference images"):
        load_references(str(tmp_path / "empty"))


# ---- image judges ----------------------------------------------------------------------------

def full_painting(size=(120, 120), seed=0):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 255, (5, 5, 3), dtype=np.uint8)
    return Image.fromarray(small).resize(size, Image.BICUBIC)


def test_paint_fraction_and_colourfulness_order_simple_cases():
    blank = adversarial.blank((120, 120))
    assert paint_fraction(blank) == 0.0 and paint_fraction(full_painting()) > 0.8
    grey = Image.new("RGB", (50, 50), (128, 128, 128))
    assert colourfulness(grey) == pytest.approx(0.0, abs=1e-9) and colourfulness(full_painting()) > 0


def test_composition_tells_the_collapsed_template_from_a_full_painting():
    rng = np.random.default_rng(0)
    collapsed = composition(adversarial.template((300, 300), rng))
    full = composition(full_painting((300, 300)))
    assert collapsed.lower_half < 0.05 and full.lower_half > 0.8
    assert collapsed.coverage <= 0.5 and full.coverage == pytest.approx(1.0, abs=1e-9)
    assert collapsed.centroid[1] < 0.35 < full.centroid[1]


def test_diversity_is_zero_for_copies_and_grows_with_difference():
    a, b = full_painting(seed=1), full_painting(seed=2)
    assert diversity([a, a.copy(), a.copy()]) == pytest.approx(0.0, abs=1e-9)
    assert diversity([a, b]) > 0.1 and diversity([a]) is None
    per_image = load_judge("diversity").score([a, a.copy(), b])
    assert per_image[2] > per_image[0] > 0


def test_registry_loads_by_name_and_by_dotted_path():
    assert load_judge("composition").score([adversarial.blank((40, 40))]) == [0.0]
    assert resolve("salon.judges.image_judges:ColourfulnessJudge") is resolve("colourfulness")
    assert resolve("salon.judges.image_judges.PaintFractionJudge") is resolve("paint_fraction")
    assert {"transformers", "openai"} <= set(JUDGES)
    with pytest.raises(JudgeError, match="cannot load judge"):
        resolve("no_such_module:Judge")
