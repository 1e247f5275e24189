"""HPSv3 over HTTP: the client of an HPSv3 service, and the service around salon's own scorer.

    judge = load_hpsv3(model="http://127.0.0.1:8000")       # RemoteHPSv3: the same RatingJudge
    judge.unreachable()                                      # None, or why the service cannot score now
    server = ScoreServer(judge, host="127.0.0.1", port=8000); server.serve_forever()
    salon judge serve --scorer hpsv3 --model CKPT [--host 127.0.0.1] [--port 8000]

The API is the prior art's HPSv3 Space's, so either side works with the other:

    POST /score {"png_base64": str, "prompt": str}  -> {"mu", "sigma", "log_sigma", "score", "available": true}
    GET  /health                                    -> {"loaded": bool, "error": str | null, "model": str}

`sigma` is what the prior art named HPSv3's second output, which is log sigma; salon's server
also sends it as `log_sigma`. A failure answers `{"available": false, "score": null, "error"}`
(the prior art sent score 0.0 there; a score of a failure is no answer, so salon sends null).
Requests arriving while the model is busy are scored together in the next forward pass (up to
the scorer's batch size).

The client sends one request per image, `batch_size` at a time. Refusals, timeouts, 429/5xx and
`available: false` are retried `attempts` times in all, waiting backoff_s, 2 x backoff_s, ...;
a malformed answer or another 4xx is not retried. Whatever still fails is a Rating with score None
and the reason, never 0. Once one image of a call has exhausted its attempts on a service that
does not answer, the rest of that call are not sent (no retry storm on a dead service).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Sequence

from PIL import Image

from salon.judges.hpsv3_config import HPSv3Config, each_prompt
from salon.judges.hpsv3_rating import rating_from
from salon.judges.verdict import Rating, png_base64
from salon.judges.vlm_openai import CallFailed, request_json

log = logging.getLogger(__name__)

MAX_BODY = 64 * 2**20  # bytes of a /score request


class RemoteHPSv3:
    """A `RatingJudge` whose model runs behind an HPSv3 service."""

    def __init__(self, config: HPSv3Config | None = None, **kwargs):
        self.config = config or HPSv3Config(**kwargs)
        self.url = self.config.model
        self.name = f"hpsv3:{self.url}"

    def health(self) -> dict:
        """GET /health, once: the service's answer, or {"loaded": False, "error": why it gave none}."""
        try:
            return self._request("GET", "/health", None)
        except CallFailed as e:
            return {"loaded": False, "error": str(e)}

    def unreachable(self, timeout_s: float = 5.0) -> str | None:
        """Why the service cannot score now, in one line, or None: GET /health once, without retries."""
        try:
            health = request_json(self.url + "/health", "GET", None, timeout_s=timeout_s)
        except CallFailed as e:
            return f"{e}: start the HPSv3 service, or correct its URL"
        if isinstance(health, dict) and health.get("error"):
            return f"{self.url}/health: {str(health['error'])[:300]}"
        return None

    def score(self, images: Sequence[Image.Image]) -> list[float | None]:
        return [r.score for r in self.rate(images)]

    def rate(self, images: Sequence[Image.Image], prompts: Sequence[str] | None = None) -> list[Rating]:
        prompts = each_prompt(self.config, images, prompts)
        reasons: list[str] = []  # why the service failed every attempt of an image: the rest are not sent

        def one(item) -> Rating:
            image, prompt = item
            try:
                body = {"png_base64": png_base64(image), "prompt": prompt}
            except (OSError, ValueError, AttributeError) as e:
                return Rating(None, reason=f"could not read image: {e}")
            return self._score_one(body, reasons)

        if not images:
            return []
        with ThreadPoolExecutor(min(self.config.batch_size, len(images))) as pool:
            return list(pool.map(one, zip(images, prompts)))

    def _score_one(self, body: dict, reasons: list[str]) -> Rating:
        cfg = self.config
        for attempt in range(cfg.attempts):
            if reasons:
                return Rating(None, reason=f"not sent: {reasons[0]}")
            if attempt:
                time.sleep(cfg.backoff_s * 2 ** (attempt - 1))
            try:
                reply = self._request("POST", "/score", body)
                if not isinstance(reply, dict):
                    raise CallFailed(f"malformed answer from {self.url}/score: {str(reply)[:200]}", retry=False)
                if reply.get("available") is not True:
                    raise CallFailed(f"{self.url} could not score: {str(reply.get('error'))[:300]}", retry=True)
                return _rating(reply, self.url)
            except CallFailed as e:
                if not e.retry:
                    return Rating(None, reason=str(e))
                last = str(e)
        reason = f"{last} (after {cfg.attempts} attempts)"
        reasons.append(reason)
        return Rating(None, reason=reason)

    def _request(self, method: str, path: str, body: dict | None):
        return request_json(self.url + path, method, body, timeout_s=self.config.timeout_s)


