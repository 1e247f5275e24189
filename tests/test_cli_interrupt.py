"""Ctrl-C as a terminal sends it (SIGINT to the whole process group), to real processes: `salon train`
mid-step and the start policy mid-SFT each end with one line saying what to do next, exit 130, and
no traceback from them or their render workers. The start policy's SFT warns nothing on the way.

    .venv/bin/python -m pytest -q tests/test_cli_interrupt.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from train_support import SMOKE

pytestmark = pytest.mark.slow


def interrupted(argv: list[str], once: str, env: dict) -> tuple[int, str]:
    """Run `argv` in a process group of its own, press Ctrl-C once `once` is on its stderr (and 2 s more);
    returns its exit code and stderr."""
    # SIGINT at its default, as a terminal leaves it: a suite started in the background by a non-interactive shell
    # ignores it, and an ignored signal stays ignored across exec (Python then installs no KeyboardInterrupt).
    # PYTHONFAULTHANDLER: a process still running 120 s after the keystroke is aborted, and every thread's stack
    # says where it hung.
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONFAULTHANDLER": "1", **env},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err: list[str] = []
    chunks = iter(lambda: proc.stderr.read(256).decode(errors="replace"), "")
    reader = threading.Thread(target=lambda: err.extend(chunks))
    reader.start()
    deadline = time.monotonic() + 300
    while once not in "".join(err) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "".join(err)[-3000:]  # still running: the keystroke lands mid-work
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        code = proc.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGABRT)
        proc.wait(30)
        reader.join(30)
        pytest.fail("still running 120 s after Ctrl-C; its stacks:\n" + "".join(err)[-6000:])
    reader.join(30)
    return code, "".join(err)


def last_line(err: str) -> str:
    return [line for chunk in err.split("\n") for line in chunk.split("\r") if line.strip()][-1]


def test_ctrl_c_on_salon_train_says_resume_latest(tmp_path):
    out = tmp_path / "run"
    code, err = interrupted([sys.executable, "-m", "salon.apps.cli", "train", SMOKE, "--output-dir", str(out),
                             "--max-steps", "50"], once="train:", env={"HF_HOME": str(tmp_path / "hf")})
    assert code == 130 and "Traceback" not in err, err[-3000:]
    assert last_line(err) == (f"salon train: interrupted; continue from the last checkpoint with `salon train {SMOKE} "
                              f"--output-dir {out} --resume latest`")


def test_ctrl_c_on_the_start_policy_is_one_line(tmp_path):
    out = tmp_path / "start"
    code, err = interrupted([sys.executable, "-m", "salon.train.start.policy", str(out), "--sketches", "200",
                             "--max-steps", "2000", "--check", "2", "--render", "0"], once="policy:", env={})
    assert code == 130 and "Traceback" not in err, err[-3000:]
    assert last_line(err) == f"interrupted: {out} is not a finished policy; run the same command again to start it over"


def test_the_start_policy_warns_nothing(tmp_path):
    done = subprocess.run([sys.executable, "-m", "salon.train.start.policy", str(tmp_path / "start"), "--sketches",
                           "40", "--max-steps", "2", "--check", "2", "--render", "0"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "default"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr and "deprecated" not in done.stderr, done.stderr  # gradient_checkpointing
