"""Pull the sketch out of a raw model reply.

Models wrap code in prose, markdown fences and thinking blocks, and sometimes stop mid-sketch.
`extract_code` returns the JavaScript to render, or None when the reply holds no sketch (the
candidate is then a `no_sketch` reject); the gate of the render sandbox decides whether what
came out is acceptable (a sketch cut off mid-way fails there as a syntax error). The cases it
handles are the corpus in `tests/test_curate_extract.py`. Every pattern here is linear in the
length of the reply: replies can be a megabyte of garbage.

    python -m salon.curate.extract reply.txt
"""

from __future__ import annotations

import json
import re
import sys
import textwrap

# Thinking blocks: <think>, <thinking>, <reasoning>, and Kimi's ◁think▷; unclosed ones run to
# the end (the model never left them, so nothing after them is an answer).
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)|◁think▷.*?(?:◁/think▷|\Z)",
                    re.S | re.I)
# A closing tag with no opening one: the chat template opened the block inside the prompt
# (Qwen3 with thinking on), so everything before the last closing tag is thinking.
_CLOSE_THINK = re.compile(r"</(?:think|thinking|reasoning)>|◁/think▷", re.I)
# A fence: ``` or ~~~, an optional language, an info string without backticks, the body up to
# the matching fence or the end of the reply (truncated output).
_FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*\n(.*?)(?:^[ \t]*(\1)|\Z)",
                    re.S | re.M)
_SKETCH_MARK = re.compile(r"\bfunction\s+(setup|draw)\s*\(|\b(setup|draw)\s*=\s*(function|\()")
_JS_LANGS = {"", "js", "javascript", "p5", "p5js", "jsx", "ts", "typescript", "html", "mjs"}
_CODE_START = re.compile(
    r"^\s*(function\b|let\b|const\b|var\b|//|/\*|class\b|[A-Za-z_$][\w$.]*\s*[=(])")


def extract_code(reply: str) -> str | None:
    """Return the sketch inside `reply`, or None if there is none.

    Order of preference: the last closed fenced block that defines setup()/draw() (models that
    show a draft and then a fix put the fix last), together with JavaScript helper blocks that
    come before it; the last unclosed such block (truncated output); a
    JSON object whose string value is a sketch; a reply that is itself a sketch, from its
    first line of code.
    """
    text = strip_thinking(reply.replace("\r\n", "\n"))
    blocks = _fences(text)
    sketches = [(i, closed) for i, (_, body, closed) in enumerate(blocks)
                if _SKETCH_MARK.search(body)]
    if sketches:
        closed = [s for s in sketches if s[1]]
        chosen = (closed or sketches)[-1][0]
        helpers = [body for lang, body, ok in blocks[:chosen] if ok and lang in _JS_LANGS
                   and not _SKETCH_MARK.search(body)
                   and re.search(r"\bfunction\s+\w+\s*\(", body)]
        return _finish("\n".join(helpers + [_strip_html(blocks[chosen][1])]))
    if blocks:
        return None  # fenced, but no block is a sketch: the code is not in the prose either
    if not _SKETCH_MARK.search(text):
        return None
    return _from_json(text) or _finish(_from_first_code_line(_strip_html(text)))


def strip_thinking(text: str) -> str:
    text = _THINK.sub("", text)
    closes = list(_CLOSE_THINK.finditer(text))
    return text[closes[-1].end():] if closes else text


def _fences(text: str) -> list[tuple[str, str, bool]]:
    """(language, body, closed) for each fenced block, in order."""
    return [(m.group(2).lower(), textwrap.dedent(m.group(3)), m.group(4) is not None)
            for m in _FENCE.finditer(text)]


def _strip_html(code: str) -> str:
    """A reply that is a whole HTML page: keep the inline <script> bodies that hold the sketch."""
    if "<script" not in code.lower():
        return code
    scripts = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)(?:</script>|\Z)", code, re.S | re.I)
    return "\n".join(s for s in scripts if _SKETCH_MARK.search(s)) or code


def _from_first_code_line(text: str) -> str:
    lines = text.split("\n")
    first_mark = next(i for i, line in enumerate(lines) if _SKETCH_MARK.search(line))
    start = first_mark
    while start > 0 and _CODE_START.match(lines[start - 1]):
        start -= 1
    end = len(lines)
    # Trailing prose after the last closing brace is not code.
    while end > first_mark + 1 and not lines[end - 1].strip().endswith(("}", ";", ")")):
        end -= 1
    return "\n".join(lines[start:end])


def _from_json(text: str) -> str | None:
    """Some servers in JSON mode answer {"code": "..."}."""
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        data = json.loads(stripped)
    except ValueError:
        return None
    if isinstance(data, dict):
        for value in data.values():
            if isinstance(value, str) and _SKETCH_MARK.search(value):
                return extract_code(value)
    return None


def _finish(code: str) -> str | None:
    code = code.strip()
    return code + "\n" if code else None


if __name__ == "__main__":
    code = extract_code(open(sys.argv[1], encoding="utf-8", errors="replace").read())
    print(code if code is not None else "no sketch found", end="")
