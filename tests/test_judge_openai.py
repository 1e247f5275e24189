"""The OpenAI-compatible judge against a real HTTP server on 127.0.0.1.

The server runs the taught tiny VLM on each request (the chat messages it receives, the images
decoded from their data URLs, the processor's chat template) and answers in the OpenAI
chat-completions shape with top logprobs, the way vLLM does. Modes make it answer with text
only, garbage, errors, slowly, or refuse logprobs.
"""

from __future__ import annotations

import base64
import io
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_models import flat_image, tiny_vl  # noqa: E402

from salon.judges.verdict import Reference  # noqa: E402
from salon.judges.vlm_openai import OpenAIJudgeConfig, OpenAIPairwiseJudge  # noqa: E402
from salon.judges.vlm_transformers import TransformersPairwiseJudge  # noqa: E402
from salon.pool.errors import ConfigError  # noqa: E402

SERVED = "tiny-qwen-judge"


class TinyVLMServer:
    """A small OpenAI-compatible server around a local model: /v1/models, /v1/chat/completions."""

    def __init__(self, folder):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.torch = torch
        self.model = AutoModelForImageTextToText.from_pretrained(folder).eval()
        self.processor = AutoProcessor.from_pretrained(folder)
        self.mode, self.requests, self.fail_first = "model", 0, 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reset(self, mode="model", fail_first=0):
        self.mode, self.requests, self.fail_first = mode, 0, fail_first

    def complete(self, body: dict) -> dict:
        from PIL import Image

        images, content = [], []
        for item in body["messages"][-1]["content"]:
            if item["type"] == "image_url":
                data = item["image_url"]["url"].split(",", 1)[1]
                images.append(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))
                content.append({"type": "image"})
            else:
                content.append(item)
        text = self.processor.apply_chat_template([{"role": "user", "content": content}],
                                                  add_generation_prompt=True, tokenize=False)
        batch = self.processor(text=[text], images=images, return_tensors="pt")
        with self.lock, self.torch.inference_mode():
            logprobs = self.torch.log_softmax(self.model(**batch).logits[0, -1].float(), -1)
        top = self.torch.topk(logprobs, int(body.get("top_logprobs") or 1))
        tok = self.processor.tokenizer
        alts = [{"token": tok.decode([int(i)]), "logprob": float(lp), "bytes": list(tok.decode([int(i)]).encode())}
                for lp, i in zip(top.values, top.indices)]
        choice = {"index": 0, "message": {"role": "assistant", "content": alts[0]["token"]}, "finish_reason": "length"}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [dict(alts[0], top_logprobs=alts)]}
        return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": SERVED,
                "choices": [choice], "usage": {"prompt_tokens": int(batch["input_ids"].shape[1]),
                                               "completion_tokens": 1}}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models":
                    self.reply(200, {"object": "list", "data": [{"id": SERVED, "object": "model"}]})
                else:
                    self.reply(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests += 1
                    n = server.requests
                mode = server.mode
                if n <= server.fail_first or mode == "error":
                    return self.reply(503, {"error": {"message": "overloaded"}})
                if mode == "slow":
                    time.sleep(1.0)
                if mode == "reject_logprobs" and body.get("logprobs"):
                    return self.reply(400, {"error": {"message": "logprobs are not supported by this provider"}})
                out = server.complete(body)
                if mode in ("text", "reject_logprobs"):
                    out["choices"][0].pop("logprobs", None)
                if mode == "garbage":
                    out["choices"][0].pop("logprobs", None)
                    out["choices"][0]["message"]["content"] = "I think the first"
                self.reply(200, out)

        return Handler


@pytest.fixture(scope="module")
def server():
    s = TinyVLMServer(tiny_vl("qwen2_5_vl", taught=True))
    yield s
    s.httpd.shutdown()


@pytest.fixture
def paintings():
    return [flat_image(210, seed=1), flat_image(60, seed=2)], [
        Reference.from_image(flat_image(140, seed=3, tint=(20, 0, -20)), id="mid", tier="love"),
        Reference.from_image(flat_image(90, seed=4), id="dim", tier="okay")]


def make(server, **kw):
    return OpenAIPairwiseJudge(OpenAIJudgeConfig(base_url=server.url, backoff_s=0.01, **kw))


def test_logprob_verdicts_equal_the_local_judge_on_the_same_model(server, paintings):
    server.reset()
    cands, refs = paintings
    remote = make(server).judge(cands, refs)
    local = TransformersPairwiseJudge(model=str(tiny_vl("qwen2_5_vl", taught=True)), sharing="off").judge(cands, refs)
    for r_row, l_row in zip(remote, local):
        for r, loc in zip(r_row, l_row):
            assert r.p == pytest.approx(loc.p, abs=1e-4)
            assert r.p_first == pytest.approx(loc.p_first, abs=1e-4)
            assert 0 < r.p_first < 1  # soft probabilities, not a parsed letter
    assert server.requests == 2 * len(cands) * len(refs)  # both orders, one request each


def test_model_name_comes_from_the_server(server, paintings):
    server.reset()
    judge = make(server)
    judge.judge(paintings[0][:1], paintings[1][:1])
    assert judge.name == f"openai:{SERVED}@{server.url}"


def test_text_answer_is_parsed_strictly_when_there_are_no_logprobs(server, paintings):
    server.reset("text")
    rows = make(server).judge(*paintings)
    for v in (v for row in rows for v in row):
        assert v.p_first in (0.0, 1.0) and v.p_second in (0.0, 1.0) and v.p in (0.0, 0.5, 1.0)
    assert rows[0][1].p == 1.0  # the taught model: the bright painting beats the dim one in both orders


def test_unparseable_answer_gives_none_with_the_reason(server, paintings):
    server.reset("garbage")
    v = make(server).judge(*paintings)[0][0]
    assert v.p is None and "could not parse answer 'I think the first'" in v.reason


def test_server_errors_are_retried_then_give_none(server, paintings):
    server.reset("error")
    v = make(server, attempts=3).judge(paintings[0][:1], paintings[1][:1])[0][0]
    assert v.p is None and "HTTP 503" in v.reason and "after 3 attempts" in v.reason
    assert server.requests == 2 * 3  # two orders, three attempts each


def test_a_flaky_server_recovers_within_the_attempts(server, paintings):
    server.reset(fail_first=2)
    rows = make(server, attempts=3, concurrency=1).judge(*paintings)
    assert all(v.p is not None for row in rows for v in row)


def test_timeout_gives_none(server, paintings):
    server.reset("slow")
    v = make(server, timeout_s=0.2, attempts=1).judge(paintings[0][:1], paintings[1][:1])[0][0]
    assert v.p is None and "timeout" in v.reason


def test_service_down_gives_none():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = OpenAIPairwiseJudge(base_url=f"http://127.0.0.1:{port}/v1", attempts=2, backoff_s=0.01)
    v = judge.judge([flat_image(100)], [Reference.from_image(flat_image(50), id="r")])[0][0]
    assert v.p is None and "service down" in v.reason


def test_a_server_refusing_logprobs_falls_back_to_text(server, paintings):
    server.reset("reject_logprobs")
    judge = make(server)
    rows = judge.judge(*paintings)
    assert all(v.p in (0.0, 0.5, 1.0) for row in rows for v in row)
    assert judge._logprobs is False


def test_config_reports_every_problem_at_once():
    with pytest.raises(ConfigError) as e:
        OpenAIJudgeConfig(base_url="localhost:8000", timeout_s=0, attempts=0, top_logprobs=50)
    assert len(e.value.problems) == 4
