"""Reading the painting from outside the sketch's realm.

    painting = await read_painting(page, size)     # render.py, once the guard's "done" has arrived

The sketch shares its JavaScript realm with the page's own scripts, so nothing it could have
changed takes part here. Which canvas is the painting is the guard's answer to one frozen getter
(`__salon.painting`: the canvas p5's createCanvas made for the first instance, start.js). Its DOM
node is then resolved in this document's isolated world (pages.py: Page.createIsolatedWorld), a
world over the same DOM with builtins of its own, and read there: its size, whether it holds a
WebGL context, and its pixels (p5 2.x makes WEBGL canvases with preserveDrawingBuffer, so the
drawing is still there after the frame).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

# Runs in the isolated world, `this` being the painting's node there.
_READ = """function () {
  const gl = this.getContext("webgl2") || this.getContext("webgl");
  const readable = !!gl && !gl.isContextLost();
  return { width: this.width, height: this.height, webgl: !!gl, url: readable ? this.toDataURL("image/png") : null };
}"""


@dataclass
class Painting:
    png: bytes | None  # None: no canvas, a lost context, or a canvas that gave no image
    problem: str = ""  # why there is no image to judge, for people ("" when there is one)
    webgl: bool = True


async def read_painting(sp, size: int) -> Painting:
    """The painting of the page's current document (a pages.SandboxPage), read in its isolated world."""
    cdp = sp.cdp
    found = await cdp.send("Runtime.evaluate", {"expression": "window.__salon.painting"})
    node = found.get("result", {})
    if "objectId" not in node or node.get("subtype") == "null":
        return Painting(None, "the sketch made no canvas with createCanvas")
    described = await cdp.send("DOM.describeNode", {"objectId": node["objectId"]})
    there = await cdp.send("DOM.resolveNode", {"backendNodeId": described["node"]["backendNodeId"],
                                               "executionContextId": sp.capture_world})
    read = await cdp.send("Runtime.callFunctionOn", {"objectId": there["object"]["objectId"],
                                                     "functionDeclaration": _READ, "returnByValue": True})
    value = read.get("result", {}).get("value") or {}
    if not value.get("webgl"):
        return Painting(None, "the painting is not on a WebGL canvas", webgl=False)
    if (value.get("width"), value.get("height")) != (size, size):
        return Painting(None, f"the canvas is {value.get('width')}x{value.get('height')}, not {size}x{size}")
    png = decode_data_url(value.get("url"))
    return Painting(png, "" if png else "the canvas gave no image (a lost context)")


def decode_data_url(url: str | None) -> bytes | None:
    if not url or not url.startswith("data:image/png;base64,"):
        return None
    png = base64.b64decode(url.split(",", 1)[1])
    return png if len(png) > 100 else None
