"""The Space folder stages into a directory that the `openenv` CLI accepts for `openenv push`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

pytest.importorskip("openenv")

ROOT = Path(__file__).resolve().parent.parent


def test_staged_space_passes_openenv_validation(tmp_path):
    from openenv.cli._cli_utils import validate_env_structure

    subprocess.run([str(ROOT / "space" / "stage.sh"), str(tmp_path / "s")], check=True, capture_output=True)
    assert validate_env_structure(tmp_path / "s") == []
    manifest = yaml.safe_load((tmp_path / "s" / "openenv.yaml").read_text())
    module, _, attr = manifest["app"].partition(":")
    import importlib

    assert callable(getattr(importlib.import_module(module), attr))
    assert (tmp_path / "s" / "salon" / "train" / "env" / "server.py").is_file()
    assert (tmp_path / "s" / "salon" / "package-lock.json").is_file()
