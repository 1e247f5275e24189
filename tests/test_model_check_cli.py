"""A mistyped model id or path is refused in a line that says which and what to do, before anything
is built or written: `salon train` (with the config's other problems, all at once) and `salon judge`,
offline, against a Hub that does not know the id (a fake Hub on 127.0.0.1), and against a Hub that
cannot be reached."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import hubserver

SMOKE = str(Path(__file__).resolve().parent.parent / "train" / "configs" / "smoke.yaml")


def train(tmp_path, *sets, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "salon.apps.cli", "train", SMOKE, "--output-dir",
                           str(tmp_path / "run"), "--set", *sets], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HOME": str(tmp_path / "hf"), **env})


def problems(done: subprocess.CompletedProcess, tmp_path) -> list[str]:
    """The problems `salon train` listed (each `  - --set KEY=...`), after checking it stopped cleanly."""
    assert done.returncode == 2 and done.stdout == ""
    assert not (tmp_path / "run").exists()  # nothing built or written
    assert "Traceback" not in done.stderr and done.stderr.startswith("salon train: --set has "), done.stderr
    return [line.removeprefix("  - --set ") for line in done.stderr.strip().splitlines()[1:]]


def one_line(done: subprocess.CompletedProcess, tmp_path) -> str:
    found = problems(done, tmp_path)
    assert len(found) == 1, found
    return found[0]


def test_offline_uncached_id(tmp_path):
    line = one_line(train(tmp_path, "policy.model=Qwen/Qwen3-0.6B-Instrct", env={"HF_HUB_OFFLINE": "1"}), tmp_path)
    assert line.startswith("policy.model=Qwen/Qwen3-0.6B-Instrct: no such folder here, not in the "
                           "local Hugging Face cache, and HF_HUB_OFFLINE is set")
    assert "hf download Qwen/Qwen3-0.6B-Instrct" in line and "tiny:qwen3 or random:qwen3-1.7b" in line


def test_missing_local_path(tmp_path):
    line = one_line(train(tmp_path, f"judge.model={tmp_path}/models/qwen-vl", env={"HF_HUB_OFFLINE": "1"}), tmp_path)
    assert f"judge.model={tmp_path}/models/qwen-vl: no such folder" in line
    assert "tiny:qwen2_5_vl or random:qwen2.5-vl-7b" in line


def test_id_the_hub_does_not_know(tmp_path):
    with hubserver.serve() as (url, _hub):
        line = one_line(train(tmp_path, "policy.model=Qwen/Qwen3-0.6B-Instrct",
                              env={"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": url}), tmp_path)
    assert f"no model Qwen/Qwen3-0.6B-Instrct on the Hub ({url}); check the spelling" in line


def test_hub_unreachable(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = one_line(train(tmp_path, "policy.model=Qwen/Qwen3-0.6B", env={
        "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:{port}"}), tmp_path)
    assert f"the Hub (http://127.0.0.1:{port}) cannot be reached" in line and "HF_HUB_OFFLINE=1" in line


def test_model_problems_come_with_the_field_problems_at_once(tmp_path):
    found = problems(train(tmp_path, "policy.model=/no/policy", "judge.model=tiny:qwen9", "grpo.beta=-1",
                           "judge.kwargs={max_pixels: 3}", env={"HF_HUB_OFFLINE": "1"}), tmp_path)
    assert len(found) == 4, found
    assert found[0].startswith("policy.model=/no/policy: no such folder")
    assert found[1].startswith("grpo.beta=-1")
    assert found[2].startswith("judge.model=tiny:qwen9: unknown tiny model; use tiny:qwen2, tiny:qwen3")
    assert found[3] == "judge.kwargs of the transformers judge: max_pixels=3: must be at least 784"


@pytest.mark.parametrize("model", ["Qwen/Qwen2.5-VL-7B-Instrct", "./no-such-judge"])
def test_salon_judge_checks_its_model(tmp_path, make_png, model):
    (tmp_path / "a.png").write_bytes(make_png(1))
    (tmp_path / "refs").mkdir()
    (tmp_path / "refs" / "r.png").write_bytes(make_png(2))
    done = subprocess.run([sys.executable, "-m", "salon.apps.cli", "judge", "--model", model, "--refs",
                           str(tmp_path / "refs"), str(tmp_path / "a.png")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 2 and done.stderr.startswith(f"salon judge: --model={model}: no such folder")
    assert len(done.stderr.strip().splitlines()) == 1
