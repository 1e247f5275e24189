"""The README's section 4 starts with a judge that runs on a fresh machine, offline: its first shell
block is run here exactly as written, in bash, in an empty folder that sees the repository's
`curate/` and has the venv's `salon` on PATH, with an empty models cache (tiny:qwen2_5_vl is
built there) and HF_HUB_OFFLINE=1.

    .venv/bin/python -m pytest -q tests/test_readme_judge.py     # about two minutes: it renders 15 sketches
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def section_four_first_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## 4. Judge\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


@pytest.mark.browser
@pytest.mark.slow
def test_the_first_judge_block_runs_offline_as_written(tmp_path):
    block = section_four_first_block()
    assert "salon judge --model tiny:qwen2_5_vl" in block  # the section leads with the offline judge
    (tmp_path / "curate").symlink_to(ROOT / "curate")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "SALON_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    scored = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"image"')]
    assert len(scored) == 1 and scored[0]["image"] == "salon-renders/koi_01_pond.png"
    assert 0 <= scored[0]["score"] <= 1 and len(scored[0]["verdicts"]) == 4  # 2 love + 2 okay references
    assert "love beats okay" in done.stdout  # validate's report, against the same labels
    assert (tmp_path / "cache" / "models" / "tiny-qwen2_5_vl" / "config.json").is_file()
