"""Export round-trips through `load_export(DIR, config)` offline, with the right features,
Hub-sized shards, a dataset card with provenance, and non-free guide photos withheld; exports in
folders named alike load as themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from salon.pool import Candidate, GuidePhoto
from salon.pool.export import ExportConfig, export_pool, load_export

LOAD = r"""
import json, sys
import yaml
from salon.pool.export import load_export
out = {}
card = open(sys.argv[1] + "/README.md").read().split("---\n")[1]
for config in [c["config_name"] for c in yaml.safe_load(card)["configs"]]:
    ds = load_export(sys.argv[1], config)
    rows = [dict(r) for r in ds]
    for r in rows:
        if r.get("image") is not None:
            r["image"] = list(r["image"].size)
    out[config] = {"features": {k: repr(v) for k, v in ds.features.items()},
                   "tier_names": ds.features["tier"].names if "tier" in ds.features else None,
                   "rows": rows}
print(json.dumps(out))
"""


def _load_offline(folder) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(folder.parent / "hf-home"))
    proc = subprocess.run([sys.executable, "-c", LOAD, str(folder)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _pool_with_everything(pool, make_png):
    free = GuidePhoto("11", "https://www.inaturalist.org/observations/1", "https://x/11.jpg", "CC-BY-SA",
                      "(c) ana, some rights reserved (CC BY-SA)")
    nonfree = GuidePhoto("12", None, None, "CC-BY-NC", "(c) bo, some rights reserved (CC BY-NC)")
    cs = [Candidate(code=f"k{i}", seed=i, png=make_png(i, size=128), ok=True, subject="koi",
                    model=f"m:{i % 2}", paint_fraction=0.5, guide=free if i == 0 else None)
          for i in range(6)]
    cs.append(Candidate(code="rej", ok=False, violations=["timeout", "runtime_error"], model="m:0"))
    cs.append(Candidate(code="nf", png=make_png(99), ok=True, guide=nonfree, model="m:1"))
    pool.add_candidates(cs)
    pool.label(cs[0].id, "love", "ana")
    pool.label(cs[0].id, "okay", "ben")  # tie -> okay
    pool.label(cs[1].id, "love", "ana")
    pool.label(cs[2].id, "nope", "ana")
    pool.label(cs[3].id, "okay", "ana")
    pool.undo(cs[3].id, "ana")  # unlabelled again
    pool.label(cs[6].id, "nope", "ana")
    pool.label(cs[7].id, "love", "ana")  # non-free guide: withheld everywhere
    pool.add_pair_choice(cs[0].id, cs[1].id, "right", "ana", shown_left=cs[1].id)
    pool.add_pair_choice(cs[0].id, cs[7].id, "left", "ana")  # references a withheld candidate
    return cs


def test_round_trip_offline(pool, tmp_path, make_png):
    cs = _pool_with_everything(pool, make_png)
    result = export_pool(pool, tmp_path / "export")
    assert (result.labelled, result.candidates, result.pairs, result.withheld) == (4, 7, 1, 1)
    loaded = _load_offline(tmp_path / "export")

    default = loaded["default"]
    assert default["tier_names"] == ["love", "okay", "nope"]
    assert default["features"]["image"].startswith("Image(") and "ClassLabel" in default["features"]["tier"]
    by_id = {r["id"]: r for r in default["rows"]}
    assert set(by_id) == {cs[0].id, cs[1].id, cs[2].id, cs[6].id}
    first = by_id[cs[0].id]
    assert first["tier"] == 1 and first["labels"] == [{"labeler": "ana", "tier": "love"},
                                                      {"labeler": "ben", "tier": "okay"}]
    assert first["image"] == [128, 128] and first["code"] == "k0" and first["seed"] == 0
    assert (first["guide_license"], first["guide_attribution"]) == ("CC-BY-SA", "(c) ana, some rights reserved (CC BY-SA)")
    assert by_id[cs[6].id]["image"] is None and by_id[cs[6].id]["tier"] == 2

    candidates = loaded["candidates"]["rows"]
    assert len(candidates) == 7 and cs[7].id not in {r["id"] for r in candidates}
    rejected = next(r for r in candidates if r["id"] == cs[6].id)
    assert rejected["ok"] is False and rejected["violations"] == ["timeout", "runtime_error"]
    assert next(r for r in candidates if r["id"] == cs[3].id)["tier"] is None

    pairs = loaded["pairs"]["rows"]
    assert pairs == [{"left_id": cs[0].id, "right_id": cs[1].id, "winner": 1, "labeler": "ana",
                      "at": pairs[0]["at"], "shown_left": cs[1].id}]


def test_card_metadata_and_provenance(pool, tmp_path, make_png):
    _pool_with_everything(pool, make_png)
    export_pool(pool, tmp_path / "export")
    text = (tmp_path / "export" / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["license"] == "cc-by-sa-4.0"  # a CC-BY-SA guide photo is included
    assert "salon" in meta["tags"]
    assert [c["config_name"] for c in meta["configs"]] == ["default", "candidates", "pairs"]
    assert meta["configs"][0]["data_files"] == [{"split": "train", "path": "data/train-*"}]
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert infos["default"]["splits"][0]["num_examples"] == 4
    body = text.split("---\n", 2)[2]
    assert "(c) ana, some rights reserved (CC BY-SA)" in body
    assert "CC BY-NC" not in body and "1 candidate(s) withheld" in body
    assert "| m:0 |" in body and "| m:1 |" in body
    assert "Labelers: ana (4), ben (1)" in body and "Cohen's kappa" in body
    assert "by salon 0." in body or "by salon 0+unknown" in body


def test_shards_respect_size_and_reexport(pool, tmp_path, make_png):
    for i in range(30):
        c = Candidate(code=f"s{i}", png=make_png(i, size=256), ok=True)
        pool.add_candidate(c)
        pool.label(c.id, "okay", "ana")
    biggest = max(p.stat().st_size for p in (pool.dir / "images").rglob("*.png"))
    result = export_pool(pool, tmp_path / "export", ExportConfig(max_shard_bytes=biggest * 4))
    shards = result.shards["default"]
    assert len(shards) >= 7 and shards[0].endswith(f"-of-{len(shards):05d}.parquet")
    assert all((tmp_path / "export" / s).exists() for s in shards)
    loaded = _load_offline(tmp_path / "export")
    assert len(loaded["default"]["rows"]) == 30 and "pairs" not in loaded  # no choices yet: no config
    # an export folder can be replaced with --force, never silently
    again = export_pool(pool, tmp_path / "export", ExportConfig(overwrite=True))
    assert again.shards["default"] == ["data/train-00000-of-00001.parquet"]
    assert sorted(p.name for p in (tmp_path / "export" / "data").iterdir()) == ["train-00000-of-00001.parquet"]


def test_exports_in_folders_named_alike_load_as_themselves(pool, tmp_path, make_png):
    """`load_dataset(DIR)` caches by folder name and card counts: an export of as many rows loaded stale tiers."""
    cs = [Candidate(code=f"a{i}", png=make_png(i), ok=True) for i in range(3)]
    pool.add_candidates(cs)
    for c in cs:
        pool.label(c.id, "love", "ana")

    def tiers(folder):
        ds = load_export(folder)
        assert ds.features["tier"].names == ["love", "okay", "nope"] and ds[0]["image"].size == (64, 64)
        return sorted(ds["tier"])

    export_pool(pool, tmp_path / "a" / "export")
    assert tiers(tmp_path / "a" / "export") == [0, 0, 0]
    pool.label(cs[0].id, "nope", "ana")  # same counts, so the same card metadata
    export_pool(pool, tmp_path / "b" / "export")
    assert tiers(tmp_path / "b" / "export") == [0, 0, 2]
    pool.label(cs[1].id, "nope", "ana")
    export_pool(pool, tmp_path / "a" / "export", ExportConfig(overwrite=True))  # same shard names
    assert tiers(tmp_path / "a" / "export") == [0, 2, 2]
