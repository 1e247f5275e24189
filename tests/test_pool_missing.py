"""A mistyped pool path is refused by every command that reads a pool, and nothing is created:
`salon pool stats|label|export|check|dups|ls`, `salon app` and `salon judge validate` say how to
make a pool; only `salon pool import` (and `salon app --new`) start one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from salon.apps.cli import main

SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n}\n"

READERS = [
    ["pool", "stats"],
    ["pool", "stats", "--json"],
    ["pool", "label", "abcdef12", "love", "--by", "ana"],
    ["pool", "export", "--to", "{tmp}/exp"],
    ["pool", "check"],
    ["pool", "dups"],
    ["pool", "push", "me/pool"],
    ["pool", "ls"],
]


@pytest.mark.parametrize("argv", READERS, ids=lambda a: " ".join(a[:2]))
def test_reader_refuses_a_missing_pool_and_creates_nothing(capsys, tmp_path, argv):
    typo = tmp_path / "nopool"
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = main([*argv, "--pool", str(typo)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert f"no pool at {typo}: the folder does not exist" in err
    assert f"salon pool import PATH... --pool {typo}" in err
    assert not typo.exists() and not (tmp_path / "exp").exists()


def test_a_folder_without_pool_db_is_refused_and_left_alone(capsys, tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "a.png").write_bytes(b"x")
    assert main(["pool", "stats", "--pool", str(tmp_path / "photos")]) == 2
    assert "holds no pool (no pool.db)" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "photos").iterdir()) == ["a.png"]


def test_default_pool_missing_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SALON_POOL", raising=False)
    assert main(["pool", "stats"]) == 2
    assert "no pool at salon-pool" in capsys.readouterr().err
    assert not (tmp_path / "salon-pool").exists()


def test_import_creates_then_readers_work(capsys, tmp_path, make_png):
    (tmp_path / "a.js").write_text(SKETCH)
    (tmp_path / "a.png").write_bytes(make_png(1))
    pool = tmp_path / "new"
    assert main(["pool", "import", str(tmp_path / "a.js"), "--pool", str(pool), "--model", "m:a"]) == 0
    capsys.readouterr()
    assert main(["pool", "stats", "--json", "--pool", str(pool)]) == 0
    assert json.loads(capsys.readouterr().out)["candidates"] == 1


def test_judge_validate_refuses_a_missing_pool(capsys, tmp_path):
    code = main(["judge", "validate", "--pool", str(tmp_path / "typo"), "--model", "tiny:qwen2.5-vl"])
    assert code == 2 and "no pool at" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def _app(args, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    return subprocess.run([sys.executable, "-m", "salon.apps.cli", "app", "--port", "0", *args],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)


def test_app_refuses_a_missing_pool(tmp_path):
    done = _app(["--pool", "pool-typo"], tmp_path)
    assert done.returncode == 2 and "no pool at pool-typo: the folder does not exist" in done.stderr
    assert "give --new to start the app on an empty pool there" in done.stderr
    assert not (tmp_path / "pool-typo").exists()


def test_app_new_starts_an_empty_pool(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "salon.apps.cli", "app", "--port", "0", "--pool", "fresh",
                             "--new", "--user", "ann"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"})
    try:
        for line in proc.stdout:
            if "Running on local URL" in line:
                break
        assert (Path(tmp_path) / "fresh" / "pool.db").is_file()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
