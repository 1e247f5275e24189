"""Judges by name: a plain registry dict with a dotted-path escape hatch, and the one way a model
given to a judge is read (salon.models.names).

    judge = load_judge("transformers", model="path/to/Qwen2.5-VL-7B-Instruct")
    judge = load_judge("openai", base_url="http://127.0.0.1:8000/v1")
    judge = load_judge("measures")                            # pairwise by palette, layout, paint; no model
    judge = load_judge("composition")                         # an image judge
    judge = load_judge("hpsv3", model="ckpt")                 # a reward model (or model="http://host:8000")
    judge = load_judge("my_pkg.judges:MyJudge", threshold=3)  # anything importable

    judge = judge_for("tiny:qwen2_5_vl")                      # what every command does with a model name
    judge = judge_for("http://127.0.0.1:8000/v1", server_model="Qwen3-VL-30B-A3B")
    judge = judge_for(None, "measures", temperature=0.03)
    problems = judge_problems("tiny:qwen9", "transformers", field="--model")   # [] or lines, nothing loaded

Keyword arguments go to the class (the backends in SETTINGS take their settings dataclass's
fields). `judge_for` reads a model the same way for every backend: an http(s) URL is an
OpenAI-compatible server (the openai backend, whose served model is `server_model`, default the
first it lists), anything else a model name salon.models.names resolves (tiny:ARCH, random:NAME,
a folder, a Hub id) for a backend that takes a model (transformers, hpsv3, a class with a `model`
parameter); the others (measures, the image judges) take none. It checks first, in seconds
(`judge_problems`: the backend, the model, the arguments), and says everything wrong at once.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path

from salon.models.names import is_url, model_problem, resolve_model
from salon.pool.errors import ConfigError, JudgeError

JUDGES = {
    "transformers": "salon.judges.vlm_transformers:TransformersPairwiseJudge",
    "openai": "salon.judges.vlm_openai:OpenAIPairwiseJudge",
    "measures": "salon.judges.measure_judge:MeasurePairwiseJudge",  # pairwise by image measures, no model
    "paint_fraction": "salon.judges.image_judges:PaintFractionJudge",
    "colourfulness": "salon.judges.image_judges:ColourfulnessJudge",
    "composition": "salon.judges.image_judges:CompositionJudge",
    "diversity": "salon.judges.image_judges:DiversityJudge",
    "hpsv3": "salon.judges.hpsv3:load_hpsv3",
}
# the settings dataclass whose fields a backend's keyword arguments are (checked before it loads)
SETTINGS = {
    "transformers": "salon.judges.vlm_transformers:TransformersJudgeConfig",
    "openai": "salon.judges.vlm_openai:OpenAIJudgeConfig",
    "hpsv3": "salon.judges.hpsv3_config:HPSv3Config",
}


def resolve(name: str):
    """The class (or factory) registered as `name`, or importable as `module:attr` / `module.attr`."""
    target = JUDGES.get(name, name)
    module, sep, attr = target.partition(":")
    if not sep:
        module, _, attr = target.rpartition(".")
    if not module or not attr:
        raise JudgeError(f"unknown judge {name!r}: use one of {', '.join(JUDGES)} or a dotted path module:Class")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise JudgeError(f"cannot load judge {name!r} from {target} ({e}): check the name, or install the "
                         "extra it needs (pip install 'salon[judge]')") from None


def load_judge(name: str, **kwargs):
    return resolve(name)(**kwargs)


def backend_for(model: str | None, backend: str | None = None) -> str:
    """`backend`, or the one a model's form asks for: an http(s) URL is an OpenAI-compatible server,
    anything else a transformers model."""
    return backend or ("openai" if is_url(model) else "transformers")


def takes_model(backend: str) -> bool:
    """Whether `backend` judges with a model (the openai backend's is its server's URL)."""
    if backend in SETTINGS:
        return True
    return "model" in inspect.signature(resolve(backend)).parameters


def _settings(backend: str):
    module, _, attr = SETTINGS[backend].partition(":")
    return getattr(importlib.import_module(module), attr)


def _argument_problems(backend: str, model: str | None, server_model: str | None, kwargs: dict,
                       arguments: str) -> list[str]:
    """What the backend's settings (or its signature) refuse among `kwargs` (given as `arguments`)."""
    if backend in SETTINGS:
        settings = _settings(backend)
        # a missing or wrong model is judge_problems' to say: a stand-in then, so it is not said twice
        taken = {"base_url": model if is_url(model) else "http://model.checked.apart", "model": server_model} \
            if backend == "openai" else {"model": model or "checked-apart"}
        known = [f.name for f in dataclasses.fields(settings) if f.name not in taken]
    else:
        params = inspect.signature(resolve(backend)).parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return []  # it checks its own arguments when built
        known = list(params)
    unknown = sorted(set(kwargs) - set(known))
    problems = [f"{arguments}: the {backend} judge takes no {', '.join(unknown)}; it takes "
                f"{', '.join(known) or 'nothing'}"] if unknown else []
    if backend in SETTINGS:
        try:
            settings(**{k: v for k, v in taken.items() if v is not None}, **{k: kwargs[k] for k in kwargs
                                                                              if k in known})
        except ConfigError as e:
            problems += [f"{arguments} of the {backend} judge: {p}" for p in e.problems]
        except TypeError as e:  # a value of the wrong type met a comparison
            problems.append(f"{arguments} of the {backend} judge: {e}")
    return problems


