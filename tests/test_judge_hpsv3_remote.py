"""The HPSv3 service API (issue 19 point 2): salon's server, its client, and a server that misbehaves.

All servers are real HTTP servers on 127.0.0.1. The client against salon's own server must give
what the scorer gives in process (to 1e-6 in mu: the PNG round trip is lossless); against a
server that times out, answers 500, says `available: false` or sends garbage it must give None
with the reason, after exactly `attempts` requests (or one, for an answer repeating cannot fix).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_models import smooth_painting as painting, tiny_hpsv3  # noqa: E402

from salon.judges.hpsv3 import load_hpsv3  # noqa: E402
from salon.judges.hpsv3_remote import RemoteHPSv3, ScoreServer  # noqa: E402
from salon.judges.verdict import png_base64  # noqa: E402


@pytest.fixture(scope="module")
def local():
    return load_hpsv3(model=str(tiny_hpsv3()))


@pytest.fixture(scope="module")
def served(local):
    server = ScoreServer(local, port=0).start()
    yield server
    server.close()


def client(url, **kw):
    return load_hpsv3(model=url, **{"timeout_s": 5.0, "attempts": 3, "backoff_s": 0.01, **kw})


def test_salon_client_against_salon_server_gives_the_local_scores(local, served):
    images = [painting(0), painting(1), painting(2)]
    prompts = ["a koi", "a loose watercolour flower", "a hibiscus"]
    remote = client(served.url)
    assert isinstance(remote, RemoteHPSv3) and remote.name == f"hpsv3:{served.url}"
    assert remote.health() == {"loaded": True, "error": None, "model": local.name}
    far, near = remote.rate(images, prompts), local.rate(images, prompts)
    for a, b in zip(far, near):
        assert a.ok and a.mu == pytest.approx(b.mu, abs=1e-6) and a.log_sigma == pytest.approx(b.log_sigma, abs=1e-6)
        assert a.score == pytest.approx(b.score, abs=1e-6)
    # no prompt given: the default prompt, the same on both sides
    assert remote.score([painting(0)]) == pytest.approx(local.score([painting(0)]), abs=1e-6)


def test_salon_server_speaks_the_prior_arts_api(served):
    import urllib.error
    import urllib.request

    def post(body: bytes):
        req = urllib.request.Request(served.url + "/score", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    status, body = post(json.dumps({"png_base64": png_base64(painting(3)), "prompt": "a flower"}).encode())
    assert status == 200 and body["available"] is True
    assert set(body) == {"mu", "sigma", "log_sigma", "score", "available"} and body["sigma"] == body["log_sigma"]
    assert body["score"] == pytest.approx(1 / (1 + np.exp(-body["mu"] / 4)))
    status, body = post(b"{not json")
    assert status == 400 and body["available"] is False and body["score"] is None
    status, body = post(json.dumps({"png_base64": "bm90IGEgcG5n"}).encode())  # base64 of "not a png"
    assert status == 400 and "bad request" in body["error"]


class Misbehaving(BaseHTTPRequestHandler):
    """POST /score answers as `server.mode` says, counting requests."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.server.requests += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        mode = self.server.mode
        if mode == "timeout":
            time.sleep(1.5)
        if mode == "500":
            return self._send(500, b'{"detail": "CUDA error"}')
        if mode == "unavailable":
            return self._send(200, b'{"score": 0.0, "available": false, "error": "model failed to load"}')
        if mode == "not json":
            return self._send(200, b"<html>oops</html>")
        if mode == "no mu":
            return self._send(200, b'{"score": 0.7, "available": true}')
        self._send(200, json.dumps({"mu": 2.0, "sigma": -1.0, "score": 0.62, "available": True}).encode())

    def _send(self, status, data):
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass


@pytest.fixture
def bad():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    server.daemon_threads = True
    server.requests, server.mode = 0, "ok"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode, reason, requests", [
    ("timeout", "timeout", 3), ("500", "HTTP 500", 3), ("unavailable", "could not score: model failed to load", 3),
    ("not json", "malformed answer", 1), ("no mu", "malformed answer", 1)])
def test_a_misbehaving_service_gives_none_with_the_reason_after_bounded_retries(bad, mode, reason, requests):
    bad.mode = mode
    url = f"http://127.0.0.1:{bad.server_address[1]}"
    [rating] = client(url, timeout_s=0.5 if mode == "timeout" else 10.0).rate([painting(4)])
    assert rating.score is None and rating.mu is None and reason in rating.reason
    assert bad.requests == requests
    if requests > 1:
        assert f"after {requests} attempts" in rating.reason


def test_the_prior_arts_answer_reads_sigma_as_log_sigma(bad):
    [rating] = client(f"http://127.0.0.1:{bad.server_address[1]}").rate([painting(5)])
    assert rating.mu == pytest.approx(2.0) and rating.log_sigma == pytest.approx(-1.0)
    assert rating.score == pytest.approx(1 / (1 + np.exp(-0.5)))  # recomputed from mu: sigmoid(mu / 4)


def test_a_dead_service_is_not_hammered(bad):
    bad.mode = "500"
    url = f"http://127.0.0.1:{bad.server_address[1]}"
    ratings = client(url, batch_size=1).rate([painting(k) for k in range(5)])
    assert all(r.score is None for r in ratings)
    assert bad.requests == 3  # one image's attempts; the other four were not sent
    assert all("not sent" in r.reason for r in ratings[1:])


def test_a_refused_connection_is_none_with_the_reason():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    [rating] = client(f"http://127.0.0.1:{port}").rate([painting(6)])
    assert rating.score is None and "service down" in rating.reason and "after 3 attempts" in rating.reason
    health = client(f"http://127.0.0.1:{port}").health()
    assert health["loaded"] is False and "service down" in health["error"]
