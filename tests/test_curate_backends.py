"""Model backends: `openai:` against a real loopback server running a tiny transformers model,
`hf:` with tiny models built here, the registry, and the limits (timeouts, retries, failures)."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from curate_openai_server import ChatServer  # noqa: E402

from salon.curate.backends import (REGISTRY, BackendConfig, BackendFatal, Limited,  # noqa: E402
                                   Sampling, make_backend, parse_spec)
from salon.curate.prompts import Message, SubjectBook, paint_messages  # noqa: E402
from salon.pool.errors import ConfigError  # noqa: E402

SUBJECT = SubjectBook.load().get("peach hibiscus")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    from salon.models.tiny import build_lm

    return str(build_lm(tmp_path_factory.mktemp("lm"), "qwen2"))


@pytest.fixture(scope="module")
def tiny_vl(tmp_path_factory):
    from salon.models.tiny import build_vl

    return str(build_vl(tmp_path_factory.mktemp("vl"), arch="qwen2_5_vl"))


@pytest.fixture(scope="module")
def server(tiny_lm):
    with ChatServer(["function setup() {\n  createCanvas(600, 600, WEBGL);\n}"], tiny_lm,
                    slow_s=3.0) as s:
        yield s


def _photo() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (80, 60), (220, 120, 90)).save(buf, "JPEG")
    return buf.getvalue()


def _limited(spec: str, **kw) -> Limited:
    config = BackendConfig(**({"timeout_s": 10, "retries": 1, "backoff_s": 0} | kw))
    return Limited(make_backend(spec, config), config)


async def test_openai_backend_talks_to_a_real_tiny_model(server):
    limited = _limited("openai:tiny", base_url=server.base_url)
    try:
        call = await limited.call(paint_messages(SUBJECT), Sampling(max_tokens=24, seed=3))
    finally:
        await limited.aclose()
    assert call.ok, call.error
    assert call.completion.text and call.completion.finish_reason in ("stop", "length")
    sent = server.requests[-1]
    assert sent["messages"][0]["role"] == "system" and "brush.fillBleed" in sent["messages"][0]["content"]
    assert (sent["max_tokens"], sent["seed"], sent["top_p"]) == (24, 3, 0.95)


async def test_openai_backend_sends_photos_as_data_urls(server):
    limited = _limited("openai:examples", base_url=server.base_url)
    try:
        call = await limited.call(paint_messages(SUBJECT, _photo()), Sampling())
    finally:
        await limited.aclose()
    assert call.ok
    content = server.requests[-1]["messages"][1]["content"]
    assert content[0]["image_url"]["url"].startswith("data:image/jpeg;base64,/9j/")
    assert content[1]["type"] == "text" and "photo" in content[1]["text"]


@pytest.mark.parametrize("model,expect", [
    ("error500", "HTTP 500"),
    ("slow", "timed out after 0.5 s"),
    ("malformed", "malformed reply"),
])
async def test_failed_calls_are_reported_not_raised(server, model, expect):
    limited = _limited(f"openai:{model}", base_url=server.base_url, timeout_s=0.5)
    before = len(server.requests)
    try:
        call = await limited.call(paint_messages(SUBJECT), Sampling())
    finally:
        await limited.aclose()
    assert not call.ok and expect in call.error
    assert call.attempts == 2 and len(server.requests) - before == 2  # one retry, then give up


async def test_retry_recovers_from_a_500(server):
    limited = _limited("openai:flaky", base_url=server.base_url)
    try:
        call = await limited.call(paint_messages(SUBJECT), Sampling(seed=99))
    finally:
        await limited.aclose()
    assert call.ok and call.attempts == 2 and "createCanvas" in call.completion.text


async def test_a_huge_reply_is_cut_not_fatal(server):
    limited = _limited("openai:huge", base_url=server.base_url, max_reply_chars=50_000)
    try:
        call = await limited.call(paint_messages(SUBJECT), Sampling())
    finally:
        await limited.aclose()
    assert call.ok and call.completion.truncated and len(call.completion.text) == 50_000


async def test_bad_key_is_fatal_with_advice(server):
    limited = _limited("openai:auth", base_url=server.base_url)
    try:
        with pytest.raises(BackendFatal, match="OPENAI_API_KEY"):
            await limited.call(paint_messages(SUBJECT), Sampling())
    finally:
        await limited.aclose()


async def test_unreachable_server_is_a_failed_call():
    limited = _limited("openai:x", base_url="http://127.0.0.1:9/v1")  # discard port: refused
    try:
        call = await limited.call(paint_messages(SUBJECT), Sampling())
    finally:
        await limited.aclose()
    assert not call.ok and "cannot reach" in call.error


async def test_hf_text_backend_generates(tiny_lm):
    limited = _limited(f"hf:{tiny_lm}")
    try:
        assert not limited.backend.supports_images
        call = await limited.call(paint_messages(SUBJECT), Sampling(max_tokens=16, seed=1))
        assert call.ok and call.completion.finish_reason in ("stop", "length")
        with pytest.raises(BackendFatal, match="cannot look at photos"):
            await limited.call(paint_messages(SUBJECT, _photo()), Sampling(max_tokens=8))
    finally:
        await limited.aclose()


async def test_hf_vision_backend_looks_at_a_photo(tiny_vl):
    limited = _limited(f"hf:{tiny_vl}")
    try:
        assert limited.backend.supports_images
        call = await limited.call(paint_messages(SUBJECT, _photo()), Sampling(max_tokens=8, seed=2))
    finally:
        await limited.aclose()
    assert call.ok, call.error
    assert isinstance(call.completion.text, str)


def test_hf_backend_with_a_missing_model_is_fatal(tmp_path):
    # named and checked as every command names a model (salon.models.names), before transformers is asked
    with pytest.raises(BackendFatal, match=f"^{re.escape(f'hf:{tmp_path}/nothing-here')}: no such folder; give an"):
        make_backend(f"hf:{tmp_path / 'nothing-here'}")
    with pytest.raises(BackendFatal, match="^hf:tiny:qwen9: unknown tiny model; use tiny:qwen2, tiny:qwen3"):
        make_backend("hf:tiny:qwen9")


def test_registry_and_specs():
    assert set(REGISTRY) >= {"openai", "hf"}
    assert parse_spec("openai:org/model:tag") == ("openai", "org/model:tag")
    for bad in ["gpt-4o", "nope:model", "openai:", ":model"]:
        with pytest.raises(ConfigError):
            parse_spec(bad)


class EchoBackend:
    """A plug-in loaded by dotted path: the escape hatch of the registry."""

    supports_images = False

    def __init__(self, model, config):
        self.name = f"{__name__}.EchoBackend:{model}"

    async def complete(self, messages: list[Message], sampling: Sampling):
        from salon.curate.backends import Completion

        return Completion(messages[-1].text)

    async def aclose(self):
        pass


async def test_dotted_path_backend():
    limited = _limited(f"{__name__}.EchoBackend:anything")
    call = await limited.call([Message("user", "hello")], Sampling())
    assert call.ok and call.completion.text == "hello"


def test_backend_config_reports_every_problem():
    with pytest.raises(ConfigError) as e:
        BackendConfig(concurrency=0, timeout_s=0, retries=-1, max_reply_chars=5)
    assert len(e.value.problems) == 4
