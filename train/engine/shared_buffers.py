"""Many tensors in one shared host buffer: how the training process hands weights to the generation process
of `grpo.generation_device` (salon.train.engine.sampler_process packs them, the process it serves reads them,
salon.train.engine.generation_process). One buffer is one file descriptor, however many tensors it holds.

    flat, layout = packed([("lm_head.weight", w), ...])   # a shared uint8 buffer and (name, offset, dtype, shape)
    tensor = view(flat, *layout[0][1:])                   # a tensor of the buffer, no copy
    for group in chunks(named, 1 << 30): ...              # the tensors in groups of at most 1 GiB
"""

from __future__ import annotations

import torch

ALIGN = 64  # each tensor's offset in a shared buffer: a multiple of every dtype's size


def packed(named: list[tuple[str, torch.Tensor]]) -> tuple[torch.Tensor, list[tuple]]:
    """One shared uint8 buffer holding the tensors, and where each lies: (name, offset, dtype, shape)."""
    layout, size = [], 0
    for name, t in named:
        layout.append((name, size, t.dtype, tuple(t.shape)))
        size += -(-t.numel() * t.element_size() // ALIGN) * ALIGN
    flat = torch.empty(max(size, 1), dtype=torch.uint8).share_memory_()
    with torch.no_grad():
        for (_, *where), (_, t) in zip(layout, named):
            view(flat, *where).copy_(t)
    return flat, layout


def view(flat: torch.Tensor, offset: int, dtype: torch.dtype, shape: tuple) -> torch.Tensor:
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    return flat[offset:offset + nbytes].view(dtype).view(shape)


def chunks(named: list[tuple[str, torch.Tensor]], limit: int):
    """The tensors in groups of at most `limit` bytes (a larger tensor alone)."""
    group, size = [], 0
    for name, t in named:
        if group and size + t.numel() * t.element_size() > limit:
            yield group
            group, size = [], 0
        group.append((name, t))
        size += t.numel() * t.element_size()
    if group:
        yield group
