"""The sketch's world: every name a sketch's code can use, and the violation code of every other.

    python -m salon.curate.sandbox.world          # print the world, by kind

What a world call needs to run (CALL_NEEDS, PATHS) is here too: call_shapes.py holds a sketch's
calls against it before the browser.

The render page evaluates a sketch in an SES Compartment whose globals are these names and
JavaScript's own builtins, nothing else (page/facade.js builds them from these lists; a test checks
the page's global object against WORLD_NAMES). A name outside them is refused before the browser
(names.py reads the sketch's syntax tree) and, should one slip through, is a ReferenceError in the
page that the page reports with the same code (NAME_CODES, injected into facade.js).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

# The paper: the canvas and its ground (size and density are forced by the page).
PAPER = ("createCanvas", "background", "clear", "pixelDensity", "resizeCanvas")
# p5's transforms and settings that do not paint.
STATE = ("push", "pop", "translate", "rotate", "scale", "shearX", "shearY", "resetMatrix", "angleMode",
         "colorMode", "randomSeed", "noiseSeed", "noiseDetail", "frameRate")
# The frame loop (the page's own: start.js).
LOOP = ("noLoop", "loop", "isLooping")
# p5's pure helpers, called on the sketch's p5 instance (seeded random, angle mode).
HELPERS = ("random", "randomGaussian", "noise", "map", "lerp", "constrain", "dist", "mag", "norm", "sq", "sqrt",
           "pow", "exp", "log", "abs", "floor", "ceil", "round", "min", "max", "fract", "sin", "cos", "tan", "asin",
           "acos", "atan", "atan2", "degrees", "radians", "shuffle")
# Colours: made and read by p5, handed to the sketch as CSS strings.
COLOURS = ("color", "lerpColor", "red", "green", "blue", "alpha", "hue", "saturation", "brightness", "lightness")
CONSTANTS = ("WEBGL", "P2D", "PI", "TWO_PI", "HALF_PI", "QUARTER_PI", "TAU", "DEGREES", "RADIANS", "CLOSE", "OPEN",
             "CENTER", "CORNER", "CORNERS", "RADIUS", "RGB", "HSB", "HSL")
# Read from the sketch's p5 instance on every use.
LIVE = ("width", "height", "frameCount")
# The page's own: the brush facade, a vector class of its own, a console that takes strings.
OWN = ("brush", "createVector", "console")
# p5.brush's classes, constructible through the facade (new brush.Polygon(points)).
BRUSH_CLASSES = ("Plot", "Polygon", "Position")
# What a custom brush tip may draw on its surface (brush.add(name, {type: "custom", tip})).
TIP_CALLS = ("fill", "noFill", "stroke", "noStroke", "strokeWeight", "rect", "square", "circle", "ellipse", "arc",
             "line", "point", "triangle", "quad", "beginShape", "vertex", "endShape", "push", "pop", "translate",
             "rotate", "scale", "background")
# What every SES compartment has of JavaScript itself (the page removes ses's own Compartment,
# lockdown and harden). `arguments` is not a global, but every function has one.
JS_BUILTINS = (
    "AggregateError Array ArrayBuffer BigInt BigInt64Array BigUint64Array Boolean DataView Date Error EvalError "
    "Function Infinity Int16Array Int32Array Int8Array Iterator JSON Map Math NaN Number Object Promise Proxy "
    "RangeError ReferenceError Reflect RegExp Set String Symbol SyntaxError Temporal TextDecoder TextEncoder "
    "TypeError URIError Uint16Array Uint32Array Uint8Array Uint8ClampedArray WeakMap WeakSet decodeURI "
    "decodeURIComponent encodeURI encodeURIComponent escape eval globalThis isFinite isNaN parseFloat parseInt "
    "undefined unescape").split()

WORLD = {"paper": PAPER, "state": STATE, "helpers": HELPERS, "colours": COLOURS, "constants": CONSTANTS,
         "live": LIVE, "own": OWN, "brushClasses": BRUSH_CLASSES, "tip": TIP_CALLS}
# Every global name of the sketch's compartment (tests/test_render_world.py: the page's own list).
WORLD_NAMES = frozenset(PAPER + STATE + LOOP + HELPERS + COLOURS + CONSTANTS + LIVE + OWN + tuple(JS_BUILTINS))

@dataclass(frozen=True)
class Needs:
    """What one world call cannot run without. Every part was seen to throw in the sandbox when
    missing (tests/test_render_call_shape.py renders each mistake); fewer arguments than a call
    needs where p5.brush or p5 copes (a NaN it paints nothing with) are left out."""
    params: tuple[str, ...] = ()  # the arguments it needs, in order: fewer, or one always undefined, throws
    positive: tuple[int, ...] = ()  # positions whose number must be above 0 (a radius of 0 throws), judged
    #                                 only with no optional argument after them (circle's r takes it)
    named: tuple[tuple[int, str], ...] = ()  # (position, kind): a string there must be a name of NAMED[kind]
    points: int | None = None  # the position of a list of points, each an array [x, y] (an {x, y} throws)
    least_points: int = 0
    typed_fields: tuple[tuple[int, str, str], ...] = ()  # (position, type, field): an object whose `type`
    #                                                      is that one needs the field


# p5.brush 2.2.2's own names (tests/test_render_call_shape.py: each one renders); a sketch may add
# more (brush.add, brush.addField), and one added under a name the source does not settle turns the
# check of that kind off.
NAMED = {
    "brush": ("pen", "rotring", "2B", "HB", "2H", "cpencil", "pastel", "crayon", "charcoal", "spray", "marker"),
    "field": ("hand", "curved", "zigzag", "waves", "seabed", "spiral", "columns"),
    "stroke type": ("curve", "segments"),
}
ADDS_NAMED = {"brush.add": "brush", "brush.addField": "field"}  # the call that adds a name of that kind

# Keyed by how the sketch calls it: `brush.circle(...)`, `new brush.Polygon(...)`, `color(...)`.
CALL_NEEDS = {
    "brush.circle": Needs(("x", "y", "radius"), positive=(2,)),
    "brush.vertex": Needs(("x", "y")),
    "brush.rect": Needs(("x", "y", "w", "h")),
    "brush.polygon": Needs(("points",), points=0),
    "brush.Polygon": Needs(("points",), points=0),
    "brush.spline": Needs(("points",), points=0, least_points=2),
    "brush.stroke": Needs(("colour",)),
    "brush.fillBleed": Needs(("strength",)),
    "brush.set": Needs(("brush",), named=((0, "brush"),)),
    "brush.pick": Needs(("brush",), named=((0, "brush"),)),
    "brush.mass": Needs(("brush",), named=((0, "brush"),)),
    "brush.field": Needs(("field",), named=((0, "field"),)),
    "brush.addField": Needs(("name", "function")),
    "brush.beginStroke": Needs(("type",), named=((0, "stroke type"),)),
    "brush.add": Needs(typed_fields=((1, "custom", "tip"),)),
    "background": Needs(("colour",)),
    "color": Needs(("value",)),
    "lerpColor": Needs(("from", "to")),
    "shuffle": Needs(("array",)),
}


@dataclass(frozen=True)
class Path:
    """Calls p5.brush takes only in order: `begin`, then `step`s, then `end` (at least `least_steps`
    steps first); `step` or `end` with nothing begun throws. `also_ends` ends one too (p5.brush's
    rect draws through beginShape / endShape, dropping a shape left open)."""
    begin: str
    step: str
    end: str
    least_steps: int = 0
    also_ends: tuple[str, ...] = ()


PATHS = (Path("brush.beginShape", "brush.vertex", "brush.endShape", least_steps=2, also_ends=("brush.rect",)),
         Path("brush.beginStroke", "brush.move", "brush.endStroke"))


# Names outside the world, by what reaching for them means. The rest are unknown_name.
_EXTERNAL = (
    "window self top parent frames opener document location navigator history fetch XMLHttpRequest WebSocket "
    "WebSocketStream WebTransport EventSource Worker SharedWorker importScripts RTCPeerConnection "
    "webkitRTCPeerConnection RTCDataChannel BroadcastChannel MessageChannel postMessage alert confirm prompt open "
    "close print localStorage sessionStorage indexedDB caches cookieStore Image Audio FileReader Blob URL "
    "loadImage loadJSON loadStrings loadTable loadXML loadBytes loadModel loadShader loadSound "
    "httpGet httpPost httpDo createImg createVideo createAudio createCapture createA createElement createDiv "
    "createP createSpan createButton createInput createSelect createSlider createCheckbox createRadio "
    "createFileInput createColorPicker select selectAll removeElements saveCanvas save saveGif saveFrames saveJSON "
    "saveStrings saveTable").split()
# p5's painting, and the state that only its painting reads: primitives, images, pixels, shaders.
_BARE = tuple(
    "point line rect square circle ellipse arc triangle quad bezier curve beginShape vertex endShape bezierVertex "
    "curveVertex quadraticVertex beginContour endContour plane box sphere cylinder cone torus ellipsoid image model "
    "createGraphics createFramebuffer loadPixels updatePixels set copy blend filter createShader createFilterShader "
    "baseMaterialShader baseNormalShader baseColorShader baseStrokeShader baseFilterShader buildMaterialShader "
    "buildNormalShader buildColorShader buildStrokeShader buildFilterShader shader strokeShader imageShader "
    "p5 fill noFill stroke noStroke strokeWeight strokeCap strokeJoin tint noTint blendMode erase noErase smooth "
    "noSmooth ellipseMode rectMode imageMode pixels drawingContext get texture textureMode textureWrap "
    "normalMaterial ambientMaterial specularMaterial emissiveMaterial lights ambientLight directionalLight "
    "pointLight noLights camera perspective ortho createImage redraw".split())
_TEXT = ("text", "textFont", "textSize", "textToPoints", "textToContours", "loadFont", "textAlign", "textWidth", "textStyle", "textLeading", "textAscent", "textDescent",
                                  "textWrap", "fillText", "strokeText")
NAME_CODES = {**{n: "bare_primitives" for n in _BARE},
              **{n: "text_label" for n in _TEXT}, **{n: "external_access" for n in _EXTERNAL}}


def code_of(name: str) -> str:
    """The violation code of a name the sketch's world does not hold."""
    return NAME_CODES.get(name, "unknown_name")


if __name__ == "__main__":
    for kind, names in WORLD.items():
        print(f"{kind:13} {' '.join(names)}")
    print(f"{'javascript':13} {' '.join(JS_BUILTINS)}")
    sys.exit(0)