def judge_problems(model: str | None, backend: str | None = None, field: str = "model",
                   server_model: str | None = None, arguments: str = "arguments", find_model: bool = True,
                   **kwargs) -> list[str]:
    """Everything that would stop judge_for(model, backend, ...), found without loading a model: an
    unknown backend, a model it needs and lacks or takes none of, a model that cannot be found (unless
    not `find_model`: salon.models.names.model_problem), keyword arguments it refuses. `field` names
    where the model was given (--model, judge.model), `arguments` where the keyword arguments were
    (judge.kwargs)."""
    backend = backend_for(model, backend)
    try:
        needs = takes_model(backend)
    except JudgeError as e:
        return [str(e)]
    problems = []
    if backend == "openai":
        if not is_url(model):
            problems.append(f"{field}={model}: the openai judge asks a server; give the server's URL, e.g. "
                            "http://127.0.0.1:8000/v1 (server_model names the model it serves; default the "
                            "first it lists)")
    else:
        if server_model is not None:
            problems.append(f"server_model={server_model}: only the openai judge asks a server for a model")
        if needs and not model:
            problems.append(f"{field} is required by the {backend} judge: a model folder, a Hub id, "
                            + ("tiny:hpsv3, random:hpsv3 or a service URL" if backend == "hpsv3"
                               else "tiny:qwen2_5_vl or random:qwen2.5-vl-7b"))
        elif model and not needs:
            problems.append(f"{field}={model}: the {backend} judge takes no model; leave it out (in a config: null)")
        elif model and (problem := model_problem(field, model, find=find_model)):
            problems.append(problem)
    return problems + _argument_problems(backend, model, server_model, kwargs, arguments)


def judge_for(model: str | None, backend: str | None = None, cache: str | Path | None = None, field: str = "model",
              server_model: str | None = None, arguments: str = "arguments", **kwargs):
    """The judge for a model name (module doc); a tiny:/random: model is built under `cache`
    (salon.models.names.resolve_model). Raises JudgeError (one problem) or ConfigError (several)."""
    backend = backend_for(model, backend)
    problems = judge_problems(model, backend, field, server_model, arguments, **kwargs)
    if len(problems) == 1:
        raise JudgeError(problems[0])
    if problems:
        raise ConfigError(problems, field)
    if backend == "openai":
        return load_judge(backend, base_url=model, **({"model": server_model} if server_model else {}), **kwargs)
    if model:
        return load_judge(backend, model=resolve_model(model, cache), **kwargs)
    return load_judge(backend, **kwargs)
