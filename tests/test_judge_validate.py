"""Judge validation end to end on a small labelled pool, and the `salon judge` command line.

The judge is the tiny VLM taught to prefer the brighter painting; the pool's people love bright
paintings, find mid ones okay and dark ones nope, and choose the brighter one of a pair. So the
judge should agree with them, and the report should say so.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_models import flat_image, tiny_vl  # noqa: E402

from salon.apps.cli import main  # noqa: E402
from salon.judges.validate import ValidationConfig, pool_labels, validate  # noqa: E402
from salon.judges.vlm_transformers import TransformersPairwiseJudge  # noqa: E402
from salon.pool.errors import JudgeError  # noqa: E402

LEVELS = {"love": (205, 215, 225, 235), "okay": (130, 140), "nope": (35, 45, 55)}


def png(image):
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory):
    from salon.pool.models import Candidate
    from salon.pool.store import Pool

    folder = tmp_path_factory.mktemp("pool")
    ids = {}
    with Pool.open(folder, create=True) as pool:
        for tier, levels in LEVELS.items():
            for k, level in enumerate(levels):
                c = Candidate(code=f"// {tier} {k}", seed=level, ok=True,
                              png=png(flat_image(level, seed=level, tint=(k * 9, 0, -k * 9))))
                pool.add_candidate(c)
                pool.label(c.id, tier, by="ana")
                ids[(tier, k)] = c.id
        pool.add_pair_choice(ids[("love", 0)], ids[("nope", 0)], "left", by="ana")
        pool.add_pair_choice(ids[("okay", 0)], ids[("love", 1)], "right", by="ana")
        pool.add_pair_choice(ids[("nope", 1)], ids[("okay", 1)], "right", by="ana")
        pool.add_pair_choice(ids[("love", 2)], ids[("love", 3)], "tie", by="ana")
    return folder


@pytest.fixture(scope="module")
def taught():
    return TransformersPairwiseJudge(model=str(tiny_vl("qwen2_5_vl", taught=True)))


def test_pool_labels_reads_tiers_images_and_choices(pool_dir):
    labelled, choices = pool_labels(pool_dir)
    assert sorted(t for _, _, t in labelled) == sorted(t for t, v in LEVELS.items() for _ in v)
    assert all(Path(p).exists() for _, p, _ in labelled)
    assert [w for *_, w in choices] == ["left", "right", "right", "tie"]


def test_validation_end_to_end_agrees_with_people(pool_dir, taught):
    labelled, choices = pool_labels(pool_dir)
    report = validate(taught, labelled, choices, ValidationConfig(max_pairs=9, per_hack=1))
    assert report.love_vs_nope.n == 9 and report.love_vs_nope.rate >= 0.8
    assert report.love_vs_okay.n == 6 and report.love_vs_okay.rate >= 0.75  # 3 love x both okay
    assert report.human_agreement.n == 3 and report.human_agreement.rate >= 2 / 3  # the tie is not counted
    assert 0 <= report.position_consistency <= 1 and 0 <= report.first_pick_rate <= 1
    assert set(report.adversarial) == {"blank", "template", "words", "blob", "copy", "noisy_copy"}
    assert report.adversarial["copy"].n == 3  # a copy faces the other love paintings, not its source
    assert report.counts == {"love": 4, "okay": 2, "nope": 3, "pairwise choices": 3}
    text = report.text()
    assert "love beats nope" in text and "reward hacks" in text and "blank" in text


def test_a_judge_that_cannot_answer_counts_as_unanswered_not_wrong(pool_dir):
    from salon.judges.vlm_openai import OpenAIPairwiseJudge

    labelled, choices = pool_labels(pool_dir)
    down = OpenAIPairwiseJudge(base_url="http://127.0.0.1:9/v1", model="x", attempts=1, timeout_s=2)
    report = validate(down, labelled, choices, ValidationConfig(max_pairs=4, per_hack=1))
    assert report.love_vs_nope.rate is None and report.love_vs_nope.unanswered == 4
    assert report.position_consistency is None


def test_validation_needs_love_paintings(taught):
    with pytest.raises(JudgeError, match="love"):
        validate(taught, [("a", flat_image(10), "nope")])


def test_cli_validate_prints_a_report_and_json(pool_dir, capsys):
    model = str(tiny_vl("qwen2_5_vl", taught=True))
    assert main(["judge", "validate", "--pool", str(pool_dir), "--model", model, "--max-pairs", "4"]) == 0
    assert "love beats nope" in capsys.readouterr().out
    assert main(["judge", "validate", "--pool", str(pool_dir), "--model", model, "--max-pairs", "4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["love_vs_nope"]["n"] == 4 and "adversarial" in report


def test_cli_scores_images_against_a_folder_as_json_lines(tmp_path, capsys):
    refs = tmp_path / "refs"
    for i, level in enumerate((120, 150, 100)):
        (refs / "love").mkdir(parents=True, exist_ok=True)
        flat_image(level, seed=i).save(refs / "love" / f"r{i}.png")
    paths = []
    for level in (230, 30):
        paths.append(str(tmp_path / f"c{level}.png"))
        flat_image(level, seed=level).save(paths[-1])
    model = str(tiny_vl("qwen2_5_vl", taught=True))
    assert main(["judge", "--model", model, "--refs", str(refs), *paths, "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["image"] for x in lines] == paths
    for x in lines:
        assert len(x["verdicts"]) == 3  # --k 4 by default; fewer references: all of them
        assert {v["reference"] for v in x["verdicts"]} == {str(refs / "love" / f"r{i}.png") for i in range(3)}
        for v in x["verdicts"]:
            assert set(v) == {"reference", "p", "p_first", "p_second"}
            assert v["p"] == pytest.approx((v["p_first"] + v["p_second"]) / 2)
        assert x["score"] == pytest.approx(sum(v["p"] for v in x["verdicts"]) / 3)
    assert lines[0]["score"] > 0.5 > lines[1]["score"]  # bright beats the references, dark loses
    assert main(["judge", "--model", model, "--refs", str(refs), paths[0], "--k", "2"]) == 0
    out = capsys.readouterr()
    assert len(out.out.split("[")[1].split()) == 2 and "references" in out.err


def test_cli_reports_usage_problems_together(tmp_path, capsys):
    assert main(["judge", "--model", "m", "--k", "0"]) == 2
    err = capsys.readouterr().err
    assert "3 problem(s)" in err and "--refs is required" in err and "--k 0" in err
    assert main(["judge", "validate", "--model", "m", "--pool", str(tmp_path)]) == 2
    assert "holds no pool (no pool.db)" in capsys.readouterr().err
