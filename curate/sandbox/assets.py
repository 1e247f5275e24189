"""The sandbox page: what the browser runs for every sketch, and the policy it runs under.

    assets = page_assets(RenderConfig())   # PageAssets: the document, and the page's own scripts
    PAGE_CSP                               # the Content-Security-Policy header of the document

The page's own scripts are the guard (page/guard.js, first, before anything else can run), p5,
p5.brush, the facade (page/facade.js: the sketch's world), ses and the start script
(page/start.js). The browser keeps them, given once per page (pages.py), and runs them in that
order in every new document before the document's own content. Per sketch, an empty document is
served once as "/", and the sketch's source crosses as a string in salon's call to start it
(render.py), to be evaluated in a compartment: it is never a script of the page. Every request but
the document is refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from salon.curate.sandbox import world
from salon.pool.errors import SetupError

PAGE_ORIGIN = "http://salon.sandbox"
_PAGE_DIR = Path(__file__).parent / "page"
HTML_CONTENT_TYPE = "text/html; charset=utf-8"


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
    scripts: tuple[str, ...]  # guard, p5, p5.brush, facade, ses, start: run in this order in every new document


# An empty page. The scripts that make it a sandbox are the browser's to run, not the document's:
# p5 and p5.brush (1 MB) cross from salon to each browser page once, not once per sketch.
DOCUMENT = (b'<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;'
            b"background:#fff;overflow:hidden}</style></head><body></body></html>")


def page_assets(config) -> PageAssets:
    nm = find_node_modules(config.node_modules)
    page = {name: (_PAGE_DIR / f"{name}.js").read_text() for name in ("guard", "facade", "start")}
    filled = {
        "__SALON_SIZE__": str(int(config.size)), "__SALON_GPU_BUDGET__": str(int(config.gpu_memory_mb) * 2**20),
        "__SALON_BINDING__": json.dumps(REPORT_BINDING), "__SALON_WORLD__": json.dumps(world.WORLD),
        "__SALON_NAME_CODES__": json.dumps(world.NAME_CODES), "__SALON_FRAMES__": str(int(config.frames)),
        "__SALON_FRAME_TIME_MS__": str(int(config.frame_budget_s * 1000)),
    }
    for name, source in page.items():
        for marker, value in filled.items():
            source = source.replace(marker, value)
        page[name] = source
    sources = {"/salon-guard.js": page["guard"], "/p5.min.js": (nm / "p5/lib/p5.min.js").read_text(),
               "/p5.brush.js": (nm / "p5.brush/dist/p5.brush.js").read_text(), "/salon-facade.js": page["facade"],
               "/ses.js": (nm / "ses/dist/lockdown.umd.min.js").read_text(), "/salon-start.js": page["start"]}
    # Each keeps a name in stack traces (a page error says which script; the sketch's frames are anonymous).
    return PageAssets(DOCUMENT, tuple(f"{src}\n//# sourceURL={PAGE_ORIGIN}{url}\n" for url, src in sources.items()))


# The page's Content Security Policy: enforced by the browser in the page and in every realm
# it could create (an about:blank frame inherits it). Scripts only from the page's own origin (there
# are none: the page's own are the browser's to run, pages.py); a string becomes code only through
# the Trusted Types default policy, which guard.js opens only while the sketch's compartment is made
# and its source evaluated ('unsafe-eval' is what lets that one evaluation happen); no connection,
# worker, frame, plugin, image, font or media of any kind; and a sandbox (scripts allowed, nothing
# else), so the document's origin is opaque: no cookie, localStorage, sessionStorage, IndexedDB,
# cache or lock exists for anything to leave behind for the next document of a reused page (pages.py).
PAGE_CSP = "; ".join([
    "default-src 'none'", "script-src 'self' 'unsafe-eval'", "style-src 'unsafe-inline'", "img-src 'none'",
    "connect-src 'none'", "worker-src 'none'", "frame-src 'none'", "child-src 'none'", "object-src 'none'",
    "font-src 'none'", "media-src 'none'", "manifest-src 'none'", "form-action 'none'", "base-uri 'none'",
    "require-trusted-types-for 'script'", "trusted-types default", "sandbox allow-scripts",
])


# The DevTools binding the guard reports through (pages.py adds it to every page; guard.js takes
# it and removes it from the window before anything else runs).
REPORT_BINDING = "__salonReport"
