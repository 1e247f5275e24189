"""Every `salon` subcommand answers a flag it does not know with its own usage, and abbreviated
flags are refused (`--max-step` is not `--max-steps`), through the real command line; a bare
`salon` prints the help and exits 0."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from salon.apps.cli import build_parser, main


def _leaves(parser: argparse.ArgumentParser, path=()):
    """Every runnable command path, e.g. ("pool", "stats"), from the parser itself."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, (*path, name))


COMMANDS = list(_leaves(build_parser()))


def test_the_walk_finds_every_command():
    assert {"train", "audit", "eval", "render", "app", "judge", "compare"} <= {c[0] for c in COMMANDS}
    assert ("pool", "ls") in COMMANDS and ("curate", "generate") in COMMANDS and ("env", "serve") in COMMANDS


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_unknown_flag_shows_the_subcommands_usage(capsys, command):
    with pytest.raises(SystemExit) as e:
        main([*command, "--no-such-flag"])
    err = capsys.readouterr().err
    name = "salon " + " ".join(command)
    assert e.value.code == 2
    assert err.startswith(f"usage: {name} ") and f"\n{name}: error: " in err  # its own usage, its own name
    assert "usage: salon [-h] [--version] COMMAND" not in err


@pytest.mark.parametrize("argv, wanted", [
    (["eval", "RUN", "--oracles", "x"], "salon eval: error: unrecognized arguments: --oracles x"),
    (["eval", "RUN", "--max-step", "2"], "salon eval: error: unrecognized arguments: --max-step 2"),
    (["train", "smoke.yaml", "--max-step", "2"], "salon train: error: unrecognized arguments: --max-step 2"),
    (["audit", "RUN", "--sus", "2", "--no-fig"], "salon audit: error: unrecognized arguments: --sus 2 --no-fig"),
    (["pool", "stats", "--jso"], "salon pool stats: error: unrecognized arguments: --jso"),
])
def test_abbreviations_are_refused_in_a_real_process(argv, wanted):
    done = subprocess.run([sys.executable, "-m", "salon.apps.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert wanted in done.stderr and f"usage: salon {argv[0]}" in done.stderr


def test_full_flags_still_parse():
    args = build_parser().parse_args(["audit", "RUN", "--suspects", "2", "--no-figures", "--json"])
    assert args.suspects == 2 and args.no_figures and args.json


def test_bare_salon_prints_the_help_and_succeeds():
    done = subprocess.run([sys.executable, "-m", "salon.apps.cli"], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: salon [-h] [--version] COMMAND")
    assert all(f"\n    {name} " in done.stdout for name in ("render", "pool", "train", "audit", "app"))
