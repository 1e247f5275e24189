"""Shared helpers for the render tests: a loopback server that records every hit, image diffs."""

from __future__ import annotations

import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from PIL import Image

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"
HOSTILE = Path(__file__).resolve().parent / "sketches" / "hostile"

# Same code and seed: SwiftShader's watercolour compositing differs in a few pixels run to run
# (measured: at most a few dozen of 360,000). Another seed moves far more than this.
SAME_IMAGE_MAX_PIXEL_SHARE = 0.001


class RecordingServer:
    """An HTTP server on 127.0.0.1 that answers everything and remembers every request."""

    def __init__(self):
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                hits.append(f"{self.command} {self.path}")
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = do_POST = do_PUT = do_HEAD = do_OPTIONS = _any

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int16)


def differing_share(a: bytes, b: bytes) -> float:
    """Share of pixels whose colour differs at all between two PNGs of the same size."""
    pa, pb = pixels(a), pixels(b)
    assert pa.shape == pb.shape, (pa.shape, pb.shape)
    return float((pa != pb).any(axis=-1).mean())


def example(name: str) -> str:
    return (EXAMPLES / f"{name}.js").read_text()
