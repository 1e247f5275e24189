"""The learn-from-nothing path: procedural sketches, the measures judge, references from a pool
export, the supervised start, and two-step runs of learn_tiny.yaml and learn_tiny_hack.yaml.

The learning claims (reward rising, the hack's proxy rising while its oracle falls) are measured by
benchmarks/learn_tiny.py into benchmarks/results/; here only the plumbing is checked: every piece
runs for real (Chromium, SQLite, TRL's SFTTrainer and GRPOTrainer) and hands the next one what it
needs. Offline; a few minutes on two cores, most of it rendering.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from salon.judges.references import load_references
from salon.judges.registry import load_judge
from salon.judges.verdict import Reference
from salon.judges.winrate import draw_references, judge_group
from salon.pool.errors import ConfigError
from salon.train.start.sketches import PALETTES, gate_sketches, generate_sketches, palette_of

CONFIGS = Path(__file__).resolve().parent.parent / "train" / "configs"


def painted(colour, box, size=96) -> Image.Image:
    """Paper with one rectangle of paint (x0, y0, x1, y1 as shares of the side)."""
    arr = np.full((size, size, 3), 246, dtype=np.uint8)
    x0, y0, x1, y1 = (int(v * size) for v in box)
    arr[y0:y1, x0:x1] = colour
    return Image.fromarray(arr)


# ---- the generator ----------------------------------------------------------------------------------


def test_generated_sketches_pass_the_static_gate_and_vary():
    sketches = generate_sketches(2000, seed=3)
    assert gate_sketches(sketches) == {}
    assert len({s.code for s in sketches}) == 2000
    assert {s.recipe["palette"] for s in sketches} == set(PALETTES)
    assert {s.recipe["shapes"] for s in sketches} == set(range(3, 9))
    assert {palette_of(s.code) for s in sketches[:50]} <= set(PALETTES)
    for s in sketches[:200]:  # paint only through brush.*: no p5 primitive, no loop, the prompt's calls
        calls = {line.strip().split("(")[0] for line in s.code.splitlines() if line.strip().startswith("brush.")}
        assert calls <= {"brush.scaleBrushes", "brush.noStroke", "brush.fill", "brush.fillBleed",
                         "brush.fillTexture", "brush.beginShape", "brush.vertex", "brush.endShape", "brush.circle"}
        assert s.reply.startswith("```javascript\n") and s.reply.endswith("```")
    assert [s.code for s in generate_sketches(5, seed=3)] == [s.code for s in sketches[:5]]
    assert generate_sketches(5, seed=4)[0].code != sketches[0].code


@pytest.mark.browser
def test_generated_sketches_render_through_the_sandbox():
    from salon.curate.sandbox.render import render_sketches

    sketches = generate_sketches(3, seed=11)
    results = render_sketches([s.code for s in sketches], seeds=[0, 1, 2])
    assert [r.violations for r in results] == [[], [], []]
    assert all(r.ok and r.paint_fraction > 0.005 for r in results)


# ---- the measures judge -----------------------------------------------------------------------------


def love_refs():
    warm = [(240, 140, 100), (230, 120, 90), (245, 160, 120)]
    return [Reference.from_image(painted(c, (0.2, 0.2, 0.8, 0.8)), f"love-{i}", "love") for i, c in enumerate(warm)]


def test_measures_judge_is_registered_and_prefers_paintings_near_the_love_tier():
    judge = load_judge("measures")
    refs = love_refs()
    near = painted((238, 135, 95), (0.25, 0.2, 0.8, 0.75))
    unlike = painted((30, 60, 160), (0.0, 0.0, 0.2, 0.2))
    scored = judge_group(judge, [near, unlike], draw_references(refs, k=3))
    assert scored.judge == "measures:palette+layout+paint" and scored.prompt_version.startswith("measures-v1")
    near_score, unlike_score = scored.scores
    assert 0.3 < near_score < 0.9 and unlike_score < 0.1
    for row in scored.verdicts:  # every verdict went through both presentation orders
        for v in row:
            assert v.p == pytest.approx(0.5 * (v.p_first + v.p_second), abs=1e-12)
            assert v.p_first == pytest.approx(v.p_second, abs=1e-9)  # a symmetric measure has no position bias


def test_measures_judge_pairs_sum_to_one_and_a_reference_ties_its_own_tier():
    judge = load_judge("measures", measures=["palette", "layout"], temperature=0.05)
    refs = love_refs()
    features = [judge._reference_features(r) for r in refs]
    a, b = features[0], features[1]
    ctx = features[2:]
    assert judge.p_first(a, b, ctx) + judge.p_first(b, a, ctx) == pytest.approx(1.0, abs=1e-12)
    same = judge.judge([refs[0].load()], refs)[0]  # a copy of love-0 against love-0: as typical as itself
    assert same[0].p == pytest.approx(0.5, abs=1e-9)


def test_measures_judge_refuses_bad_settings_all_at_once():
    with pytest.raises(ConfigError) as e:
        load_judge("measures", measures=["palette", "glow"], temperature=0, device="cuda")
    text = str(e.value)
    assert "glow" in text and "temperature=0" in text and "device" in text


# ---- references from a pool export ------------------------------------------------------------------


def test_references_from_a_pool_export_are_its_love_and_okay_tiers(pool, make_png, tmp_path):
    from salon.pool.export import export_pool
    from salon.pool.models import Candidate

    ids = {}
    for tier, seed in (("love", 1), ("love", 2), ("okay", 3), ("nope", 4)):
        pool.add_candidate(Candidate(code=f"// {seed}", seed=seed, subject="koi", model="salon:test",
                                     png=make_png(seed), ok=True))
        cid = pool.candidates()[-1].id
        pool.label(cid, tier, by="tester")
        ids[cid] = tier
    export_pool(pool, tmp_path / "release")
    refs = load_references(tmp_path / "release")
    assert {r.id: r.tier for r in refs.references} == {i: t for i, t in ids.items() if t != "nope"}
    assert refs.release == f"export:{(tmp_path / 'release').resolve()}@{refs.release.rsplit('@', 1)[1]}"
    assert len(refs.release.rsplit("@", 1)[1]) == 12
    assert all(r.load().size == (64, 64) for r in refs.references)
    assert load_references(tmp_path / "release").release == refs.release  # named by its content


# ---- the start and two steps of each config -----------------------------------------------------------


@pytest.fixture(scope="module")
def start(tmp_path_factory):
    """A start policy at test size: 200 sketches, three SFT steps (plumbing, not a good painter)."""
    from salon.train.start.policy import StartConfig, start

    out = tmp_path_factory.mktemp("start") / "policy"
    report = start(out, StartConfig(sketches=200, vocab_size=512, hidden_size=64, layers=2, intermediate_size=128,
                                    max_steps=3, batch_size=8, check=4, render=0), progress=False)
    return out, report


def test_the_start_is_a_qwen3_policy_with_its_report(start):
    from transformers import AutoConfig, AutoTokenizer

    out, report = start
    assert AutoConfig.from_pretrained(out).model_type == "qwen3"
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.eos_token == "<|im_end|>" and tok.chat_template
    from salon.train.start.policy import prompt_rows

    chat = prompt_rows()[0]
    text = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert chat[0]["content"] in [tok.decode([i]) for i in tok(text, add_special_tokens=False)["input_ids"]]
    reply = generate_sketches(1, seed=5)[0].reply
    ids = tok(reply, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == reply
    pieces = [tok.decode([i]) for i in ids]
    straddling = [p for p in pieces if any(c.isdigit() for c in p) and any(c in p for c in "(,);")]
    assert straddling == []  # no token holds both a number and the code around it
    assert report["sketches"] == 200 and report["gate_rejected"] == 0 and report["sft_steps"] == 3
    assert report["check"]["samples"] == 4 and 0 <= report["check"]["static_gate_pass"] <= 1
    assert json.loads((out / "start_report.json").read_text())["parameters"] == report["parameters"]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A pool export whose love tier is two bundled examples, rendered through the sandbox."""
    from salon.apps.cli import main

    root = tmp_path_factory.mktemp("examples")
    examples = Path(__file__).resolve().parent.parent / "curate" / "examples"
    pool_dir = root / "pool"
    files = [examples / "koi_02_swirl.js", examples / "mountain_01_lake.js"]
    assert main(["pool", "import", *map(str, files), "--model", "salon:examples", "--pool", str(pool_dir)]) == 0
    from salon.pool import Pool

    with Pool.open(pool_dir) as pool:
        for cid in [c.id for c in pool.candidates()]:
            assert main(["pool", "label", cid, "love", "--by", "tester", "--pool", str(pool_dir)]) == 0
    assert main(["pool", "export", "--to", str(root / "release"), "--pool", str(pool_dir)]) == 0
    return root / "release"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("config", ["learn_tiny.yaml", "learn_tiny_hack.yaml"])
