"""The gate: stable violation codes, static checks on sketch source, and the final verdict.

Static checks run in Python before a browser is touched: the names the sketch uses, read from
its syntax tree against the sketch's world (names.py, world.py: p5's painting is bare_primitives,
its text text_label, the page and the network external_access, anything else unknown_name), the
shapes of its world calls (call_shapes.py: call_shape, path_order), and
patterns on the source with comments and string contents blanked (prose in comments must not trip
a check; a URL inside a string must not hide a `fetch`). What static checks cannot see (a name
made at run time) the page reports with the same codes (page/guard.js). `verdict()` merges both
into the list a RenderResult carries.

    python -m salon.curate.sandbox.gate sketch.js      # print the static violations of one file
"""

from __future__ import annotations

import re
import sys

from salon.curate.sandbox import call_shapes, names
from salon.pool.paint import BLANK_FRACTION

# Stable codes: stored with every candidate and published in the dataset, so a code is only ever
# added, never renamed. Order is the order they are reported in.
VIOLATIONS = (
    "no_sketch",
    "syntax_error",
    "not_webgl",
    "external_access",
    "text_label",
    "bare_primitives",
    "unknown_brush_method",
    "unknown_name",
    "no_painting_calls",
    # a world call in a shape p5.brush or p5 throws on (call_shapes.py): too few arguments or one always
    # undefined, a radius of 0 or less, a brush or field p5.brush does not have, points that are no
    # [x, y] arrays, an object lacking a field its type needs
    "call_shape",
    # brush.vertex / endShape with no beginShape open, an endShape after fewer than 2 vertices,
    # brush.move / endStroke with no beginStroke open (call_shapes.py)
    "path_order",
    "runtime_error",
    "timeout",
    "blank_canvas",
)
# Not a violation: the sandbox could not render at all (infrastructure). Never a bad painting.
RENDER_UNAVAILABLE = "render_unavailable"

# p5.brush 2.2.2's exported API (tests check this against `Object.keys(brush)` in the page).
BRUSH_API = frozenset(
    "Plot Polygon Position add addField arc beginShape beginStroke box circle clip endShape "
    "endStroke field fill fillBleed fillTexture flowLine hatch hatchArray hatchStyle instance "
    "line listFields load mass massArray move noClip noField noFill noHatch noMass noStroke "
    "noWash noiseSeed pick polygon rect refreshField scaleBrushes seed set spline stroke "
    "strokeWeight vertex wRand wash wiggle".split()
)
# Calls that put paint on the canvas. A sketch without one of these paints nothing. A Polygon or
# Plot of p5.brush's paints through its own methods (fill, draw, hatch), which are no brush.* call.
BRUSH_PAINTING = frozenset(
    "arc beginStroke circle endShape endStroke flowLine hatch line polygon rect spline "
    "wash box Polygon Plot".split()
)
EXTERNAL = (
    r"\bfetch\s*\(", r"\bXMLHttpRequest\b", r"\bWebSocket\b", r"\bEventSource\b",
    r"\bsendBeacon\b", r"\bimportScripts\b", r"\bimport\s*\(", r"\beval\s*\(",
    r"\bFunction\s*\(", r"\bWorker\s*\(", r"\bserviceWorker\b", r"\bRTCPeerConnection\b",
    r"\bload(Image|JSON|Strings|Table|XML|Bytes|Model|Shader|Sound|Pixels)\s*\(",
    r"\bhttp(Get|Post|Do)\s*\(", r"\bcreate(Img|Video|Audio|Capture|A|Element|Div|P|Span|"
    r"Button|Input|Select|Slider|Checkbox|Radio|FileInput|ColorPicker)\s*\(",
    r"\bdocument\s*\.", r"\bwindow\s*\.\s*(open|location)\b", r"\blocation\s*(\.|=)",
    r"\b(alert|confirm|prompt)\s*\(", r"\binnerHTML\b", r"\bouterHTML\b",
    r"\binsertAdjacentHTML\b", r"\bnavigator\s*\.", r"\bnew\s+Image\s*\(",
    r"\bsetTimeout\s*\(\s*[\"'`]", r"\bsetInterval\s*\(\s*[\"'`]",
)
_EXTERNAL_RE = re.compile("|".join(EXTERNAL))
_STRING_URL_RE = re.compile(r"""["'`]\s*(https?:|wss?:|file:|data:|blob:|//)""", re.I)
_BRUSH_CALL_RE = re.compile(r"\bbrush\s*\.\s*([A-Za-z_$][\w$]*)")
_ENTRY_RE = re.compile(r"\bfunction\s+(setup|draw)\s*\(|\b(setup|draw)\s*=")
_WEBGL_RE = re.compile(r"\bcreateCanvas\s*\([^;]*\bWEBGL\b")


