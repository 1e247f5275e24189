"""Is a model where a config says it is? Checked in seconds, before anything is built or written.

    model_problem("policy.model", "Qwen/Qwen3-0.6B-Instrct")  # -> "policy.model=...: no model ... on the Hub ..."
    model_problem("judge.model", "/models/qwen-vl")           # -> None when the folder exists

A model field takes a local folder, a Hub id, an http(s) URL (an OpenAI-compatible server, not
checked here), `tiny:ARCH` or `random:NAME` (built by salon, always there). A path that does not
exist, or a Hub id that is neither in the local cache nor on the Hub, gets one line saying which
and what to do; an unreachable Hub or HF_HUB_OFFLINE with an uncached id says so instead of
letting transformers retry for a minute and end in a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
TRY_OUTS = {"policy": "tiny:qwen3 or random:qwen3-1.7b", "absolute": "tiny:hpsv3 or random:hpsv3"}


def _try_out(field: str) -> str:
    """The built-in stand-ins for this field (a painter for the policy, a VLM for a judge, HPSv3)."""
    kind = next((k for k in TRY_OUTS if k in field), None)
    return f"or {TRY_OUTS.get(kind, 'tiny:qwen2_5_vl or random:qwen2.5-vl-7b')} for a try-out"


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(repo_id, name), str)
               for name in ("config.json", "HPSv3.safetensors", "model_index.json"))


def model_problem(field: str, spec: str | None, timeout_s: float = 10.0) -> str | None:
    """One line naming what is wrong with `spec` and what to do, or None when it can be loaded."""
    if not spec or str(spec).startswith(("tiny:", "random:", "http://", "https://")):
        return None
    spec = str(spec)
    path = Path(spec).expanduser()
    if path.exists():
        return None
    looks_like_path = spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or not _HUB_ID.match(spec)
    if looks_like_path:
        return f"{field}={spec}: no such folder; give an existing model folder, a Hub id, {_try_out(field)}"
    if _cached(spec):
        return None
    if _offline():
        return (f"{field}={spec}: no such folder here, not in the local Hugging Face cache, and HF_HUB_OFFLINE "
                f"is set; "
                f"download it first (`hf download {spec}`), give a local folder, {_try_out(field)}")
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().model_info(spec, timeout=timeout_s)
    except GatedRepoError:
        return f"{field}={spec}: gated on the Hub; accept its terms on its page and `hf auth login`"
    except RepositoryNotFoundError:
        return (f"{field}={spec}: no such folder here, and no model {spec} on the Hub ({constants.ENDPOINT}); "
                f"check the spelling "
                f"(or `hf auth login` if it is private), give a local folder, {_try_out(field)}")
    except Exception as e:  # connection refused, timeout, DNS: the Hub cannot be reached from here
        reason = type(e).__name__
        return (f"{field}={spec}: no such folder here, not in the local cache, and the Hub ({constants.ENDPOINT}) "
                f"cannot be reached "
                f"({reason}); download it where there is network, set HF_HUB_OFFLINE=1 with it cached, "
                f"give a local folder, {_try_out(field)}")
    return None


def model_problems(fields: dict[str, str | None]) -> list[str]:
    """model_problem for each {field: spec}."""
    return [p for field, spec in fields.items() if (p := model_problem(field, spec))]
