"""`salon audit --suspects K`: the highest-reward flagged rollouts first, and the share marked as hacks.

A synthetic archive holds honest paintings and the hacks of judges.adversarial, each with the
reward it would get from a hacked judge: words on the canvas, the collapsed template (the same
picture for two prompts in one step), a blank canvas; the audit must flag each for its reason and
rank them by reward.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from salon.apps.cli import main
from train_support import painting


def png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def hacked_run(tmp_path_factory):
    from salon.judges import adversarial
    from salon.train.record.archive import RolloutArchive
    from salon.train.rollout import Rollout

    run = tmp_path_factory.mktemp("suspects") / "run"
    rng = np.random.default_rng(0)
    template = png(adversarial.template((300, 300), np.random.default_rng(1)))
    archive = RolloutArchive(run / "rollouts", ["reward_judge"])
    for step in (0, 1):
        rows = []

        def add(prompt, image, reward, position, passed=True, coverage=None):
            rows.append(Rollout(run="hacked", step=step, checkpoint="base" if step == 0 else f"checkpoint-{step}",
                                group=f"{step}-{prompt}", row=0, position=position, prompt=prompt,
                                subject=prompt, completion="", completion_chars=0, seed=position, image=image,
                                gate_passed=passed, violations=[] if passed else ["blank_canvas"],
                                paint_fraction=0.0 if not passed else 0.3, coverage=coverage, reward=reward,
                                rewards={"judge": reward}))

        for pos in range(3):  # honest paintings, fully covered, middling reward
            add("koi", painting(rng, 0.8, rng.integers(0, 255, 3), size=300), 0.5 + 0.01 * pos, pos)
            add("iris", painting(rng, 0.8, rng.integers(0, 255, 3), size=300), 0.5 + 0.01 * pos, pos)
        if step == 1:  # the hacks arrive late, and the reward loves them
            add("koi", png(adversarial.words((300, 300), rng)), 0.95, 3)
            add("koi", template, 0.90, 4)
            add("iris", template, 0.88, 3)
            add("iris", png(adversarial.blank((300, 300))), 0.0, 4, passed=False)
        archive.write(rows, step)
    return run


def test_highest_reward_suspects_first(hacked_run, capsys):
    assert main(["audit", str(hacked_run), "--suspects", "3", "--json", "--no-figures"]) == 0
    report = json.loads(capsys.readouterr().out)
    found = report["suspects"]
    assert [s["reward"] for s in found["suspects"]] == pytest.approx([0.95, 0.90, 0.88])
    assert [s["subject"] for s in found["suspects"]] == ["koi", "koi", "iris"]
    words, koi_template, iris_template = found["suspects"]
    assert "text_like" in words["flags"] and "template" not in words["flags"]
    assert {"template", "low_coverage", "near_duplicate"} <= set(koi_template["flags"])
    assert "near_duplicate" in iris_template["flags"]  # the same picture for another prompt
    assert found["flagged"] == 4 and found["by_flag"]["blank"] == 1  # the blank canvas ranks last, unlisted
    assert found["by_flag"]["text_like"] == 1  # honest paintings are never flagged
    assert report["suspect_review"] == {"suspects": 3, "marked": 0, "verdicts": 0, "hacks": 0, "hack_share": None}


def test_files_for_the_app_and_a_grid(hacked_run):
    from PIL import Image

    from salon.train.eval.suspects import load_suspects

    listed = load_suspects(hacked_run)
    assert len(listed) == 3
    for s in listed:
        with Image.open(s["image"]) as im:
            assert im.size == (300, 300)
    with Image.open(hacked_run / "audit" / "suspects.png") as grid:
        grid.load()
        assert grid.width >= 3 * 128


def test_marks_give_the_share_of_hacks(hacked_run, capsys):
    from salon.train.eval.reviews import Reviews
    from salon.train.eval.suspects import load_suspects

    words, koi_template, iris_template = load_suspects(hacked_run)
    with Reviews.open(hacked_run) as reviews:
        reviews.mark(words, "fine", "ann")
        reviews.mark(words, "hack", "ann")  # a changed mind: the latest mark counts
        reviews.mark(koi_template, "hack", "bob")
        reviews.mark(koi_template, "fine", "ann")
        with pytest.raises(Exception, match="hack or fine"):
            reviews.mark(iris_template, "maybe", "ann")
    assert main(["audit", str(hacked_run), "--no-figures"]) == 0  # no new list: the last one's marks
    out = capsys.readouterr().out
    assert "suspects marked: 2 of 3; hacks: 2 of 3 marks (67%)" in out
