"""What `grpo.` accepts beyond salon's own fields: any field of TRL's `GRPOConfig`, checked against
the dataclass itself (its field names and their annotated types), with the nearest names for a key
that is neither.

    data, problems = split_grpo({"beta": 0.0, "epsilon": 0.3}, salon_names)
    # data == {"beta": 0.0, "extra": {"epsilon": 0.3}}; problems == []

salon's own fields (`salon.train.config.GRPOSettings`) are validated there; every other key is a
GRPOConfig field passed to TRL as it is (`GRPOSettings.extra`, where the run's salon_train.yaml
keeps them). TRL is imported only when such a key is present, so reading a config stays fast.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import types
import typing

from salon.train import config_trl_async

# GRPOConfig fields the recipe sets from elsewhere: giving them under grpo. would fight salon's choice
SET_BY_SALON = {
    "output_dir": "set output_dir at the top level (or --output-dir)",
    "run_name": "set run_name at the top level",
    "seed": "set seed at the top level",
    "save_strategy": "salon saves every grpo.save_steps steps and keeps every checkpoint",
    "save_total_limit": "salon keeps every checkpoint (the good ones must survive a reward hack)",
    "model_init_kwargs": "set policy.dtype and policy.attn_implementation",
    "dtype": "set policy.dtype",  # AsyncGRPOConfig's (grpo.trainer=trl_async)
    "chat_template_kwargs": "set policy.enable_thinking",
    "use_vllm": "choose the engine with grpo.generation (vllm_server or vllm_colocate)",
    "vllm_mode": "choose the engine with grpo.generation (vllm_server or vllm_colocate)",
    "use_transformers_continuous_batching": "choose the engine with grpo.generation=continuous_batching",
    "remove_unused_columns": "the reward reads the dataset's columns, so they must stay",
    "activation_checkpointing": "set grpo.gradient_checkpointing (salon passes it on under this name)",
    "gradient_checkpointing_kwargs": "give activation_checkpointing_kwargs (the name transformers 5 uses)",
}


@functools.lru_cache(maxsize=2)
def grpo_config_fields(trainer: str = "grpo") -> dict[str, dataclasses.Field]:
    """The fields of the config class of the trainer grpo.trainer names (trl_async: AsyncGRPOConfig)."""
    if trainer == "trl_async":
        from salon.train.config_trl_async import async_config_class

        config = async_config_class()
    else:
        from trl import GRPOConfig as config
    return {f.name: f for f in dataclasses.fields(config) if f.init}


def nearest(key: str, names) -> list[str]:
    return difflib.get_close_matches(key, sorted(names), n=3, cutoff=0.6)


def accepts(annotation, value) -> bool:
    """Whether `value` (as YAML gave it) fits a dataclass field's annotation; unknown shapes pass."""
    if isinstance(annotation, str) or annotation is typing.Any:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(accepts(a, value) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if origin is not None:
        annotation = origin
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return isinstance(value, annotation) or value in {m.value for m in annotation}
    if annotation in (str, list, dict, tuple):
        return isinstance(value, list if annotation is tuple else annotation)
    return True


def _type_name(annotation) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def split_grpo(data: dict, salon_names: set[str]) -> tuple[dict, list[str]]:
    """salon's fields as given, every GRPOConfig field moved under "extra"; problems for the rest."""
    salon = {k: v for k, v in data.items() if k in salon_names}
    extra = salon.get("extra") or {}
    if not isinstance(extra, dict):
        return salon, [f"grpo.extra={extra!r}: give a mapping of GRPOConfig fields (or put them under grpo.)"]
    others = {**extra, **{k: v for k, v in data.items() if k not in salon_names}}
    if not others:
        return salon, []
    trainer = data.get("trainer", "grpo")
    config = "AsyncGRPOConfig" if trainer == "trl_async" else "GRPOConfig"
    # a field of TRL's config named like one of salon's, meaning another thing: TRL's when under grpo.extra
    namesakes = {k for k in extra if trainer == "trl_async" and k in config_trl_async.NAMESAKES}
    try:
        trl_fields = grpo_config_fields(trainer)
    except ImportError:
        return salon, [f"grpo.{k}: not one of salon's grpo fields, and TRL (which would know it) is not "
                       f"installed: pip install 'salon[train]'" for k in sorted(others)]
    problems, kept = [], {}
    for key, value in others.items():
        if key in salon_names and key not in namesakes:
            problems.append(f"grpo.extra.{key}: salon has its own grpo.{key}; set that instead")
        elif key in SET_BY_SALON:
            problems.append(f"grpo.{key}: salon sets this GRPOConfig field itself: {SET_BY_SALON[key]}")
        elif key not in trl_fields:
            close = nearest(key, salon_names - {"extra"} | set(trl_fields))
            problems.append(f"grpo.{key}: neither a salon grpo field nor a field of TRL's {config}"
                            + (f"; did you mean {', '.join(close)}?" if close else
                               f"; salon's: {', '.join(sorted(salon_names - {'extra'}))}"))
        elif not accepts(trl_fields[key].type, value):
            problems.append(f"grpo.{key}={value!r}: TRL's {config}.{key} takes "
                            f"{_type_name(trl_fields[key].type)}")
        else:
            kept[key] = value
    salon["extra"] = kept
    return salon, problems
