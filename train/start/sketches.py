"""Procedural p5.brush sketches: thousands of valid, varied paintings written from the system
prompt's allowed calls, to give a policy made from nothing its first lessons.

    python -m salon.train.start.sketches --n 4 --seed 7          # print four replies
    sketches = generate_sketches(3000, seed=0)                      # [GeneratedSketch(code, reply, recipe)]
    checked = gate_sketches(sketches)                               # the real static gate, every one

Every sketch is the system prompt's skeleton (600 x 600 WEBGL canvas, paper, scaleBrushes(3),
noStroke) around painting calls from its allowlist only: `brush.fill`, `brush.fillBleed`,
`brush.fillTexture`, `brush.beginShape` / `brush.vertex` / `brush.endShape(CLOSE)` and
`brush.circle`. No p5 primitive is ever called (the gate's `bare_primitives`), nor any loop, so a
sketch is exactly its list of shapes and a reply is what the prompt asks for: one ```javascript
block. What varies, each drawn from the seed:

    palette      one of PALETTES (five colours each), a paper colour of PAPERS
    layers       0-2 broad backdrop blobs (a sky, a pond, a shadow), then the subject's shapes,
                 then 0-3 small accents
    shapes       3-8 subject shapes: circles or 4-6 sided blobs, their size class (small,
                 middle, large), position (centred, spread, one side), opacity, bleed, texture

Coordinates and radii are multiples of 10 and opacities of 20, so a small tokenizer learns them
as a few tokens each. No shape is wider than about 300 px: p5.brush's watercolour fill costs
about its outline's length (on 2 busy cores a 100 px circle took 6 s, a 200 px one 12 s, ten
50 px ones 3 s), and a reward loop renders every sample. The generator never renders: `gate_sketches` runs the real static gate
(salon.curate.sandbox.gate) on every sketch; `salon.train.start.policy` renders a sample of them too.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass, field

PAPERS = ("#f6f1e7", "#fcf7ec", "#f8f4ec", "#f3efe6")
# five colours each, dark to light or by role; a few lie near the bundled love tier, most do not
PALETTES = {
    "peach": ("#f28c6a", "#f59e74", "#f9b38a", "#b22b3a", "#5f8f4e"),
    "deep sea": ("#1d3557", "#2f5d8a", "#457b9d", "#a8dadc", "#e8e4f0"),
    "dusk": ("#3b2f5a", "#6b4c8a", "#c06c84", "#f6b38e", "#2a2238"),
    "forest": ("#2d4a2b", "#4f7942", "#8fb36b", "#c9d99c", "#6b4f2a"),
    "citrus": ("#f2c94c", "#f2994a", "#eb5757", "#6fcf97", "#f7e3a1"),
    "koi pond": ("#2f6b5e", "#5c9c8a", "#e86a33", "#f4a259", "#fdf0d5"),
    "ink": ("#1b1b1e", "#3c3c44", "#6e6e78", "#a4a4ad", "#d7d7de"),
    "rose": ("#9e2a4b", "#d1495b", "#edae49", "#f7c1bb", "#66a182"),
    "glacier": ("#5b8bb5", "#8fb8de", "#c7dff2", "#e9f2fa", "#34495e"),
    "earth": ("#7f4f24", "#936639", "#a68a64", "#b6ad90", "#582f0e"),
    "meadow": ("#a7c957", "#6a994e", "#386641", "#f2e8cf", "#bc4749"),
    "neon": ("#ff00aa", "#00e5ff", "#faff00", "#7cff00", "#ff5e00"),
}
SIZES = {"small": (20, 50), "middle": (50, 90), "large": (90, 140)}
PLACEMENTS = ("centred", "spread", "left", "right", "top", "bottom")


@dataclass(frozen=True)
class GeneratedSketch:
    code: str
    recipe: dict = field(compare=False)  # what was drawn: palette, paper, counts, sizes, placement

    @property
    def reply(self) -> str:
        """The completion a policy should write: the sketch in one ```javascript block."""
        return f"```javascript\n{self.code}```"


def _round(v: float, step: int = 10) -> int:
    return int(round(v / step) * step)


def _clamp(v: float, lo: int = -300, hi: int = 300) -> int:
    return max(lo, min(hi, _round(v)))


def _fill(rng: random.Random, colour: str, opacity: tuple[int, int]) -> list[str]:
    lines = [f'brush.fill("{colour}", {_round(rng.uniform(*opacity), 20)});']
    if rng.random() < 0.5:
        lines.append(f"brush.fillBleed({rng.choice((0.05, 0.1, 0.2, 0.3, 0.4))});")
    if rng.random() < 0.25:
        lines.append(f"brush.fillTexture({rng.choice((0.2, 0.4, 0.6))}, {rng.choice((0.2, 0.4))});")
    return lines


def _polygon(points: list[tuple[float, float]]) -> list[str]:
    return ["brush.beginShape();", *(f"brush.vertex({_clamp(x)}, {_clamp(y)});" for x, y in points),
            "brush.endShape(CLOSE);"]


def _backdrop(rng: random.Random) -> tuple[float, float, float]:
    """A broad shape behind the subject (a sky, a pond, a shadow): centre and radius."""
    return rng.uniform(-120, 120), rng.uniform(-120, 120), rng.uniform(110, 150)


def _centre(rng: random.Random, placement: str) -> tuple[float, float]:
    x, y = rng.gauss(0, 60), rng.gauss(0, 60)
    if placement == "spread":
        x, y = rng.uniform(-220, 220), rng.uniform(-220, 220)
    elif placement in ("left", "right"):
        x = (-1 if placement == "left" else 1) * rng.uniform(80, 200)
    elif placement in ("top", "bottom"):
        y = (-1 if placement == "top" else 1) * rng.uniform(80, 200)
    return x, y


def _blob(rng: random.Random, cx: float, cy: float, r: float) -> list[tuple[float, float]]:
    sides = rng.randint(4, 6)
    start = rng.uniform(0, math.tau)
    return [(cx + r * rng.uniform(0.7, 1.2) * math.cos(start + i * math.tau / sides),
             cy + r * rng.uniform(0.7, 1.2) * math.sin(start + i * math.tau / sides)) for i in range(sides)]


def generate_sketch(rng: random.Random) -> GeneratedSketch:
    """One sketch drawn from `rng` (see the module doc for what varies)."""
    palette_name = rng.choice(sorted(PALETTES))
    palette, paper = PALETTES[palette_name], rng.choice(PAPERS)
    backdrops = rng.choice((0, 1, 1, 2))
    count, size, placement = rng.randint(3, 8), rng.choice(sorted(SIZES)), rng.choice(PLACEMENTS)
    accents = rng.randint(0, 3)
    body: list[str] = []
    if backdrops:
        body.append("// backdrop")
    for _ in range(backdrops):
        cx, cy, r = _backdrop(rng)
        body += [*_fill(rng, rng.choice(palette), (60, 140)), *_polygon(_blob(rng, cx, cy, r))]
    body.append("// subject")
    for _ in range(count):
        cx, cy = _centre(rng, placement)
        r = rng.uniform(*SIZES[size])
        body += _fill(rng, rng.choice(palette), (100, 240))
        if rng.random() < 0.5:
            body.append(f"brush.circle({_clamp(cx)}, {_clamp(cy)}, {max(10, _round(r))});")
        else:
            body += _polygon(_blob(rng, cx, cy, r))
    if accents:
        body.append("// accents")
    for _ in range(accents):
        body += _fill(rng, rng.choice(palette), (120, 240))
        body.append(f"brush.circle({_clamp(rng.uniform(-260, 260))}, {_clamp(rng.uniform(-260, 260))}, "
                    f"{_round(rng.uniform(10, 30))});")
    code = "\n".join(["function setup() {", "  createCanvas(600, 600, WEBGL);", "  pixelDensity(1);",
                      "  angleMode(DEGREES);", f'  background("{paper}");', "  brush.scaleBrushes(3);",
                      "  brush.noStroke();", *(f"  {line}" for line in body), "  noLoop();", "}", ""])
    recipe = {"palette": palette_name, "paper": paper, "backdrops": backdrops, "shapes": count, "size": size,
              "placement": placement, "accents": accents}
    return GeneratedSketch(code, recipe)


def generate_sketches(n: int, seed: int = 0) -> list[GeneratedSketch]:
    """`n` sketches from `seed` (the same seed, the same sketches)."""
    rng = random.Random(seed)
    return [generate_sketch(rng) for _ in range(n)]


def palette_of(code: str | None) -> str | None:
    """The palette most of a sketch's colours come from (None: no colour of any palette)."""
    if not code:
        return None
    counts = {name: sum(code.count(c) for c in colours) for name, colours in PALETTES.items()}
    best = max(counts, key=counts.get)
    return best if counts[best] else None


def gate_sketches(sketches: list[GeneratedSketch]) -> dict[str, list[str]]:
    """The real static gate's violations of each sketch that has any ({code: violations})."""
    from salon.curate.sandbox.gate import static_violations

    bad = {}
    for s in sketches:
        found = static_violations(s.code)
        if found:
            bad[s.code] = found
    return bad


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m salon.train.start.sketches", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1, help="how many sketches (default 1)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for s in generate_sketches(args.n, args.seed):
        print(s.reply, end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
