"""With `--json`, the whole stdout of a real `salon` process is JSON: one document, or JSON lines
where the command documents them (render, pool import, pool ls, judge). Everything else goes to
stderr. Also: references for `salon judge` from a local pool folder and a `salon pool export`.
(`salon train --json` is in test_train_cli_output.py; curate generate, judge --scorer hpsv3 and
eval parse their --json output in their own tests.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from train_support import EVAL_ARGS

EXAMPLE = Path(__file__).resolve().parent.parent / "curate" / "examples" / "still_02_teacup.js"
SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n}\n"


def salon(*args, cwd=None) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "salon.apps.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=600, cwd=cwd, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                                                 # the eval test's oracles live in train_support
                                                                 "PYTHONPATH": os.pathsep.join(filter(None, [
                                                                     str(Path(__file__).parent),
                                                                     os.environ.get("PYTHONPATH")]))})
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return done


def document(done) -> dict:
    return json.loads(done.stdout)  # the whole stdout: nothing before or after the document


def lines(done) -> list[dict]:
    assert done.stdout.endswith("\n") or not done.stdout
    return [json.loads(line) for line in done.stdout.splitlines()]  # every line of stdout


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    from conftest import _png

    work = tmp_path_factory.mktemp("json")
    rows = []
    for i in range(3):
        (work / f"p{i}.png").write_bytes(_png(i, size=96))
        rows.append(json.dumps({"code": SKETCH + f"//{i}\n", "image": f"p{i}.png", "model": "m:x"}))
    (work / "rows.jsonl").write_text("\n".join(rows) + "\n")
    imported = lines(salon("pool", "import", work / "rows.jsonl", "--pool", work / "pool", "--json"))
    ids = [r["id"] for r in imported]
    for cid, tier in zip(ids, ["love", "okay", "nope"]):
        assert document(salon("pool", "label", cid, tier, "--by", "ana", "--pool", work / "pool", "--json"))["tier"] == tier
    return {"work": work, "dir": work / "pool", "ids": ids}


def test_pool_commands(pool):
    p = pool["dir"]
    assert document(salon("pool", "stats", "--pool", p, "--json"))["candidates"] == 3
    assert [r["id"] for r in lines(salon("pool", "ls", "--pool", p, "--json"))] == pool["ids"]
    exported = document(salon("pool", "export", "--to", pool["work"] / "exp", "--pool", p, "--json"))
    assert exported["labelled"] == 3
    assert document(salon("pool", "check", "--pool", p, "--json")) == {"bad_images": [], "fixed": False}
    assert document(salon("pool", "dups", "--pool", p, "--json"))["near_duplicates"] == []


@pytest.mark.parametrize("source", ["pool", "exp"])
def test_judge_json_with_references_from_a_pool_or_an_export(pool, source, tmp_path):
    refs = pool["work"] / source
    if source == "exp" and not refs.exists():
        salon("pool", "export", "--to", refs, "--pool", pool["dir"], "--json")
    from conftest import _png

    from salon.models.tiny import build_vl

    model = build_vl(pool["work"] / "judge")  # idempotent: built once for both sources
    (tmp_path / "a.png").write_bytes(_png(7, size=96))
    done = salon("judge", "--model", model, "--refs", refs, tmp_path / "a.png", "--json", cwd=tmp_path)
    (row,) = lines(done)
    assert {v["reference"] for v in row["verdicts"]} == set(pool["ids"][:2])  # love and okay, by pool id
    assert 0 <= row["score"] <= 1
    kind = "pool" if source == "pool" else "export"
    assert f"{kind}:{refs.resolve()}@" in done.stderr  # the release it used, named on stderr


def test_render_json_lines(tmp_path):
    done = salon("render", EXAMPLE, "--out-dir", tmp_path, "--json", "--timeout", "60")
    (row,) = lines(done)
    assert row["file"] == str(EXAMPLE) and row["ok"] in (True, False)


def test_run_commands(smoke_run, tmp_path):
    run = smoke_run["out"]
    audit = document(salon("audit", run, "--json", "--out", tmp_path / "audit"))
    assert audit["rollouts"] > 0
    compared = document(salon("compare", run, "--json"))
    assert compared


def test_eval_json(smoke_eval):
    report = document(salon("eval", smoke_eval["out"], *EVAL_ARGS, "--resume", "--json"))
    assert [c["step"] for c in report["checkpoints"]] == [c["step"] for c in smoke_eval["report"]["checkpoints"]]
