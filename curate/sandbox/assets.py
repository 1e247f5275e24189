"""The sandbox page: what the browser runs for every sketch, and the policy it runs under.

    assets = page_assets(RenderConfig())   # PageAssets: the document, and the page's own scripts
    PAGE_CSP                               # the Content-Security-Policy header of the document

The page's own scripts are the guard (page/guard.js, first, before anything else can run), p5,
p5.brush and the start script (page/start.js). The browser keeps them, given once per page
(pages.py), and runs them in that order in every new document before the document's own
content: nothing else crosses from salon to the browser per sketch but an empty document and the
sketch, served once each, as "/" and SKETCH_PATH. Every other request is refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from salon.curate.sandbox import gate
from salon.pool.errors import SetupError

PAGE_ORIGIN = "http://salon.sandbox"
SKETCH_PATH = "/salon-sketch.js"
GUARD_URL, START_URL = "/salon-guard.js", "/salon-start.js"
_PAGE_DIR = Path(__file__).parent / "page"
JS_CONTENT_TYPE = "text/javascript; charset=utf-8"
HTML_CONTENT_TYPE = "text/html; charset=utf-8"
# The page's origin is opaque (PAGE_CSP's sandbox), so the sketch's script is another origin's:
# fetched with CORS, or the browser mutes its errors (no message, no unhandledrejection) and a
# sketch that throws would look like one that never finishes.
SCRIPT_HEADERS = {"Access-Control-Allow-Origin": "*"}


def find_node_modules(explicit: str = "") -> Path:
    candidates = [explicit, os.environ.get("SALON_NODE_MODULES", ""), "node_modules",
                  str(Path(__file__).resolve().parents[2] / "node_modules")]
    for c in filter(None, candidates):
        p = Path(c)
        if all((p / f).is_file() for f in ("p5/lib/p5.min.js", "p5.brush/dist/p5.brush.js", "ses/dist/lockdown.umd.min.js")):
            return p
    raise SetupError("p5, p5.brush and ses are not installed: run `npm ci` in the salon checkout "
                     "(or point SALON_NODE_MODULES at a node_modules folder that has them)")



@dataclass(frozen=True)
class PageAssets:
    document: bytes  # "/": an empty page; its policy (PAGE_CSP) comes with it as a header
    scripts: tuple[str, ...]  # guard, p5, p5.brush, ses, start: run in this order in every new document


# An empty page. The scripts that make it a sandbox are the browser's to run, not the document's:
# p5 and p5.brush (1 MB) cross from salon to each browser page once, not once per sketch.
DOCUMENT = (b'<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;'
            b"background:#fff;overflow:hidden}</style></head><body></body></html>")


def page_assets(config) -> PageAssets:
    nm = find_node_modules(config.node_modules)
    guard = (_PAGE_DIR / "guard.js").read_text()
    guard = guard.replace("__SALON_SIZE__", str(int(config.size)))
    guard = guard.replace("__SALON_GPU_BUDGET__", str(int(config.gpu_memory_mb) * 2**20))
    guard = guard.replace("__SALON_GLYPHS__", json.dumps(list(gate.GLYPH_CALLS)))
    guard = guard.replace("__SALON_GL_PAINT__", json.dumps(list(GL_PAINT)))
    guard = guard.replace("__SALON_BINDING__", json.dumps(REPORT_BINDING))
    start = (_PAGE_DIR / "start.js").read_text()
    start = start.replace("__SALON_BARE__", json.dumps(list(gate.BARE_PRIMITIVES)))
    start = start.replace("__SALON_TEXT__", json.dumps([c for c in gate.TEXT_CALLS if c not in gate.GLYPH_CALLS]))
    start = start.replace("__SALON_GLYPHS__", json.dumps(list(gate.GLYPH_CALLS)))
    start = start.replace("__SALON_SHADERS__", json.dumps(list(gate.SHADER_CALLS)))
    start = start.replace("__SALON_PIXELS__", json.dumps(list(gate.PIXEL_CALLS)))
    start = start.replace("__SALON_CALLBACKS__", json.dumps(list(_P5_CALLBACKS)))
    start = start.replace("__SALON_DOM__", json.dumps(list(_P5_DOM)))
    sources = {GUARD_URL: guard, "/p5.min.js": (nm / "p5/lib/p5.min.js").read_text(),
               "/p5.brush.js": (nm / "p5.brush/dist/p5.brush.js").read_text(),
               "/ses.js": (nm / "ses/dist/lockdown.umd.min.js").read_text(), START_URL: start}
    # Each keeps its name in stack traces, which is how the guard tells who called (guard.js).
    return PageAssets(DOCUMENT, tuple(f"{src}\n//# sourceURL={PAGE_ORIGIN}{url}\n" for url, src in sources.items()))


# The page's Content Security Policy: enforced by the browser in the page and in every realm
# it could create (an about:blank frame inherits it), whatever API the sketch reaches for. Scripts
# only from the page's own origin (the sketch, served once: no inline code, no eval, Function or
# string timers, no data:/blob: imports); no connection, worker, frame, plugin, image, font or
# media of any kind; Trusted Types, so no string becomes HTML or script; and a sandbox (scripts
# allowed, nothing else), so the document's origin is opaque: no cookie, localStorage,
# sessionStorage, IndexedDB, cache or lock exists for a sketch to leave anything in for the next
# document of a reused page (pages.py).
PAGE_CSP = "; ".join([
    "default-src 'none'", "script-src 'self'", "style-src 'unsafe-inline'", "img-src 'none'",
    "connect-src 'none'", "worker-src 'none'", "frame-src 'none'", "child-src 'none'", "object-src 'none'",
    "font-src 'none'", "media-src 'none'", "manifest-src 'none'", "form-action 'none'", "base-uri 'none'",
    "require-trusted-types-for 'script'", "trusted-types salon", "sandbox allow-scripts",
])


# The WebGL calls that put paint somewhere, or change how later paint lands (guard.js lets them
# through only from p5.brush, the paper and p5's own frame loop): draws, clears, blits, texture
# uploads and copies, and the state p5.brush's own paint would inherit (scissor, blending, masks,
# the viewport, the framebuffer bound).
GL_PAINT = ("drawArrays drawElements drawArraysInstanced drawElementsInstanced drawRangeElements clear "
            "clearBufferfv clearBufferiv clearBufferuiv clearBufferfi blitFramebuffer texImage2D "
            "texSubImage2D texImage3D texSubImage3D copyTexImage2D copyTexSubImage2D copyTexSubImage3D "
            "compressedTexImage2D compressedTexSubImage2D compressedTexImage3D compressedTexSubImage3D "
            "scissor enable disable clearColor colorMask blendFunc blendFuncSeparate blendEquation "
            "blendEquationSeparate blendColor viewport depthMask bindFramebuffer").split()
# The DevTools binding the guard reports through (pages.py adds it to every page; guard.js takes
# it and removes it from the window before anything else runs).
REPORT_BINDING = "__salonReport"

# The sketch's functions p5 calls by name from the window (start.js runs them in the sketch's turn).
_P5_CALLBACKS = ("setup draw preload mousePressed mouseReleased mouseClicked mouseMoved mouseDragged mouseWheel "
                 "doubleClicked keyPressed keyReleased keyTyped touchStarted touchMoved touchEnded windowResized "
                 "deviceMoved deviceTurned deviceShaken").split()

_P5_DOM = ("createDiv createP createSpan createImg createA createSlider createButton createCheckbox "
           "createSelect createRadio createColorPicker createInput createFileInput createVideo "
           "createAudio createCapture createElement select selectAll removeElements saveCanvas "
           "save saveGif saveFrames").split()
