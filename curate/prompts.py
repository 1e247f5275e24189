"""What the painter models are asked: the system prompt, the skeleton, subjects, messages.

The system prompt names a strict allowlist of ten p5.brush methods and no API reference: in the
prior art a 400-line reference made models invent methods, while an allowlist of ten cut
invented calls to about 1 in 300. `PROMPT_VERSION` is derived from the text of every prompt
here, so a candidate always records exactly which wording produced it.

    python -m salon.curate.prompts "peach hibiscus"      # print the messages for a subject
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from salon.pool.errors import ConfigError

CANVAS = 600

ALLOWED_BRUSH_METHODS = (
    "scaleBrushes", "noStroke", "fill", "noFill", "fillBleed", "fillTexture",
    "beginShape", "vertex", "endShape", "circle",
)

SKELETON = """\
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  angleMode(DEGREES);
  background("#f6f1e7");
  brush.scaleBrushes(3);
  brush.noStroke();

  // your painting: set brush.fill / brush.fillBleed / brush.fillTexture,
  // then draw shapes with brush.beginShape / brush.vertex / brush.endShape or brush.circle

  noLoop();
}
"""

SYSTEM_PROMPT = f"""\
You are a watercolour painter who paints with code. You write one complete p5.js sketch that
uses the p5.brush library to paint the subject you are given.

Use exactly this skeleton. The canvas is 600 x 600 WEBGL, so the origin (0, 0) is at the centre
and x and y run from -300 to 300.

```javascript
{SKELETON}```

Allowed p5.brush calls, and no others:
- brush.scaleBrushes(3) once, at the top of setup
- brush.noStroke()
- brush.fill(color, opacity): color is a hex string like "#e8734a", opacity 0-255
- brush.noFill()
- brush.fillBleed(strength): strength 0.05-0.4, how far the pigment bleeds
- brush.fillTexture(textureStrength, borderStrength): each 0-1
- brush.beginShape(), brush.vertex(x, y), brush.endShape(CLOSE): a filled polygon
- brush.circle(x, y, radius)

Plain JavaScript (variables, loops, Math, arrays) and p5's random(), noise(), sin(), cos(),
map(), lerp(), push(), pop(), translate(), rotate() are fine. Do not call p5 drawing functions
such as ellipse, rect, line, vertex or text directly; do not load files or images; do not touch
the page. Paint with layered translucent washes: 15 to 30 filled shapes, several overlapping
layers of one hue at opacities 40-200, soft bleeds, and let the subject fill most of the canvas.

Reply with the sketch in a single ```javascript code block and nothing else.
"""

USER_PROMPT = "Paint {prompt}."
GUIDED_SUFFIX = (
    " The photo shows a real {name}: use it for shape, colour and composition, but paint it "
    "loosely in watercolour rather than copying it."
)

CRITIC_PROMPT = """\
The first image is a watercolour painted with code for the subject "{name}"; {photo_clause}
Write a short critique (at most 120 words) for the painter: what to change in shape, colour,
layering and composition so the painting reads more clearly as {name} and more like loose,
layered watercolour. Give concrete instructions. Do not give a score or a rating, and do not
mention any other painting."""
CRITIC_PHOTO = "the second image is a photo of a real {name} for reference."
CRITIC_NO_PHOTO = "there is no reference photo."

REVISE_PROMPT = """\
A teacher looked at the painting your sketch made and wrote:

{critique}

Revise the sketch to follow the advice. Keep the same skeleton and the same allowed calls.
Reply with the complete revised sketch in a single ```javascript code block."""

PROMPT_VERSION = "v1+" + hashlib.sha256(
    "\x00".join([SYSTEM_PROMPT, USER_PROMPT, GUIDED_SUFFIX, CRITIC_PROMPT, CRITIC_PHOTO,
                 CRITIC_NO_PHOTO, REVISE_PROMPT]).encode()
).hexdigest()[:8]


@dataclass(frozen=True)
class Message:
    """One chat message; images are raw JPEG/PNG bytes, each backend encodes them its own way."""

    role: str
    text: str
    images: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Subject:
    name: str
    prompt: str
    taxon: str | None = None
    canvas: int = CANVAS

    def __post_init__(self):
        problems = []
        if not self.name.strip():
            problems.append("name is empty")
        if not self.prompt.strip():
            problems.append(f"subject {self.name!r}: prompt is empty")
        if self.canvas != CANVAS:
            problems.append(f"subject {self.name!r}: canvas {self.canvas} is not supported; "
                            f"the skeleton and the sandbox paint at {CANVAS}")
        if problems:
            raise ConfigError(problems, where="subject")

    @property
    def slug(self) -> str:
        return "-".join("".join(c if c.isalnum() else " " for c in self.name.lower()).split())


@dataclass(frozen=True)
class SubjectBook:
    subjects: dict[str, Subject] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "SubjectBook":
        """Subjects from a YAML list of {name, prompt, taxon}; the bundled file by default."""
        import yaml

        if path is None:
            text = resources.files("salon.curate").joinpath("subjects.yaml").read_text("utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        rows = yaml.safe_load(text) or []
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ConfigError(["expected a list of mappings with name, prompt, taxon"],
                              where=str(path or "subjects.yaml"))
        subjects = {}
        for row in rows:
            s = Subject(name=str(row.get("name", "")), prompt=str(row.get("prompt", "")),
                        taxon=None if row.get("taxon") is None else str(row["taxon"]))
            subjects[s.name] = s
        return cls(subjects)

    def get(self, name: str) -> Subject:
        """A subject by name; an unknown name becomes an ad-hoc subject painted as named."""
        return self.subjects.get(name) or Subject(name=name, prompt=f"a {name} in watercolour")


def paint_messages(subject: Subject, photo: bytes | None = None) -> list[Message]:
    user = USER_PROMPT.format(prompt=subject.prompt)
    if photo is not None:
        user += GUIDED_SUFFIX.format(name=subject.name)
    return [Message("system", SYSTEM_PROMPT),
            Message("user", user, (photo,) if photo is not None else ())]


def critic_messages(subject: Subject, painting_png: bytes, photo: bytes | None) -> list[Message]:
    clause = (CRITIC_PHOTO if photo is not None else CRITIC_NO_PHOTO).format(name=subject.name)
    images = (painting_png, photo) if photo is not None else (painting_png,)
    return [Message("user", CRITIC_PROMPT.format(name=subject.name, photo_clause=clause), images)]


def revise_messages(subject: Subject, code: str, critique: str,
                    photo: bytes | None = None) -> list[Message]:
    return paint_messages(subject, photo) + [
        Message("assistant", f"```javascript\n{code.strip()}\n```"),
        Message("user", REVISE_PROMPT.format(critique=critique.strip()))]


if __name__ == "__main__":
    subj = SubjectBook.load().get(sys.argv[1] if len(sys.argv) > 1 else "peach hibiscus")
    print(f"prompt version {PROMPT_VERSION}\n")
    for m in paint_messages(subj):
        print(f"--- {m.role}\n{m.text}")
