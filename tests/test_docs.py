"""The README and every page under docs/ say what the code does: each `salon` command in their
shell blocks parses with the real command line, and each relative link or image resolves.

Synopsis lines (`[--flag N]`, `a|b`, `ARG...`) are usage, not commands, and are left out."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from salon.apps.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("bash", "sh", "shell")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def shell_lines(text: str):
    """The lines of ```bash blocks, continuations joined."""
    language, block = None, []
    for line in text.splitlines():
        if line.startswith("```"):
            if language is None:
                language = line[3:].strip()
                continue
            if language in SHELL:
                yield from "\n".join(block).replace("\\\n", " ").splitlines()
            language, block = None, []
        elif language is not None:
            block.append(line)


def salon_commands(text: str) -> list[list[str]]:
    found = []
    for line in shell_lines(text):
        line = re.sub(r'"\$\(.*?\)"', "VALUE", line)  # a command substitution stands for one word
        for part in re.split(r"&&|;", line):
            words = shlex.split(part, comments=True)
            if ">" in words:  # a redirection: what follows is the shell's
                words = words[:words.index(">")]
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value salon ...
                words = words[1:]
            words = [w for w in words if not re.fullmatch(r"\$[A-Z_]+", w)]  # $QUICK_TRAIN: empty unless set
            if not words or Path(words[0]).name != "salon" or words[-1:] == ["&"] and not words.pop():
                continue
            if any("[" in w or "|" in w or w.endswith("...") for w in words):
                continue
            found.append(words[1:])
    return found


def slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_page_is_read():
    assert {p.name for p in PAGES} >= {"README.md", "sandbox.md", "gpu.md", "learn-tiny.md", "layout.md"}
    assert sum(len(salon_commands(p.read_text())) for p in PAGES) > 40


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_salon_command_parses(page):
    parser = build_parser()
    for argv in salon_commands(page.read_text()):
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{page.name}: salon {shlex.join(argv)} does not parse")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    text = page.read_text()
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        assert where.exists(), f"{page.name}: {target} does not exist"
        if anchor and where.suffix == ".md":
            headings = {slug(h) for h in re.findall(r"^#+ (.*)$", where.read_text(), re.M)}
            assert anchor in headings, f"{page.name}: no heading #{anchor} in {where.name}"
