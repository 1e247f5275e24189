"""Judges by name: a plain registry dict with a dotted-path escape hatch.

    judge = load_judge("transformers", model="path/to/Qwen2.5-VL-7B-Instruct")
    judge = load_judge("openai", base_url="http://127.0.0.1:8000/v1")
    judge = load_judge("measures")                            # pairwise by palette, layout, paint; no model
    judge = load_judge("composition")                         # an image judge
    judge = load_judge("hpsv3", model="ckpt")                 # a reward model (or model="http://host:8000")
    judge = load_judge("my_pkg.judges:MyJudge", threshold=3)  # anything importable

Keyword arguments go to the class (pairwise backends take their config's fields). `judge_for`
turns the CLI's `--model PATH_OR_ID_OR_URL` into a backend: http(s) URLs are OpenAI-compatible
servers, anything else a transformers model.
"""

from __future__ import annotations

import importlib

from salon.pool.errors import JudgeError

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


def judge_for(model: str, backend: str | None = None, **kwargs):
    """The pairwise judge for a `--model` value; `backend` overrides the guess from its form."""
    if backend is None:
        backend = "openai" if model.startswith(("http://", "https://")) else "transformers"
    if backend == "openai":
        return load_judge("openai", base_url=model, **kwargs)
    return load_judge(backend, model=model, **kwargs)