def strip_comments(code: str) -> tuple[str, str]:
    """Return (code without comments, the same with string bodies blanked to spaces).

    A small scanner rather than regexes, so `"//"` inside a string or a URL is not a comment.
    Regex literals are rare in sketches; a `/` after an operator is treated as division, which
    at worst keeps a comment-like run inside a regex literal.
    """
    out, blank = [], []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        nxt = code[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            end = code.find("\n", i)
            i = n if end < 0 else end
        elif c == "/" and nxt == "*":
            end = code.find("*/", i + 2)
            i = n if end < 0 else end + 2
            out.append(" ")
            blank.append(" ")
        elif c in "\"'`":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            literal = code[i : j + 1]
            out.append(literal)
            blank.append(c + " " * max(0, len(literal) - 2) + c[: len(literal) - 1])
            i = j + 1
        else:
            out.append(c)
            blank.append(c)
            i += 1
    return "".join(out), "".join(blank)


def static_violations(code: str | None) -> list[str]:
    """Violations visible in the source alone, in VIOLATIONS order. Empty list = may render."""
    if code is None or not code.strip():
        return ["no_sketch"]
    stripped, bare = strip_comments(code)
    found: set[str] = set()
    if not _ENTRY_RE.search(bare):
        found.add("no_sketch")
    if _braces_unbalanced(bare):
        found.add("syntax_error")
    if "createCanvas" in bare and not _WEBGL_RE.search(bare):
        found.add("not_webgl")
    if _EXTERNAL_RE.search(bare) or _STRING_URL_RE.search(stripped):
        found.add("external_access")
    # p5's painting, text and page: names outside the sketch's world (names.py, world.py); world
    # calls in a shape they throw on (call_shapes.py)
    found.update(code for code, _ in names.outside_world(code) + call_shapes.mistakes(code))
    methods = set(_BRUSH_CALL_RE.findall(bare))
    if methods - BRUSH_API:
        found.add("unknown_brush_method")
    if not methods & BRUSH_PAINTING:
        found.add("no_painting_calls")
    return [v for v in VIOLATIONS if v in found]


def static_details(code: str | None) -> list[str]:
    """What the static checks that read the syntax tree found, each with its line, for people (and a
    rejection's `details`): names outside the world, then call shapes."""
    return [detail for _, detail in names.outside_world(code or "") + call_shapes.mistakes(code)]


def _braces_unbalanced(bare: str) -> bool:
    """Truncated replies end mid-block; the browser would report it too, but cheaper here."""
    depth = 0
    for ch in bare:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth < 0:
                return True
    return depth != 0


def verdict(static: list[str], runtime: list[str], paint_fraction: float | None) -> list[str]:
    """Merge static and page-reported codes, add `blank_canvas`, in stable order."""
    found = set(static) | set(runtime)
    if paint_fraction is not None and paint_fraction < BLANK_FRACTION:
        found.add("blank_canvas")
    return [v for v in VIOLATIONS if v in found]


if __name__ == "__main__":
    source = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    print(" ".join(static_violations(source)) or "ok")
