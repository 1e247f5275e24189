"""The vision tower's side of the prefix-sharing judge (vlm_shared.py): its windows batched by length,
and what it derives from the image grids made on the host, once per set of grids.

    use_bucketed_vision_attention(model)          # an sdpa vision tower -> one sdpa call per window length
    plans = VisionPlans(model.model.visual)       # inputs() yields {} for a tower that takes none
    with plans.inputs(host_thw, device) as kwargs:
        model.model.get_image_features(pixel_values, grid_thw, **kwargs)

The Qwen-VL towers attend within windows or images given by `cu_seqlens`; with sdpa, transformers runs
one attention call per window (hundreds per layer for a group of 600x600 images). `bucketed_attention`
runs all windows of one length as one batched sdpa call instead.

Each tower also derives, from the grids on the card, its rotary positions, its segment boundaries,
their longest length and (Qwen2.5-VL) its window order: `.tolist()`, `.item()` and copies from
ordinary host memory, each of which waits for the card to finish what is queued, and bucketed
attention read the boundaries back again in every layer (some 40 waits a judge call, while the card
idles until the host has queued the next layer). transformers' vision functions take these values
precomputed (`kwargs`): `VisionPlans` computes them on the host with those same functions from the
grids the processor gave (a training step's paintings share a size, so a set of grids repeats and is
planned once), copies them to the card without waiting, and hands bucketed attention each layer's
window indices ready, so the tower runs without a single wait for the card.
"""

from __future__ import annotations

import contextlib
import sys
from collections import OrderedDict

import torch

BUCKETED = "salon_flash_bucketed"  # "flash" in the name routes Qwen-VL vision attention to cu_seqlens

# cu_seqlens tensors of the tower running now -> (the tensor, its windows by length), registered by
# VisionPlans.inputs for the call and read by bucketed_attention (keyed by id: the tensor is held)
_WINDOWS: dict[int, tuple[torch.Tensor, list[tuple[int, torch.Tensor]]]] = {}


def to_device(t: torch.Tensor, device) -> torch.Tensor:
    """A host tensor on `device`. To a GPU through pinned memory, asynchronously: a copy from ordinary
    host memory waits for the work queued on the card first, so the host could not run ahead of it."""
    if torch.device(device).type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


def windows_by_length(cu: list[int], device) -> list[tuple[int, torch.Tensor]]:
    """(length, the token indices of every window of that length, window-major) for boundaries `cu`."""
    starts: dict[int, list[int]] = {}
    for start, end in zip(cu[:-1], cu[1:]):
        if end > start:
            starts.setdefault(end - start, []).append(start)
    return [(length, to_device((torch.tensor(s)[:, None] + torch.arange(length)).reshape(-1), device))
            for length, s in starts.items()]


def bucketed_attention(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0,
                       cu_seq_lens_q=None, is_causal=False, **kwargs):
    """Varlen attention over `cu_seq_lens_q` segments as one sdpa call per distinct length.

    query/key/value: [1, heads, tokens, head_dim]; returns ([1, tokens, heads, head_dim], None)
    like the flash-attention interface the vision towers call on this path.
    """
    q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))  # [tokens, heads, dim]
    out = torch.empty_like(q)
    planned = _WINDOWS.get(id(cu_seq_lens_q))
    if planned is not None and planned[0] is cu_seq_lens_q:
        windows = planned[1]
    else:  # a tower run without VisionPlans: read the boundaries back (waits for the card)
        windows = windows_by_length(cu_seq_lens_q.tolist(), q.device)
    for length, idx in windows:
        n = idx.shape[0] // length
        qs, ks, vs = (t[idx].view(n, length, *t.shape[1:]).transpose(1, 2) for t in (q, k, v))
        o = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, scale=scaling, is_causal=is_causal)
        out[idx] = o.transpose(1, 2).reshape(-1, *q.shape[1:])
    return out.unsqueeze(0), None


def use_bucketed_vision_attention(model) -> bool:
    """Switch an sdpa vision tower to `bucketed_attention`; False where it does not apply."""
    from transformers import AttentionInterface

    vision_config = getattr(model.model.visual, "config", None)
    if vision_config is None or vision_config._attn_implementation != "sdpa":
        return False
    AttentionInterface.register(BUCKETED, bucketed_attention)
    vision_config._attn_implementation = BUCKETED
    return True


class VisionPlans:
    """What a Qwen-VL vision tower derives from its image grids, made on the host and kept per set of
    grids (an LRU of `keep`). Applies where the tower's module takes them precomputed (it imports
    transformers.vision_utils' functions): its segments and rotary positions, and Qwen2.5-VL's windows."""

    def __init__(self, visual, keep: int = 16):
        self.visual, self.keep = visual, keep
        names = vars(sys.modules[type(visual).__module__])
        self.segments = "get_vision_attention_seqlens" in names and "get_vision_position_ids" in names
        self.windows = self.segments and "get_vision_window_index" in names and hasattr(visual, "window_size")
        self._plans: OrderedDict = OrderedDict()  # (grids, device) -> (kwargs, cu tensors with their windows)

    @contextlib.contextmanager
    def inputs(self, host_thw: torch.Tensor, device):
        """The tower's precomputed kwargs for these grids ({} where the tower takes none), with bucketed
        attention's windows registered while the block runs."""
        if not self.segments:
            yield {}
            return
        key = (tuple(map(tuple, host_thw.tolist())), str(device))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(host_thw, device)
            while len(self._plans) > self.keep:
                self._plans.popitem(last=False)
        self._plans.move_to_end(key)
        kwargs, windows = plan
        for cu, by_length in windows:
            _WINDOWS[id(cu)] = (cu, by_length)
        try:
            yield dict(kwargs)  # a copy: the tower pops what it takes
        finally:
            for cu, _ in windows:
                _WINDOWS.pop(id(cu), None)

    def _plan(self, host_thw: torch.Tensor, device):
        from transformers import vision_utils
        from transformers.utils.generic import get_max_seqlen

        visual, config = self.visual, self.visual.config
        cu, longest = vision_utils.get_vision_attention_seqlens(host_thw, config)
        kwargs = {"position_ids": to_device(vision_utils.get_vision_position_ids(host_thw, visual.spatial_merge_size),
                                            device),
                  "cu_seqlens": to_device(cu, device), "max_seqlen": longest}
        boundaries = [(kwargs["cu_seqlens"], cu)]
        if self.windows:
            index, cu_windows = vision_utils.get_vision_window_index(host_thw, visual.spatial_merge_size,
                                                                     visual.window_size, visual.patch_size)
            kwargs.update(window_index=to_device(index, device), cu_window_seqlens=to_device(cu_windows, device),
                          max_window_seqlen=get_max_seqlen(cu_windows, config))
            boundaries.append((kwargs["cu_window_seqlens"], cu_windows))
        return kwargs, [(on_device, windows_by_length(on_host.tolist(), device)) for on_device, on_host in boundaries]
