"""Gradient checkpointing on a share of the decoder layers: `grpo.gradient_checkpointing_layers`.

    keep_partial(trainer.model, 0.5)     # before training: every other layer recomputes its activations

Checkpointing every layer keeps the update's memory small and recomputes every layer's forward in
the backward pass; none keeps every activation. On an H200 at 8 completions of 2,048 tokens (8 x 2,648
tokens a micro-step, Qwen3-1.7B with its LoRA) all layers gave an update of 1.29 s at a peak of 32 GiB,
none 0.93 s at 106.5 GiB (benchmarks/results/bench_train_gpu_variants_h200.json). A share s checkpoints
the layers i where floor((i + 1) s) > floor(i s), spread evenly (0.5: layers 1, 3, 5, ...), and keeps
the others' activations: there, about (1 - s) x 74 GiB more for (1 - s) x 0.36 s less a micro-step.

transformers switches checkpointing on per layer (`GradientCheckpointingLayer.gradient_checkpointing`),
and TRL switches it off and on again around its log-prob passes every step; so the share is applied
again after each switch on, by wrapping the model's own enable methods.
"""

from __future__ import annotations

import math

ENABLES = ("activation_checkpointing_enable", "gradient_checkpointing_enable")  # transformers 5's name, the old one


def checkpointed(index: int, share: float) -> bool:
    return math.floor((index + 1) * share) > math.floor(index * share)


def decoder_layers(model) -> list:
    from transformers.modeling_layers import GradientCheckpointingLayer

    return [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]


def apply_share(model, share: float) -> list[bool]:
    """Leave checkpointing on for the share's layers only; which layers checkpoint, in order."""
    layers = decoder_layers(model)
    for index, layer in enumerate(layers):
        if layer.gradient_checkpointing and not checkpointed(index, share):
            layer.gradient_checkpointing = False
    return [layer.gradient_checkpointing for layer in layers]


def keep_partial(model, share: float) -> None:
    """Make every later enable of checkpointing on `model` (by the trainer or by TRL) checkpoint the share only."""
    for name in ENABLES:
        enable = getattr(model, name, None)
        if enable is None:
            continue

        def share_after(*args, _enable=enable, **kwargs):
            out = _enable(*args, **kwargs)
            apply_share(model, share)
            return out

        object.__setattr__(model, name, share_after)  # on this object only: the class keeps its method
    apply_share(model, share)  # where it is on already
