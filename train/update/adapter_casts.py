"""LoRA layers skip the input cast that autocast undoes: the same products, two copies fewer per layer.

    skip_undone_casts(trainer.model)   # the recipe does, after building the GRPOTrainer

peft keeps the adapters in float32 on a bfloat16 model (its `autocast_adapter_dtype`) and casts each
adapted linear's input to the adapter's dtype before the adapter's products. With `bf16: true` the
Trainer's accelerate runs the forward under autocast, which casts that float32 input straight back to
bfloat16 for the product. So every adapted linear (7 a layer with `all-linear`) copies its whole input
twice in the forward, twice again in a checkpointed layer's recompute, and twice more for the input's
gradient in the backward, for nothing: bfloat16 -> float32 -> bfloat16 gives back the same values. At
64 rows of 2,650 tokens of a Qwen3-1.7B that is about a terabyte of copies a step.

Here a layer's cast is skipped exactly when autocast is on for the input's device and the input is
already autocast's dtype: the products see the same bfloat16 values, so outputs and gradients are
bitwise the same (tests/test_train_adapter_casts.py). Anywhere else (TRL's `generate` on the unwrapped
model, a float32 run) peft's own cast runs. Layers with a LoRA variant (DoRA and the like) or dropout
keep peft's cast: their variant computes with the input's dtype beyond the products, and dropout's
random mask is not promised to be the same in another dtype.
"""

from __future__ import annotations

import functools

import torch


def skip_undone_casts(model) -> int:
    """Install the skip on every plain LoRA layer of `model`; returns how many layers took it."""
    from peft.tuners.lora import LoraLayer

    layers = 0
    for module in model.modules():
        plain = isinstance(module, LoraLayer) and not getattr(module, "lora_variant", None) and all(
            isinstance(d, torch.nn.Identity) for d in module.lora_dropout.values())
        if plain:
            # a partial of a module-level function, not a closure over the bound method: a deep copy of the
            # model (a sampler's copy of the policy) then casts by its own layer, and the model still pickles
            module._cast_input_dtype = functools.partial(_cast_unless_undone, module)
            layers += 1
    return layers


def _cast_unless_undone(layer, x, dtype):
    if x is not None and undone_by_autocast(x):
        return x
    return type(layer)._cast_input_dtype(layer, x, dtype)  # peft's own


def undone_by_autocast(x: torch.Tensor) -> bool:
    """Autocast is on for x's device and x already holds its dtype: a product casts x back to it."""
    kind = x.device.type
    return torch.is_autocast_enabled(kind) and x.dtype == torch.get_autocast_dtype(kind)
