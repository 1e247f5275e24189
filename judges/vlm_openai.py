"""Pairwise judge on any OpenAI-compatible chat server: vLLM, TGI, Inference Providers ("openai").

    judge = OpenAIPairwiseJudge(OpenAIJudgeConfig(base_url="http://127.0.0.1:8000/v1"))
    verdicts = judge.judge(candidates, references)      # see verdict.py
    judge.unreachable()                                 # None, or why the server cannot judge now

Each ordered pair is one request (`max_tokens=1`, temperature 0) with the two paintings as PNG
data URLs and the prompt of prompt.py. P(first wins) comes from the answer's top logprobs where
the server returns them (the probabilities of "A" and "B", renormalised); otherwise from the
answer text, parsed strictly ("A" or "B", nothing else) as 1 or 0. Timeouts, connection errors,
429 and 5xx are retried with backoff; what still fails gives a verdict with p None and the
reason. The model defaults to the first one the server lists at /models. `unreachable` asks
/models once, without retries, so a command can refuse a dead server before it starts.
"""

from __future__ import annotations

import json
import math
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Sequence

from PIL import Image

from salon.judges.prompt import PAIRWISE_PROMPT, PairwisePrompt
from salon.judges.verdict import Reference, Verdict, png_base64, verdict_from_orders
from salon.pool.field_checks import Range, at_least, field_problems, positive, raise_problems

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class CallFailed(Exception):
    """A JSON request that got no usable answer. `retry` when repeating it may help (refused, timed
    out, a RETRY_STATUS); `code` and `detail` are an HTTP error's status and the start of its body."""

    def __init__(self, message: str, retry: bool, code: int | None = None, detail: str = ""):
        super().__init__(message)
        self.retry, self.code, self.detail = retry, code, detail


def request_json(url: str, method: str, body: dict | None, headers: dict | None = None, timeout_s: float = 60.0):
    """One JSON request; every way it can fail is a CallFailed whose message says which."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        detail = e.read()[:300].decode(errors="replace")
        raise CallFailed(f"HTTP {e.code} from {url}: {detail}", e.code in RETRY_STATUS, e.code, detail) from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
        reason = getattr(e, "reason", e)
        kind = "timeout" if isinstance(reason, TimeoutError) or "timed out" in str(reason) else "service down"
        raise CallFailed(f"{kind}: {url}: {reason}", retry=True) from None
    try:
        return json.loads(raw)
    except ValueError:
        raise CallFailed(f"malformed answer from {url} (not JSON): {raw[:200]!r}", retry=False) from None


@dataclass
class OpenAIJudgeConfig:
    base_url: str  # up to and including /v1
    model: str | None = None  # None: the first model the server lists
    api_key_env: str = "OPENAI_API_KEY"  # environment variable holding the key (HF_TOKEN for Providers)
    timeout_s: Annotated[float, positive] = 120.0
    attempts: Annotated[int, at_least(1)] = 3
    backoff_s: Annotated[float, at_least(0)] = 1.0
    concurrency: Annotated[int, at_least(1)] = 8
    top_logprobs: Annotated[int, Range(0, 20), "what the API allows"] = 20
    logprobs: bool = True

    def __post_init__(self):
        problems = field_problems(self)
        if not self.base_url.startswith(("http://", "https://")):
            problems.append(f"base_url={self.base_url!r}: give the server's URL, e.g. http://127.0.0.1:8000/v1")
        raise_problems("OpenAIJudgeConfig", problems)
        self.base_url = self.base_url.rstrip("/")


class _Failure(Exception):
    """One request that did not produce an answer; the message is the verdict's reason."""


