"""How every salon command names a model: one resolver, so a name means the same everywhere
(`salon judge --model`, `judge validate`, `curate generate --model hf:NAME`, `eval --oracle ...,model=`,
`train`'s policy.model, judge.model and reward.absolute_kwargs.model, `env serve --judge-model`).

    resolve_model("tiny:qwen2_5_vl")              -> ~/.cache/salon/models/tiny-qwen2_5_vl, built once
    resolve_model("random:qwen3-1.7b", run_dir)   -> RUN_DIR/random-qwen3-1.7b, built once
    resolve_model("/models/qwen-vl")              -> "/models/qwen-vl"            (a folder: as it is)
    resolve_model("Qwen/Qwen3-1.7B")              -> "Qwen/Qwen3-1.7B"            (a Hub id: transformers loads it)
    resolve_model("http://127.0.0.1:8000/v1")     -> the URL                      (a server: the judge speaks to it)
    model_problem("policy.model", "Qwen/Qwen3-0.6B-Instrct")  -> one line saying what is wrong and what to do

The forms: `tiny:ARCH` (a tiny random model built from a config, salon.models.tiny: tiny:qwen2,
tiny:qwen3, tiny:qwen2_vl, tiny:qwen2_5_vl, tiny:qwen3_vl, tiny:hpsv3), `random:NAME` (a named
architecture in its real shape with random weights, salon.models.shapes), a local folder, a Hub
id, an http(s) URL. Built models go to `cache`: a run's output folder for `salon train` and
`salon eval` (the run keeps the weights it started from), else the machine's cache, `salon_cache()
/ "models"` ($SALON_CACHE, default ~/.cache/salon). A build is written beside its folder and moved
in when complete, so an interrupted build is never taken for a model.

model_problem checks in seconds, before anything is built or loaded: an unknown tiny/random
name, and with `find` (the default) a path that does not exist, a Hub id neither in the local cache nor on the Hub; an
unreachable Hub or HF_HUB_OFFLINE with an uncached id says so instead of letting transformers
retry for a minute and end in a traceback. A URL is not checked here (whether its server answers
is the judge's to say: `unreachable()` of salon.judges' OpenAI and HPSv3-service clients).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from salon.pool.errors import ConfigError

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# the built stand-ins offered for a field whose name holds the key (a painter, HPSv3; else a judge's VLM)
TRY_OUTS = {"policy": "tiny:qwen3 or random:qwen3-1.7b", "hf:": "tiny:qwen3 or tiny:qwen2_5_vl",
            "absolute": "tiny:hpsv3 or random:hpsv3"}


def salon_cache() -> Path:
    """Where salon keeps what it builds or pulls once per machine: $SALON_CACHE, default ~/.cache/salon."""
    return Path(os.environ.get("SALON_CACHE") or Path.home() / ".cache" / "salon")


def is_url(spec: str | None) -> bool:
    return bool(spec) and str(spec).startswith(("http://", "https://"))


def built_name(spec: str | None) -> tuple[str, str] | None:
    """("tiny" | "random", NAME) for a model salon builds, None for anything else."""
    kind, sep, name = str(spec or "").partition(":")
    return (kind, name) if sep and kind in ("tiny", "random") else None


def _unknown_built(spec: str) -> str | None:
    """Why salon cannot build `spec` (an unknown tiny or random name), or None."""
    from salon.models.shapes import SHAPES
    from salon.models.tiny import TINY_ARCHS

    kind, name = built_name(spec)
    known = TINY_ARCHS if kind == "tiny" else tuple(SHAPES)
    return None if name in known else f"unknown {kind} model; use {kind}:{f', {kind}:'.join(known)}"


def resolve_model(spec: str, cache: str | Path | None = None) -> str:
    """What transformers (or a judge) loads for `spec`: the spec itself, or the folder a tiny:/random:
    model is built into under `cache` (default salon_cache()/models), once."""
    built = built_name(spec)
    if built is None:
        return spec
    if problem := _unknown_built(spec):
        raise ConfigError([f"{spec}: {problem}"], "model")
    kind, name = built
    folder = Path(cache if cache is not None else salon_cache() / "models") / f"{kind}-{name}"
    if folder.exists():
        return str(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = folder.with_name(f"{folder.name}.building-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    if kind == "tiny":
        from salon.models.tiny import build_tiny

        build_tiny(name, partial)
    else:
        from salon.models.shapes import build_random

        build_random(name, partial)
    try:
        partial.rename(folder)
    except OSError:  # another process finished the same build first: theirs is as good
        shutil.rmtree(partial, ignore_errors=True)
    return str(folder)


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


def model_problem(field: str, spec: str | None, timeout_s: float = 10.0, find: bool = True) -> str | None:
    """One line naming what is wrong with `spec` and what to do, or None when it can be loaded.
    The line starts `FIELD=SPEC: ` (a field ending in ':', such as curate's `--model hf:`, is followed by
    the spec directly). `find=False` checks only what the name says (a tiny: or random: name salon
    knows), not whether a folder or Hub id is there: a config that is read, not run."""
    if not spec or is_url(spec):
        return None
    spec = str(spec)
    shown = f"{field}{spec}" if field.endswith(":") else f"{field}={spec}"
    if built_name(spec):
        problem = _unknown_built(spec)
        return problem and f"{shown}: {problem}"
    if not find or Path(spec).expanduser().exists():
        return None
    looks_like_path = spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or not _HUB_ID.match(spec)
    if looks_like_path:
        return f"{shown}: no such folder; give an existing model folder, a Hub id, {_try_out(field)}"
    if _cached(spec):
        return None
    if _offline():
        return (f"{shown}: no such folder here, not in the local Hugging Face cache, and HF_HUB_OFFLINE is set; "
                f"download it first (`hf download {spec}`), give a local folder, {_try_out(field)}")
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().model_info(spec, timeout=timeout_s)
    except GatedRepoError:
        return f"{shown}: gated on the Hub; accept its terms on its page and `hf auth login`"
    except RepositoryNotFoundError:
        return (f"{shown}: no such folder here, and no model {spec} on the Hub ({constants.ENDPOINT}); check the "
                f"spelling (or `hf auth login` if it is private), give a local folder, {_try_out(field)}")
    except Exception as e:  # connection refused, timeout, DNS: the Hub cannot be reached from here
        return (f"{shown}: no such folder here, not in the local cache, and the Hub ({constants.ENDPOINT}) cannot be "
                f"reached ({type(e).__name__}); download it where there is network, set HF_HUB_OFFLINE=1 with it "
                f"cached, give a local folder, {_try_out(field)}")
    return None
