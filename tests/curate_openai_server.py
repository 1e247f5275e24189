"""A real OpenAI-compatible chat server on 127.0.0.1 for curate tests and the benchmark.

The `model` field of each request picks the behaviour, so one server plays every backend:

    tiny          a tiny transformers causal LM (a folder) generates the reply for real
    examples      answers at once with the next sketch of a list, fenced, as a good model would
    empty         "" as content                 garbage    random characters
    error500      HTTP 500 every time           flaky      HTTP 500, then `examples` on retry
    slow          sleeps `slow_s` before answering (past the client's timeout)
    huge          a 1 MB reply                  auth       HTTP 401
    malformed     HTTP 200 with a body that is not JSON

GET /v1/models lists these names, as a server lists what it serves (a judge asks it first).
`hang_after`: answer that many `examples` requests, then hold every further one open (a run to
be killed mid-way). Run it alone: `python tests/curate_openai_server.py [MODEL_DIR]`.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


BEHAVIOURS = ("tiny", "examples", "empty", "garbage", "error500", "flaky", "slow", "huge", "auth", "malformed")


class ChatServer:
    def __init__(self, sketches: list[str], tiny_model_dir: str | None = None, slow_s: float = 3.0):
        self.sketches = itertools.cycle(sketches)
        self.tiny_model_dir = tiny_model_dir
        self.slow_s = slow_s
        self.hang_after: int | None = None
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._flaky_seen: set[str] = set()
        self._tiny = None
        self._release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                self.reply(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in BEHAVIOURS]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self.reply(*server.answer(body))

            def reply(self, status: int, payload):
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left: that is what `slow` is for

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, body: dict):
        model = body["model"]
        with self._lock:
            self.requests.append(body)
            served = sum(1 for r in self.requests if r["model"] == "examples")
        if model == "examples" and self.hang_after is not None and served > self.hang_after:
            self._release.wait()
            return 503, {"error": "shutting down"}
        if model == "flaky":
            key = json.dumps(body["messages"], sort_keys=True) + str(body.get("seed"))
            with self._lock:
                first = key not in self._flaky_seen
                self._flaky_seen.add(key)
            if first:
                return 500, {"error": {"message": "overloaded"}}
            model = "examples"
        if model == "examples":
            with self._lock:
                sketch = next(self.sketches)
            return 200, _completion(f"Here is the painting.\n\n```javascript\n{sketch}\n```\n")
        if model == "tiny":
            return 200, _completion(*self._generate(body))
        if model == "empty":
            return 200, _completion("")
        if model == "garbage":
            rng = random.Random(len(self.requests))
            return 200, _completion("".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(400)))
        if model == "huge":
            return 200, _completion("x = 1; // filler\n" * 62_000)
        if model == "slow":
            time.sleep(self.slow_s)
            return 200, _completion("too late")
        if model == "error500":
            return 500, {"error": {"message": "internal error"}}
        if model == "auth":
            return 401, {"error": {"message": "invalid api key"}}
        if model == "malformed":
            return 200, b"<html>502 Bad Gateway</html>"
        return 404, {"error": {"message": f"model {model} not found"}}

    def _generate(self, body: dict) -> tuple[str, str]:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        with self._lock:
            if self._tiny is None:
                self._tiny = (AutoTokenizer.from_pretrained(self.tiny_model_dir),
                              AutoModelForCausalLM.from_pretrained(self.tiny_model_dir).eval())
            tok, model = self._tiny
            chat = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                     else " ".join(p.get("text", "") for p in m["content"])}
                    for m in body["messages"]]
            inputs = tok.apply_chat_template(chat, add_generation_prompt=True,
                                             return_tensors="pt", return_dict=True)
            torch.manual_seed(body.get("seed") or 0)
            out = model.generate(**inputs, max_new_tokens=min(body.get("max_tokens", 32), 64),
                                 do_sample=True, temperature=body.get("temperature", 1.0) or 1.0,
                                 pad_token_id=tok.pad_token_id)
        new = out[0, inputs["input_ids"].shape[1]:]
        finish = "length" if len(new) >= min(body.get("max_tokens", 32), 64) else "stop"
        return tok.decode(new, skip_special_tokens=True), finish


def _completion(text: str, finish: str = "stop") -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": "test", "choices": [{"index": 0, "finish_reason": finish,
                                          "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


if __name__ == "__main__":
    with ChatServer(["function setup() { createCanvas(600, 600, WEBGL); }"],
                    sys.argv[1] if len(sys.argv) > 1 else None) as s:
        print(s.base_url, flush=True)
        threading.Event().wait()