class OpenAIPairwiseJudge:
    def __init__(self, config: OpenAIJudgeConfig | None = None, prompt: PairwisePrompt = PAIRWISE_PROMPT, **kwargs):
        self.config = config or OpenAIJudgeConfig(**kwargs)
        self.prompt = prompt
        self.prompt_version = prompt.version
        self._model = self.config.model
        self._logprobs = self.config.logprobs
        self._urls: dict[str, str] = {}  # reference key -> data URL, reused across calls

    @property
    def name(self) -> str:
        return f"openai:{self._model or '?'}@{self.config.base_url}"

    def unreachable(self, timeout_s: float = 5.0) -> str | None:
        """Why this server cannot judge now, in one line (it does not answer, refuses the key, lists no
        models, does not serve config.model), or None: asked once before a run, without retries."""
        url = self.config.base_url
        try:
            listing = request_json(url + "/models", "GET", None, self._headers(), timeout_s)
        except CallFailed as e:
            if e.code in (401, 403):
                return f"{e}: check the key in ${self.config.api_key_env}"
            if e.code is None or not self.config.model:  # no answer, or no list to take the model from
                return f"{e}: start the server, or correct its URL (up to and including /v1)"
            return None  # it answers, and the model is named: a server without /models can still judge
        served = [m.get("id") for m in (listing.get("data") or []) if isinstance(m, dict) and m.get("id")] \
            if isinstance(listing, dict) else []
        if not served:
            return f"{url}/models lists no models: name the one to ask with server_model=NAME"
        if self.config.model and self.config.model not in served:
            return f"{url} serves {', '.join(served)}, not {self.config.model}: name one of them"
        return None

    # ---- the Judge protocol -------------------------------------------------------------------
    def judge(self, candidates: Sequence[Image.Image], references: Sequence[Reference]) -> list[list[Verdict]]:
        cand_urls, ref_urls, ref_fail = [_data_url(c) for c in candidates], [], []
        for r in references:
            key = f"{r.id}|{r.path}"
            try:
                if key not in self._urls:
                    self._urls[key] = _data_url(r.load())
                ref_urls.append(self._urls[key])
                ref_fail.append(None)
            except OSError as e:
                ref_urls.append(None)
                ref_fail.append(f"could not read reference {r.id}: {e}")
        keys, pairs = [], []
        for c, cu in enumerate(cand_urls):
            for j, ru in enumerate(ref_urls):
                if ru is not None:
                    keys += [(c, j, 0), (c, j, 1)]
                    pairs += [(cu, ru), (ru, cu)]
        answers = dict(zip(keys, self._run(pairs)))
        out = []
        for c in range(len(candidates)):
            row = []
            for j, ref in enumerate(references):
                if ref_fail[j]:
                    pa, pb, reason = None, None, ref_fail[j]
                else:
                    (pa, ra), (pb, rb) = answers[(c, j, 0)], answers[(c, j, 1)]
                    reason = ra or rb
                row.append(verdict_from_orders(pa, pb, reference=ref.id, judge=self.name,
                                               prompt_version=self.prompt_version, reason=reason))
            out.append(row)
        return out

    def first_wins(self, pairs: Sequence[tuple[Image.Image, Image.Image]]) -> list[float | None]:
        """P(first shown wins) per ordered pair (None where the server did not answer)."""
        return [p for p, _ in self._run([(_data_url(a), _data_url(b)) for a, b in pairs])]

    # ---- requests -----------------------------------------------------------------------------
    def _run(self, url_pairs) -> list[tuple[float | None, str | None]]:
        if not url_pairs:
            return []
        try:
            self._resolve_model()
        except _Failure as e:
            return [(None, str(e))] * len(url_pairs)
        with ThreadPoolExecutor(self.config.concurrency) as pool:
            return list(pool.map(self._ask, url_pairs))

    def _resolve_model(self):
        if self._model is None:
            listing = self._request("GET", "/models", None)
            models = [m.get("id") for m in listing.get("data", []) if m.get("id")]
            if not models:
                raise _Failure(f"server {self.config.base_url} lists no models: pass the model name")
            self._model = models[0]

    def _ask(self, urls: tuple[str, str]) -> tuple[float | None, str | None]:
        messages = self.prompt.messages(*urls)
        for m in messages:  # PIL-free chat items: the API's image_url form
            m["content"] = [{"type": "image_url", "image_url": {"url": x["image"]}} if x["type"] == "image" else x
                            for x in m["content"]]
        body = {"model": self._model, "messages": messages, "max_tokens": 1, "temperature": 0}
        try:
            if self._logprobs:
                body.update(logprobs=True, top_logprobs=self.config.top_logprobs)
                try:
                    reply = self._request("POST", "/chat/completions", body)
                except _Rejected:
                    # the server refuses logprobs: fall back to the strict text answer from now on
                    self._logprobs = False
                    body.pop("logprobs"), body.pop("top_logprobs")
                    reply = self._request("POST", "/chat/completions", body)
            else:
                reply = self._request("POST", "/chat/completions", body)
            return self._p_first(reply), None
        except _Failure as e:
            return None, str(e)

    def _p_first(self, reply: dict) -> float:
        try:
            choice = reply["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise _Failure(f"reply without choices: {str(reply)[:200]}") from None
        first_token = ((choice.get("logprobs") or {}).get("content") or [None])[0]
        if first_token:
            mass = [0.0, 0.0]
            for alt in first_token.get("top_logprobs") or [first_token]:
                idx = self.prompt.parse(alt.get("token", ""))
                if idx is not None and alt.get("logprob") is not None:
                    mass[idx] += math.exp(alt["logprob"])
            if mass[0] + mass[1] > 0:
                return mass[0] / (mass[0] + mass[1])
        text = (choice.get("message") or {}).get("content") or choice.get("text") or ""
        idx = self.prompt.parse(text)
        if idx is None:
            raise _Failure(f"could not parse answer {text[:80]!r}: expected one of {', '.join(self.prompt.answers)}")
        return 1.0 - idx

    def _request(self, method: str, path: str, body: dict | None) -> dict:
        cfg = self.config
        headers = self._headers()
        for attempt in range(cfg.attempts):
            if attempt:
                time.sleep(cfg.backoff_s * 2 ** (attempt - 1))
            try:
                return request_json(cfg.base_url + path, method, body, headers, cfg.timeout_s)
            except CallFailed as e:
                if e.code == 400 and body is not None and "logprobs" in body and "logprob" in e.detail.lower():
                    raise _Rejected(str(e)) from None
                if not e.retry:
                    raise _Failure(str(e)) from None
                last = str(e)
        raise _Failure(f"{last} (after {cfg.attempts} attempts)")

    def _headers(self) -> dict:
        key = os.environ.get(self.config.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}


class _Rejected(_Failure):
    """The server rejected a request option (logprobs)."""


def _data_url(image: Image.Image) -> str:
    return "data:image/png;base64," + png_base64(image)