def test_two_steps_of_each_config_then_eval_and_audit(config, start, release, tmp_path, capsys):
    from salon.apps.cli import main
    from salon.train.record.archive import load_rollouts_dataset

    policy, _ = start
    out = tmp_path / "run"
    assert main(["train", str(CONFIGS / config), "--output-dir", str(out), "--max-steps", "2", "--save-steps", "1",
                 "--set", f"policy.model={policy}", f"judge.references={release}", "judge.k=2",
                 "grpo.num_generations=2", "grpo.per_device_train_batch_size=2", "grpo.max_completion_length=96",
                 "audit.window=2"]) == 0
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    ds = load_rollouts_dataset(out)
    assert len(ds) == 4 and {"reward_judge", "reward_paint_fraction"} <= set(ds.column_names)
    assert all(r.startswith("export:") and r.split("@")[0].endswith("release") for r in ds["pool_release"])
    assert set(ds["judge"]) == {"measures:palette+layout+paint"}
    capsys.readouterr()  # what salon train printed: the eval's JSON comes next
    assert main(["eval", str(out), "--prompts", "sunflower", "--samples", "2", "--oracle", "measures",
                 "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    assert [c["step"] for c in report["checkpoints"]] == [0, 1, 2]
    assert {"best_by_proxy", "best_by_oracle", "alarms"} <= set(report)
    assert main(["audit", str(out), "--json", "--no-figures"]) in (0, 1)
    audit = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in audit["steps"]] == [0, 1]