def _rating(reply: dict, url: str) -> Rating:
    """The Rating of an `available: true` answer; mu must be a finite number (the score is
    recomputed from it, so local and remote scores are the same function of mu)."""
    mu = reply.get("mu")
    log_sigma = reply.get("log_sigma", reply.get("sigma"))
    rating = rating_from(mu, log_sigma)
    if not rating.ok:
        raise CallFailed(f"malformed answer from {url}/score: mu={mu!r}, sigma={log_sigma!r}", retry=False)
    return rating


# ---- the service ---------------------------------------------------------------------------------


class _Batcher:
    """One thread owns the model: it scores whatever requests are waiting, up to `size`, at once."""

    def __init__(self, judge, size: int):
        self.judge, self.size = judge, size
        self.queue: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="hpsv3-batcher", daemon=True)
        self.thread.start()

    def submit(self, image: Image.Image, prompt: str) -> Future:
        future: Future = Future()
        self.queue.put((image, prompt, future))
        return future

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < self.size:
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self.queue.put(None)  # stop after this batch
                    break
                batch.append(more)
            try:
                ratings = self.judge.rate([b[0] for b in batch], [b[1] for b in batch])
            except Exception as e:  # the scorer failed: every request of the batch gets no answer
                log.warning("hpsv3 service: scoring failed: %s", e)
                ratings = [Rating(None, reason=f"{type(e).__name__}: {e}")] * len(batch)
            for (_, _, future), rating in zip(batch, ratings):
                future.set_result(rating)


class ScoreServer(ThreadingHTTPServer):
    """The HPSv3 service API around any RatingJudge (module doc). `port=0` picks a free port."""

    daemon_threads = True

    def __init__(self, judge, host: str = "127.0.0.1", port: int = 8000):
        self.judge = judge
        self.default_prompt = judge.config.prompt
        self.batcher = _Batcher(judge, judge.config.batch_size)
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "ScoreServer":
        """Serve from a background thread (tests, benchmarks); `close()` stops it."""
        threading.Thread(target=self.serve_forever, name="hpsv3-server", daemon=True).start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self.batcher.close()


class _Handler(BaseHTTPRequestHandler):
    server: ScoreServer

    def log_message(self, fmt, *args):  # the request log goes to logging, not stderr
        log.debug("%s " + fmt, self.address_string(), *args)

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, status: int, error: str) -> None:
        self._send(status, {"available": False, "score": None, "error": error})

    def do_GET(self):
        if self.path.rstrip("/") == "/health":
            self._send(200, {"loaded": True, "error": None, "model": self.server.judge.name})
        else:
            self._refuse(404, f"no such endpoint {self.path}: use POST /score or GET /health")

    def do_POST(self):
        if self.path.rstrip("/") != "/score":
            return self._refuse(404, f"no such endpoint {self.path}: use POST /score or GET /health")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self._refuse(413, f"request of {length} bytes; at most {MAX_BODY}")
        try:
            body = json.loads(self.rfile.read(length))
            if not isinstance(body, dict) or not isinstance(body.get("png_base64"), str):
                raise ValueError('send {"png_base64": "...", "prompt": "..."}')
            prompt = body.get("prompt") or self.server.default_prompt
            if not isinstance(prompt, str):
                raise ValueError("prompt must be a string")
            with Image.open(io.BytesIO(base64.b64decode(body["png_base64"], validate=True))) as im:
                im.load()
                image = im.copy()
        except (ValueError, OSError, binascii.Error) as e:
            return self._refuse(400, f"bad request: {e}")
        rating = self.server.batcher.submit(image, prompt).result()
        if not rating.ok:
            return self._send(200, {"available": False, "score": None, "error": rating.reason})
        self._send(200, {"mu": rating.mu, "sigma": rating.log_sigma, "log_sigma": rating.log_sigma,
                         "score": rating.score, "available": True})

