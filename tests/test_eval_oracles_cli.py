"""`salon eval`'s oracles are checked before anything is generated (arguments, models, whether a
server answers), all problems in one message within seconds; a judgement that fails during the
run is stored with its reason, summed up at the end of the output and in --json, never scored 0.

Real `salon` in a subprocess (the checks) or through its main (the run, on a copy of the shared
smoke run); the servers are real HTTP servers on 127.0.0.1: tests/curate_openai_server.py, whose
`error500` model answers every judging request with HTTP 500, and a port nothing listens on.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curate_openai_server import ChatServer

SMOKE = Path(__file__).resolve().parent.parent / "train" / "configs" / "smoke.yaml"


@pytest.fixture(scope="module")
def server():
    """A chat server on loopback that lists its behaviours (curate_openai_server): `error500` answers
    every judging request with HTTP 500."""
    with ChatServer([]) as s:
        yield s


def dead_port() -> int:
    with socket.socket() as s:  # bound, never listening: a connection is refused
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def eval_cli(run: Path, *oracles: str, more=()) -> subprocess.CompletedProcess:
    args = [a for o in oracles for a in ("--oracle", o)]
    return subprocess.run([sys.executable, "-m", "salon.apps.cli", "eval", str(run), *args, *more],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.fixture
def run(tmp_path) -> Path:
    """A run folder as far as the checks look: its config, no checkpoint."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "salon_train.yaml").write_text(SMOKE.read_text())
    return tmp_path / "run"


def test_every_oracle_problem_is_said_at_once_before_anything_runs(run):
    port = dead_port()
    t0 = time.perf_counter()
    done = eval_cli(run, "openai,model=gpt", f"openai,model=http://127.0.0.1:{port}/v1,label=dead",
                    "paint_fraction,colour=1",
                    "transformers,model=tiny:qwen9", f"hpsv3,model=http://127.0.0.1:{port}", "nosuchjudge")
    seconds = time.perf_counter() - t0
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "salon eval: --oracle has 6 problem(s):"
    problems = [line.removeprefix("  - ") for line in lines[1:]]
    assert problems[0].startswith("--oracle 'openai,model=gpt': model=gpt: the openai judge asks a server; give the "
                                  "server's URL")
    assert problems[1].startswith(f"--oracle 'openai,model=http://127.0.0.1:{port}/v1,label=dead': service down: "
                                  f"http://127.0.0.1:{port}/v1/models:") and "Connection refused" in problems[1]
    assert problems[1].endswith("start the server, or correct its URL (up to and including /v1)")
    assert problems[2] == ("--oracle 'paint_fraction,colour=1': the paint_fraction judge takes no colour; "
                           "it takes nothing")
    assert problems[3].startswith("--oracle 'transformers,model=tiny:qwen9': model=tiny:qwen9: unknown tiny model")
    assert "Connection refused" in problems[4] and "start the HPSv3 service" in problems[4]
    assert problems[5].startswith("--oracle 'nosuchjudge': unknown judge 'nosuchjudge'")
    assert seconds < 30 and not (run / "eval").exists()  # nothing generated, nothing written


def test_a_server_that_answers_passes_and_one_serving_another_model_does_not(run, server):
    done = eval_cli(run, f"openai,model={server.base_url},server_model=judge-b")
    assert done.returncode == 2
    assert f"{server.base_url} serves tiny, examples, " in done.stderr
    assert ", not judge-b: name one of them" in done.stderr
    # every oracle checked out: what stops the eval now is the run itself (no checkpoint, and --no-base)
    done = eval_cli(run, f"openai,model={server.base_url},server_model=error500", "paint_fraction",
                    more=["--no-base"])
    assert done.returncode == 2 and "no checkpoint-N folders to evaluate" in done.stderr, done.stderr


@pytest.mark.browser
@pytest.mark.slow
def test_a_judgement_that_fails_during_the_run_is_stored_with_its_reason(smoke_run, server, tmp_path, capsys):
    from salon.apps.cli import main
    from salon.train.eval.dataset import load_eval_dataset

    copy = tmp_path / "run"
    shutil.copytree(smoke_run["out"], copy, ignore=shutil.ignore_patterns("eval", "audit"))
    args = ["eval", str(copy), "--prompts", "sunflower", "--samples", "2", "--every", "3", "--no-base",
            "--oracle", f"openai,model={server.base_url},server_model=error500,attempts=1,label=vlm",
            "--oracle", "paint_fraction"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    reason = (f"HTTP 500 from {server.base_url}/chat/completions: " + '{"error": {"message": "internal error"}}'
              + " (after 1 attempts)")
    passed = report["checkpoints"][0]["oracle_missing"]["vlm"]
    assert passed >= 1 and report["missing"]["oracle_vlm"] == passed
    assert report["missing_reasons"] == {"oracle_vlm": [{"reason": reason, "count": passed}]}
    assert report["checkpoints"][0]["oracles"]["vlm"] is None  # missing, never 0
    assert report["checkpoints"][0]["oracles"]["paint_fraction"] is not None
    for row in load_eval_dataset(copy):
        if row["gate_passed"]:
            assert row["oracle_vlm"] is None and row["oracle_vlm_reason"] == reason and row["oracle_missing"] == ["vlm"]
    assert main([*args, "--resume"]) == 0  # the text output ends with the same sum
    out = capsys.readouterr().out
    assert f"  oracle_vlm {passed} x {reason}" in out.splitlines()
