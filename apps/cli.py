"""The `salon` command: one entry point, one subcommand module per area.

    salon render SKETCH... [--json]      salon pool stats|label|import|export|push|pull
    salon curate generate|guides         salon app       salon judge       salon train / audit / eval / compare
    salon env serve

Each subcommand lives in `salon.apps.cmd_<name>` and exposes `add_parser(subparsers)`; the
parser's `run(args) -> int` does the work. Heavy imports (torch, playwright, gradio) happen
inside `run`, so `salon --help` (and bare `salon`, the same help) stays fast. Only this module
turns `SalonError` into a message.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from salon.apps.output import json_mode
from salon.pool.card import salon_version
from salon.pool.errors import SalonError

COMMANDS = ["render", "pool", "curate", "app", "judge", "train", "audit", "eval", "compare", "env"]


class Parser(argparse.ArgumentParser):
    """argparse, stricter: no abbreviated flags (`--max-step` is not `--max-steps`), and a flag a
    subcommand does not know is reported with that subcommand's usage, not the top level's."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self.prog != "salon":  # a subcommand: its unknown flags are its own error
            self.error("unrecognized arguments: " + " ".join(extras))
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="salon", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"salon {salon_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")  # none: the help, below
    for name in COMMANDS:
        importlib.import_module(f"salon.apps.cmd_{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `salon`: what it can do, not an error
        parser.print_help()
        return 0
    try:
        with json_mode(getattr(args, "json", False)):  # --json: stdout carries the JSON alone
            return int(args.run(args) or 0)
    except SalonError as e:
        print(f"salon {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
