"""`openai:NAME`: any OpenAI-compatible chat-completions endpoint, over httpx.

Covers OpenAI itself, vLLM, TGI, Ollama, `transformers serve` and Hugging Face Inference
Providers (`--base-url https://router.huggingface.co/v1`, key = an HF token). The base URL comes
from `BackendConfig.base_url` or `OPENAI_BASE_URL`, the key from `BackendConfig.api_key` or
`OPENAI_API_KEY` (a local server needs none). Images go as base64 data URLs.

    python -m salon.curate.backends openai:NAME --base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import base64
import json
import os

import httpx

from salon.curate.backends import BackendConfig, BackendFatal, CallFailed, Completion, Sampling
from salon.curate.prompts import Message

# A reply body larger than this is not a sketch: stop reading instead of filling memory.
MAX_BODY_BYTES = 16 * 1024 * 1024


class OpenAIBackend:
    supports_images = True  # the server decides; a refusal arrives as an HTTP 400 per call

    def __init__(self, model: str, config: BackendConfig):
        self.model = model
        self.name = f"openai:{model}"
        base = config.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.url = base.rstrip("/") + "/chat/completions"
        key = config.api_key or os.environ.get("OPENAI_API_KEY")
        headers = {"User-Agent": "salon-curate"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # The per-attempt deadline is `Limited`'s; httpx's own is a looser backstop, so a slow
        # reply always fails the same way.
        self._client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(config.timeout_s + 5),
            limits=httpx.Limits(max_connections=config.concurrency))

    async def complete(self, messages: list[Message], sampling: Sampling) -> Completion:
        body = {"model": self.model, "messages": [_encode(m) for m in messages],
                "temperature": sampling.temperature, "top_p": sampling.top_p,
                "max_tokens": sampling.max_tokens}
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        try:
            async with self._client.stream("POST", self.url, json=body) as response:
                raw = await _read_capped(response)
        except httpx.TimeoutException as e:
            raise CallFailed(f"HTTP timeout ({type(e).__name__}) from {self.url}") from e
        except httpx.HTTPError as e:
            raise CallFailed(f"cannot reach {self.url}: {type(e).__name__}: {e}") from e
        _check_status(response.status_code, raw, self.url, self.model)
        try:
            choice = json.loads(raw)["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            raise CallFailed(f"malformed reply from {self.url}: {raw[:200]!r}") from e
        if not isinstance(content, str):  # some servers answer with a list of parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return Completion(content, choice.get("finish_reason"))

    async def aclose(self) -> None:
        await self._client.aclose()


async def _read_capped(response: httpx.Response) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise CallFailed(f"reply larger than {MAX_BODY_BYTES >> 20} MB; not read",
                             retryable=False)
        chunks.append(chunk)
    return b"".join(chunks)


def _check_status(status: int, raw: bytes, url: str, model: str) -> None:
    if status == 200:
        return
    detail = raw[:300].decode("utf-8", "replace")
    if status in (401, 403):
        raise BackendFatal(f"{url} refused the key (HTTP {status}); set OPENAI_API_KEY or pass "
                           f"--api-key. Server said: {detail}")
    if status == 404:
        raise BackendFatal(f"{url} answered 404 for model {model!r}; check --base-url (it "
                           f"usually ends in /v1) and the model name. Server said: {detail}")
    retryable = status in (408, 409, 429) or status >= 500
    raise CallFailed(f"HTTP {status} from {url}: {detail}", retryable=retryable)


def _encode(message: Message) -> dict:
    if not message.images:
        return {"role": message.role, "content": message.text}
    parts = [{"type": "image_url", "image_url": {"url": _data_url(img)}}
             for img in message.images]
    return {"role": message.role, "content": parts + [{"type": "text", "text": message.text}]}


def _data_url(image: bytes) -> str:
    mime = "image/png" if image.startswith(b"\x89PNG") else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(image).decode()}"
