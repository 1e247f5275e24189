"""A pairwise judge over HTTP: the service around any salon Judge and its references, and its client.

    server = JudgeServer(judge, refs, token=secrets.token_urlsafe(32)).start()   # 127.0.0.1, a free port
    judge = RemoteJudge(server.url, token, name=judge.name, prompt_version=judge.prompt_version)
    judge.judge(paintings, draw.references)      # the Judge protocol: verdicts as the served judge gives them
    judge.health()                               # {"judge", "prompt_version", "references", "step"}
    server.close()

What it is for: TRL's async trainer scores rollouts in a spawned child process that sees no GPU
(salon.train.trl_async), and its docs ask that a GPU reward model be reached over HTTP. The judge
model stays in the trainer's process, on its card; the child sends it paintings.

    POST /judge   {"groups": [{"candidates": [png_base64, ...], "references": [id, ...]}, ...]}
                  -> {"verdicts": [[[Verdict.to_dict(), ...] per reference] per candidate] per group}
    GET  /health  -> {"judge": name, "prompt_version": str, "references": n, "step": int | null}

Only scoring is served: references are named by their ids (the service holds the images, so a
group's k references never travel), and an id it does not hold is refused (400). Every request
must carry `Authorization: Bearer <token>` (401 otherwise, compared in constant time): the token
is made per run and handed to the reward in its config, so another user of the machine cannot
spend the judge's card or read its verdicts. Loopback by default; `step` is the trainer's step
when it says one (the reward's archive names the policy by it). A judge that raises answers 503
with the reason: the client raises, and the Scorer counts the sample as missing, never 0.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import io
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Sequence

from PIL import Image

from salon.judges.references import ReferenceSet
from salon.judges.verdict import Reference, Verdict, png_base64
from salon.judges.vlm_openai import CallFailed, request_json

log = logging.getLogger(__name__)

MAX_BODY = 256 * 2**20  # bytes of a /judge request: a few groups of 600x600 PNGs


class RemoteJudge:
    """The `Judge` protocol (with `judge_many`) answered by a JudgeServer. `name` and `prompt_version`
    are the served judge's, so the archive names the judge that answered, not the wire."""

    def __init__(self, url: str, token: str, name: str, prompt_version: str, timeout_s: float = 600.0,
                 attempts: int = 2, backoff_s: float = 1.0):
        self.url, self.token = url.rstrip("/"), token
        self.name, self.prompt_version = name, prompt_version
        self.timeout_s, self.attempts, self.backoff_s = timeout_s, attempts, backoff_s

    def health(self) -> dict:
        """GET /health once (raises CallFailed when there is no answer)."""
        return self._request("GET", "/health", None, timeout_s=10.0)

    def judge(self, candidates: Sequence[Image.Image], references: Sequence[Reference]) -> list[list[Verdict]]:
        return self.judge_many([(candidates, references)])[0]

    def judge_many(self, groups) -> list[list[list[Verdict]]]:
        """Several (candidates, references) groups in one request. Raises CallFailed when the service
        gives no usable answer (the Scorer's judge_safely makes those samples missing)."""
        body = {"groups": [{"candidates": [png_base64(image) for image in candidates],
                            "references": [r.id for r in references]} for candidates, references in groups]}
        for attempt in range(self.attempts):
            try:
                reply = self._request("POST", "/judge", body, timeout_s=self.timeout_s)
                break
            except CallFailed as e:
                if not e.retry or attempt + 1 == self.attempts:
                    raise
                time.sleep(self.backoff_s * 2 ** attempt)
        return _verdicts(reply, [(len(c), len(r)) for c, r in groups], self.url)

    def _request(self, method: str, path: str, body: dict | None, timeout_s: float):
        return request_json(self.url + path, method, body, headers={"Authorization": f"Bearer {self.token}"},
                            timeout_s=timeout_s)


def _verdicts(reply, shapes: list[tuple[int, int]], url: str) -> list[list[list[Verdict]]]:
    """The reply's verdicts, checked to hold one per candidate and reference of each group."""
    try:
        groups = reply["verdicts"]
        out = [[[Verdict(**v) for v in row] for row in group] for group in groups]
        if [(len(g), {len(row) for row in g}) for g in out] != [(n, {k} if n else set()) for n, k in shapes]:
            raise ValueError(f"shape {[[len(row) for row in g] for g in out]} for {shapes}")
    except (KeyError, TypeError, ValueError) as e:
        raise CallFailed(f"malformed answer from {url}/judge: {e}", retry=False) from None
    return out


