"""Model backends: one small protocol, a registry by name, and the limits every call runs under.

A model is named `backend:model`, e.g. `openai:Qwen/Qwen3-Coder-Next` or `hf:./my-model`.
`backend` is a registry key (`openai`, `hf`) or, as an escape hatch, a dotted path to a class
(`mypkg.backends.MyBackend:model-name`) built like the registered ones: `cls(model, config)`.

`Limited` wraps a backend with a per-backend concurrency limit, a timeout per attempt and
retries with exponential backoff. It never raises for a failed call: it returns a `Call` with
`ok=False` and the reason, so a failed call is counted as an infrastructure failure and never
becomes a candidate. A call that cannot succeed on retry (bad key, unknown model) raises
`BackendFatal`, so a run stops early instead of failing every call the same way.

    python -m salon.curate.backends openai:NAME --base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import asyncio
import importlib
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Annotated, Protocol, runtime_checkable

from salon.curate.prompts import Message
from salon.pool.errors import BackendError, ConfigError
from salon.pool.field_checks import at_least, field_problems, positive, raise_problems

# Registered backends, imported lazily so `hf` does not import torch unless it is used.
REGISTRY: dict[str, str] = {
    "openai": "salon.curate.backend_openai.OpenAIBackend",
    "hf": "salon.curate.backend_hf.HFBackend",
}


class CallFailed(BackendError):
    """One attempt failed; `retryable` says whether trying again can help."""

    def __init__(self, message: str, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


class BackendFatal(BackendError):
    """No call to this backend can succeed (bad key, unknown model, no image support)."""


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.9
    top_p: float = 0.95
    max_tokens: int = 4096
    seed: int | None = None

    def as_dict(self) -> dict:
        return {"temperature": self.temperature, "top_p": self.top_p,
                "max_tokens": self.max_tokens, "seed": self.seed}


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None = None
    truncated: bool = False  # the reply was cut at `BackendConfig.max_reply_chars`


@runtime_checkable
class Backend(Protocol):
    """What generation needs from a model. `name` is the full `backend:model` string."""

    name: str
    supports_images: bool

    async def complete(self, messages: list[Message], sampling: Sampling) -> Completion:
        """Answer a chat; raise `CallFailed` (or `BackendFatal`) when there is no answer."""
        ...

    async def aclose(self) -> None: ...


@dataclass
class BackendConfig:
    base_url: str | None = None      # openai: falls back to OPENAI_BASE_URL
    api_key: str | None = None       # openai: falls back to OPENAI_API_KEY
    concurrency: Annotated[int, at_least(1)] = 4           # calls in flight per backend
    timeout_s: Annotated[float, positive] = 180.0          # per attempt
    retries: Annotated[int, at_least(0)] = 2               # attempts after the first
    backoff_s: Annotated[float, at_least(0)] = 2.0         # first retry waits about this long, then doubles
    max_reply_chars: Annotated[int, at_least(1000)] = 200_000  # a sketch is never this long; longer replies are cut
    device: str | None = None        # hf: "cpu", "cuda", ...; default picks cuda when present

    def __post_init__(self):
        raise_problems("backend config", field_problems(self))


def parse_spec(spec: str) -> tuple[str, str]:
    """`openai:NAME` -> ("openai", "NAME"); the model part may itself contain colons."""
    kind, sep, model = spec.partition(":")
    if not sep or not kind or not model:
        raise ConfigError([f"model {spec!r} is not `backend:model`; use e.g. "
                           f"`openai:gpt-4o-mini` or `hf:Qwen/Qwen3-0.6B` "
                           f"(backends: {', '.join(REGISTRY)})"], where="--model")
    if kind not in REGISTRY and "." not in kind:
        raise ConfigError([f"unknown backend {kind!r} in {spec!r}; use one of "
                           f"{', '.join(REGISTRY)} or a dotted path to a class"], where="--model")
    return kind, model


def make_backend(spec: str, config: BackendConfig | None = None) -> Backend:
    kind, model = parse_spec(spec)
    module_name, _, attr = REGISTRY.get(kind, kind).rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError([f"cannot load backend {kind!r}: {e}"], where="--model") from e
    return cls(model, config or BackendConfig())


@dataclass
class Call:
    """The outcome of one limited call: a completion, or why there is none."""

    ok: bool
    completion: Completion | None = None
    error: str | None = None
    attempts: int = 0
    seconds: float = 0.0


@dataclass
class Limited:
    """A backend behind its semaphore, timeout and retry policy."""

    backend: Backend
    config: BackendConfig
    _sem: asyncio.Semaphore | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.backend.name

    async def call(self, messages: list[Message], sampling: Sampling) -> Call:
        if self._sem is None:  # created lazily: it must belong to the running loop
            self._sem = asyncio.Semaphore(self.config.concurrency)
        start, error = time.monotonic(), "no attempt"
        for attempt in range(self.config.retries + 1):
            if attempt:
                # Full jitter keeps several workers from retrying a struggling server in step.
                await asyncio.sleep(random.uniform(0.5, 1.0) * self.config.backoff_s
                                    * 2 ** (attempt - 1))
            async with self._sem:
                try:
                    completion = await asyncio.wait_for(
                        self.backend.complete(messages, sampling), self.config.timeout_s)
                except BackendFatal:
                    raise
                except asyncio.TimeoutError:
                    error = f"timed out after {self.config.timeout_s:g} s"
                    continue
                except CallFailed as e:
                    error = str(e)
                    if not e.retryable:
                        break
                    continue
                except (OSError, ValueError) as e:  # a backend bug must not end the run
                    error = f"{type(e).__name__}: {e}"
                    continue
            return Call(True, cap(completion, self.config.max_reply_chars), None,
                        attempt + 1, time.monotonic() - start)
        return Call(False, None, error, attempt + 1, time.monotonic() - start)

    async def aclose(self) -> None:
        await self.backend.aclose()


def cap(completion: Completion, limit: int) -> Completion:
    if len(completion.text) <= limit:
        return completion
    return Completion(completion.text[:limit], completion.finish_reason, truncated=True)


async def _main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(description="ask one backend to paint once and print the reply")
    p.add_argument("model")
    p.add_argument("--base-url")
    p.add_argument("--subject", default="peach hibiscus")
    args = p.parse_args(argv)
    from salon.curate.prompts import SubjectBook, paint_messages

    config = BackendConfig(base_url=args.base_url)
    limited = Limited(make_backend(args.model, config), config)
    try:
        call = await limited.call(paint_messages(SubjectBook.load().get(args.subject)), Sampling())
    finally:
        await limited.aclose()
    print(call.completion.text if call.ok else f"failed after {call.attempts}: {call.error}")
    return 0 if call.ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(_main(sys.argv[1:])))
