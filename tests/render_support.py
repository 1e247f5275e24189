"""Shared helpers for the render tests: a loopback server that records every hit, image diffs."""

from __future__ import annotations

import io
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from PIL import Image

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"
HOSTILE = Path(__file__).resolve().parent / "sketches" / "hostile"

# Same code and seed: SwiftShader's watercolour compositing differs in a few pixels run to run
# (measured: at most a few dozen of 360,000, up to 10 levels apart), and Canvas2D on the card
# (vulkan-canvas) in up to 0.57 % of them by at most 2 levels (benchmarks/probe_canvas_flags.py).
# Another seed, or anything a previous sketch left behind, moves far more than this.
SAME_IMAGE_MAX_PIXEL_SHARE = 0.001
SAME_IMAGE_LEVELS = 8  # pixels at most this many levels apart in every channel count as the same


class RecordingServer:
    """Listeners on 127.0.0.1 that remember everything that reaches them: an HTTP server that
    answers every request (`port`), and a UDP socket (`udp_port`: WebRTC's STUN, QUIC)."""

    def __init__(self):
        hits = self.hits = []
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp.settimeout(0.2)
        self.udp_port = self.udp.getsockname()[1]
        self._udp_thread = threading.Thread(target=self._receive, daemon=True)
        self._closing = False

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

    def _receive(self):
        while not self._closing:
            try:
                data, peer = self.udp.recvfrom(65536)
            except (socket.timeout, OSError):
                continue
            self.hits.append(f"UDP {len(data)} bytes from {peer[0]}")

    def code(self, sketch: str) -> str:
        """A hostile sketch aimed at these listeners."""
        return sketch.replace("__PORT__", str(self.port)).replace("__UDP__", str(self.udp_port))

    def __enter__(self):
        self.thread.start()
        self._udp_thread.start()
        return self

    def __exit__(self, *exc):
        self._closing = True
        self.server.shutdown()
        self.server.server_close()
        self._udp_thread.join(2)
        self.udp.close()


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int16)


def differing_share(a: bytes, b: bytes) -> float:
    """Share of pixels more than SAME_IMAGE_LEVELS apart in some channel, between two PNGs of the same size."""
    pa, pb = pixels(a), pixels(b)
    assert pa.shape == pb.shape, (pa.shape, pb.shape)
    return float((np.abs(pa - pb) > SAME_IMAGE_LEVELS).any(axis=-1).mean())


def example(name: str) -> str:
    return (EXAMPLES / f"{name}.js").read_text()


def count_launches(monkeypatch) -> list:
    """Every browser a renderer launches from now on (SandboxBrowser.launch), in order."""
    from salon.curate.sandbox import pages

    launches = []
    real = pages.SandboxBrowser.launch

    async def counted(self):
        launches.append(self)
        await real(self)

    monkeypatch.setattr(pages.SandboxBrowser, "launch", counted)
    return launches