# ---- the service ---------------------------------------------------------------------------------


class BackgroundServer(ThreadingHTTPServer):
    """An HTTP server on host:port (`port=0`: a free one) that serves from a daemon thread once
    `start()`ed, until `close()`."""

    daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        threading.Thread(target=self.serve_forever, name=type(self).__name__, daemon=True).start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def send_json(handler: BaseHTTPRequestHandler, status: int, body: dict, headers: dict | None = None) -> None:
    """Answer the handler's request with `body` as JSON."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


class JudgeServer(BackgroundServer):
    """The service (module doc) around `judge` and `references`; `step` says the trainer's step (None:
    none)."""

    def __init__(self, judge, references: ReferenceSet, token: str, host: str = "127.0.0.1", port: int = 0,
                 step: Callable[[], int | None] | None = None):
        if len(token) < 16:
            raise ValueError("a JudgeServer needs a token of at least 16 characters (secrets.token_urlsafe(32))")
        self.judge, self.token, self.step = judge, token, step or (lambda: None)
        self.references = {r.id: r for r in references.references}
        self.lock = threading.Lock()  # one judge call at a time: a model's forward passes are not shared
        super().__init__((host, port), _Handler)

    def health(self) -> dict:
        return {"judge": self.judge.name, "prompt_version": self.judge.prompt_version,
                "references": len(self.references), "step": self.step()}

    def verdicts(self, groups: list[tuple[list[Image.Image], list[Reference]]]) -> list[list[list[Verdict]]]:
        todo = [(images, refs) for images, refs in groups if images]
        with self.lock:
            many = getattr(self.judge, "judge_many", None)
            answers = iter(many(todo) if many is not None else [self.judge.judge(i, r) for i, r in todo])
        return [next(answers) if images else [] for images, _ in groups]


class _Handler(BaseHTTPRequestHandler):
    server: JudgeServer

    def log_message(self, fmt, *args):  # the request log goes to logging, not stderr
        log.debug("%s " + fmt, self.address_string(), *args)

    def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
        send_json(self, status, body, headers)

    def _authorized(self) -> bool:
        scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.server.token.encode()):
            return True
        self._send(401, {"error": "send Authorization: Bearer <the token this run was given>"},
                   {"WWW-Authenticate": "Bearer"})
        return False

    def do_GET(self):
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/health":
            return self._send(404, {"error": f"no such endpoint {self.path}: POST /judge or GET /health"})
        self._send(200, self.server.health())

    def do_POST(self):
        if not self._authorized():
            return
        if self.path.rstrip("/") != "/judge":
            return self._send(404, {"error": f"no such endpoint {self.path}: POST /judge or GET /health"})
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            return self._send(413, {"error": f"request of {length} bytes; at most {MAX_BODY}"})
        try:
            groups = self._groups(json.loads(self.rfile.read(length)))
        except (ValueError, OSError, binascii.Error, KeyError, TypeError) as e:
            return self._send(400, {"error": f"bad request: {e}"})
        try:
            answers = self.server.verdicts(groups)
        except Exception as e:  # the judge is down: no answer, which the client's Scorer counts as missing
            log.warning("judge service: %s failed: %s", self.server.judge.name, e)
            return self._send(503, {"error": f"judge failed: {type(e).__name__}: {e}"})
        self._send(200, {"verdicts": [[[v.to_dict() for v in row] for row in group] for group in answers]})

    def _groups(self, body) -> list[tuple[list[Image.Image], list[Reference]]]:
        held = self.server.references
        unknown = sorted({i for g in body["groups"] for i in g["references"] if i not in held})
        if unknown:
            raise ValueError(f"references this service does not hold: {', '.join(unknown[:5])}")
        return [([_image(b) for b in g["candidates"]], [held[i] for i in g["references"]]) for g in body["groups"]]


def _image(data: str) -> Image.Image:
    with Image.open(io.BytesIO(base64.b64decode(data, validate=True))) as im:
        im.load()
        return im.convert("RGB")
