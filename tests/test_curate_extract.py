"""Extraction of sketches from a corpus of messy model replies (salon.curate.extract)."""

from __future__ import annotations

import pytest

from salon.curate.extract import extract_code

SKETCH = """function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  brush.scaleBrushes(3);
  brush.fill("#e8734a", 150);
  brush.circle(0, 0, 200);
  noLoop();
}"""
DRAFT = "function setup() {\n  createCanvas(600, 600, WEBGL);\n  // draft\n}"
HELPER = "function petal(a) {\n  brush.beginShape();\n  brush.vertex(0, 0);\n  brush.endShape(CLOSE);\n}"

# (name, reply, substrings the code must contain, substrings it must not contain);
# must-contain None means: no sketch in this reply.
CORPUS = [
    ("plain fence", f"```javascript\n{SKETCH}\n```", ["brush.circle(0, 0, 200)"], ["```"]),
    ("prose around fence", f"Here is a hibiscus!\n\n```js\n{SKETCH}\n```\n\nThe petals use layered "
     "washes (opacity 150).", ["createCanvas"], ["Here is", "petals use"]),
    ("upper-case language and info string", f"```JavaScript title=\"sketch.js\"\n{SKETCH}\n```",
     ["noLoop();"], ["title="]),
    ("tilde fence", f"~~~js\n{SKETCH}\n~~~", ["brush.fill"], ["~~~"]),
    ("think block with draft code", f"<think>Maybe:\n```js\n{DRAFT}\n```\nno, better colours."
     f"</think>\n```javascript\n{SKETCH}\n```", ["brush.circle"], ["// draft", "better colours"]),
    ("closing think tag only (template opened it)", f"I should paint a circle.\n```js\n{DRAFT}\n```"
     f"\n</think>\n\n```js\n{SKETCH}\n```", ["brush.circle"], ["// draft"]),
    ("kimi think markers", f"◁think▷plan {DRAFT}◁/think▷```js\n{SKETCH}\n```", ["brush.fill"],
     ["// draft"]),
    ("unclosed think (cut off while thinking)", f"<think>let me write\n```js\n{SKETCH}\n```\nhmm",
     None, None),
    ("truncated mid-sketch", "```javascript\nfunction setup() {\n  createCanvas(600, 600, WEBGL);"
     "\n  brush.fill(\"#e8", ["brush.fill(\"#e8"], ["```"]),
    ("closed block wins over a later truncated one", f"```js\n{SKETCH}\n```\nAnd a variant:\n"
     "```js\nfunction setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.fi",
     ["brush.circle"], ["brush.fi\n"]),
    ("draft then fix: the last block", f"First try:\n```js\n{DRAFT}\n```\nFixed:\n```js\n{SKETCH}\n```",
     ["brush.circle"], ["// draft"]),
    ("helper function in an earlier block", f"A helper:\n```js\n{HELPER}\n```\nThe sketch:\n"
     f"```js\n{SKETCH}\n```", ["function petal(a)", "brush.circle"], []),
    ("bare code, no fences", SKETCH, ["createCanvas"], []),
    ("bare code with prose before and after", f"Sure. Here you go:\n{SKETCH}\nThis paints a flower"
     " with soft edges.", ["createCanvas", "noLoop();"], ["Here you go", "soft edges"]),
    ("bare code with globals before setup", f"let petals = 5;\nconst R = 220;\n{SKETCH}",
     ["let petals = 5;", "const R = 220;"], []),
    ("html page", "```html\n<!DOCTYPE html><html><head><script src=\"p5.min.js\"></script>"
     f"</head><body><script>\n{SKETCH}\n</script></body></html>\n```", ["brush.circle"],
     ["<script", "DOCTYPE"]),
    ("indented fence in a list", "1. Paste this:\n   ```js\n" +
     "\n".join("   " + line for line in SKETCH.splitlines()) + "\n   ```", ["function setup() {"],
     []),
    ("sketch in a text-labelled fence", f"```text\n{SKETCH}\n```", ["brush.circle"], ["```"]),
    ("arrow-function setup", "```js\nconst setup = () => {\n  createCanvas(600, 600, WEBGL);\n};\n```",
     ["const setup = () =>"], []),
    ("instance mode", "```js\nnew p5((p) => {\n  p.setup = function () {\n    p.createCanvas(600, 600,"
     " p.WEBGL);\n  };\n});\n```", ["p.setup = function"], []),
    ("json answer", '{"code": "function setup() {\\n  createCanvas(600, 600, WEBGL);\\n}"}',
     ["createCanvas(600, 600, WEBGL)"], ['"code"']),
    ("windows newlines", f"```js\r\n{SKETCH}\r\n```\r\n".replace("\n", "\r\n").replace("\r\r", "\r"),
     ["brush.circle"], ["\r"]),
    ("fenced non-sketch code only", "```python\nprint('hello')\n```\nI cannot draw that.", None, None),
    ("refusal", "I'm sorry, but I can't help with that request.", None, None),
    ("empty", "", None, None),
    ("whitespace", "  \n\n\t ", None, None),
    ("garbage from a random model", "\ufffdazsheloter\x11 over\ufffdcustan\ufffd\ufffd,wer an\x04"
     "tancolour ``` ~~~ function ( { ]", None, None),
    ("empty fence", "```js\n```", None, None),
]


@pytest.mark.parametrize("name,reply,must,must_not", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus(name, reply, must, must_not):
    code = extract_code(reply)
    if must is None:
        assert code is None, f"{name}: expected no sketch, got {code!r}"
        return
    assert code is not None, f"{name}: no sketch extracted"
    for piece in must:
        assert piece in code, f"{name}: {piece!r} missing from {code!r}"
    for piece in must_not:
        assert piece not in code, f"{name}: {piece!r} leaked into {code!r}"
    assert code.endswith("\n") and not code.endswith("\n\n")


@pytest.mark.parametrize("reply", [
    "```" * 300_000,                                  # fences with no newline: no backtracking
    "<think>" + "x" * 1_000_000,                      # a megabyte of unclosed thinking
    "function setup() {" + " brush.circle(0,0,1);" * 50_000,  # one enormous line of code
    "a\n" * 500_000,                                  # a million short lines of prose
])
@pytest.mark.timeout(120)
def test_huge_replies_finish(reply):
    # A quadratic pattern would take hours on these and hit the timeout; linear ones take ms.
    code = extract_code(reply)
    assert code is None or code.startswith("function setup()")
