"""`salon judge --scorer hpsv3`, `salon judge serve --scorer hpsv3` and `salon judge validate --scorer hpsv3`
(issue 19) on tiny:hpsv3, and the scorer validation report.

The served scorer runs in its own process (`python -m salon.apps.cli judge serve ... --port 0`),
reached on 127.0.0.1; it is stopped by its pid.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_models import smooth_painting as painting, tiny_hpsv3  # noqa: E402

from salon.apps.cli import main  # noqa: E402
from salon.judges.hpsv3 import load_hpsv3  # noqa: E402
from salon.judges.validate import pool_labels  # noqa: E402
from salon.judges.validate_scorer import ScorerValidationConfig, auc, pool_subjects, validate_scorer  # noqa: E402

TIERS = {"love": 4, "okay": 3, "nope": 2}


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    paths = []
    for k in range(2):
        paths.append(folder / f"p{k}.png")
        painting(k).save(paths[-1])
    broken = folder / "broken.png"
    broken.write_bytes(b"not a png")
    return [str(p) for p in paths], str(broken)


def lines(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_scoring_prints_one_json_line_per_image_and_exits_1_on_a_failure(images, capsys):
    good, broken = images
    model = str(tiny_hpsv3())
    assert main(["judge", "--scorer", "hpsv3", "--model", model, *good, "--json", "--prompt", "a koi"]) == 0
    rows = lines(capsys)
    expect = load_hpsv3(model=model, prompt="a koi").rate([Image.open(p) for p in good])
    assert [r["image"] for r in rows] == good
    for row, r in zip(rows, expect):
        assert set(row) == {"image", "score", "mu", "log_sigma", "error"} and row["error"] is None
        assert row["mu"] == pytest.approx(r.mu, abs=1e-6) and row["score"] == pytest.approx(r.score, abs=1e-6)
    assert main(["judge", "--scorer", "hpsv3", "--model", model, good[0], broken, "--json"]) == 1
    ok, bad = lines(capsys)
    assert ok["score"] is not None and bad["image"] == broken
    assert bad["score"] is None and bad["mu"] is None and "cannot read image" in bad["error"]
    assert main(["judge", "--scorer", "hpsv3", "--model", model, good[0]]) == 0
    out = capsys.readouterr().out
    assert "mu" in out and "log_sigma" in out and good[0] in out


def test_wrong_combinations_are_refused(capsys):
    assert main(["judge", "--scorer", "hpsv3", "--model", "x", "--refs", "r", "a.png"]) == 2
    assert "--refs belongs to the pairwise judge" in capsys.readouterr().err
    assert main(["judge", "serve", "--model", "x"]) == 2
    assert "add --scorer hpsv3" in capsys.readouterr().err
    assert main(["judge", "--scorer", "hpsv3", "--model", "x"]) == 2  # no image


def test_serve_refuses_a_network_host_without_the_flag(capsys):
    assert main(["judge", "serve", "--scorer", "hpsv3", "--model", "x", "--host", "0.0.0.0"]) == 2
    assert "--insecure-no-auth" in capsys.readouterr().err


def test_serve_then_score_through_the_url(images, capsys):
    good, _ = images
    model = str(tiny_hpsv3())
    proc = subprocess.Popen([sys.executable, "-m", "salon.apps.cli", "judge", "serve", "--scorer", "hpsv3",
                             "--model", model, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving hpsv3:") and "http://127.0.0.1:" in line, line
        url = line.split(" on ")[1].split()[0]
        assert main(["judge", "--scorer", "hpsv3", "--model", url, *good, "--json"]) == 0
        remote = lines(capsys)
        local = load_hpsv3(model=model).rate([Image.open(p) for p in good])
        assert [r["mu"] for r in remote] == pytest.approx([r.mu for r in local], abs=1e-6)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_auc_counts_ties_half():
    assert auc([3, 4], [1, 2]) == pytest.approx(1.0) and auc([1], [2]) == pytest.approx(0.0)
    assert auc([1, 2], [2]) == pytest.approx(0.25)
    assert auc([], [1]) is None


@pytest.fixture(scope="module")
def pool_dir(tmp_path_factory):
    from salon.pool.models import Candidate
    from salon.pool.store import Pool

    folder = tmp_path_factory.mktemp("pool")
    with Pool.open(folder, create=True) as pool:
        for t, (tier, n) in enumerate(TIERS.items()):
            for k in range(n):
                buf = io.BytesIO()
                painting(10 * t + k, size=(96, 96)).save(buf, "PNG")
                c = Candidate(code=f"// {tier} {k}", seed=k, ok=True, subject="koi" if k % 2 else "peach hibiscus",
                              png=buf.getvalue())
                pool.add_candidate(c)
                pool.label(c.id, tier, by="ana")
    return folder


def test_validation_reports_tiers_auc_hacks_and_the_subject_prompt(pool_dir):
    scorer = load_hpsv3(model=str(tiny_hpsv3()))
    labelled, _ = pool_labels(pool_dir)
    subjects = pool_subjects(pool_dir, [i for i, _, _ in labelled])
    assert sorted(set(subjects.values())) == ["koi", "peach hibiscus"]
    report = validate_scorer(scorer, labelled, subjects, ScorerValidationConfig(per_hack=1))
    assert report.counts == TIERS
    loves = [Image.open(p) for _, p, t in labelled if t == "love"]
    direct = scorer.rate(loves)
    assert report.plain.tiers["love"].n == 4
    assert report.plain.tiers["love"].mu_mean == pytest.approx(np.mean([r.mu for r in direct]), abs=1e-6)
    okays = [r.mu for r in scorer.rate([Image.open(p) for _, p, t in labelled if t == "okay"])]
    assert report.plain.love_vs_okay == pytest.approx(auc([r.mu for r in direct], okays))
    named = scorer.rate(loves, [f"a {subjects[i]} painted in loose watercolour" for i, _, t in labelled if t == "love"])
    assert report.subject.tiers["love"].mu_mean == pytest.approx(np.mean([r.mu for r in named]), abs=1e-6)
    assert report.mu_shift["love"] == pytest.approx(report.subject.tiers["love"].mu_mean - report.plain.tiers["love"].mu_mean)
    assert abs(report.mu_shift["love"]) > 2e-5  # naming the subject moves the score (test_judge_hpsv3.py's bar)
    assert set(report.plain.adversarial) == {"blank", "template", "words", "blob"}
    assert report.plain.span == pytest.approx(report.plain.tiers["love"].mu_mean - report.plain.adversarial["blank"].mu_mean)
    text = report.text()
    for words in ("love > okay", "love > nope", "sky band", "painted words", "one blob", "span love - blank"):
        assert words in text


def test_validate_on_the_command_line(pool_dir, capsys):
    args = ["judge", "validate", "--scorer", "hpsv3", "--model", str(tiny_hpsv3()), "--pool", str(pool_dir),
            "--max-per-tier", "2"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == TIERS and report["plain"]["tiers"]["love"]["n"] == 2
    assert report["subject"]["prompt"] == "a {subject} painted in loose watercolour"
    assert main(args) == 0 and "separation, AUC on mu" in capsys.readouterr().out
