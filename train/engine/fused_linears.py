"""Sibling linear maps that read the same input, as one matrix product: `grpo.generation_fuse_linears`.

    groups = fuse_sibling_linears(model)     # in place, on the merged copy (generation only): groups fused

A decoder layer reads its normed input three times (q_proj, k_proj, v_proj) and its MLP input twice
(gate_proj, up_proj). At decode batch 8 each is a skinny product whose kernel reads its weights at
under half the card's bandwidth (the decoder's linear maps took 1.42 ms a step for 2.7 GB on an H200,
results/decode_profile_filled_2048_h200.json, where the language-model head read 0.62 GB in 0.15 ms),
and small ones (k and v: 4 MB each for Qwen3-1.7B) cost their launch more than their bytes. Fused,
each group is one product over one weight (the siblings' rows stacked), cut into the siblings' outputs.

How, without touching the model's own forward: each sibling becomes a `FusedPart` whose `weight` (and
`bias`) are views into the stacked tensor, so the merged copy's `refresh()` writes through them by the
same names. The first sibling the forward calls computes the whole product and holds it for the others,
which take their slice when they are handed the same input tensor (and compute it themselves if not:
any call order stays right); the last one to read lets it go. Under torch.compile this is traced into
one graph, the hold a Python-side value that is gone by the graph's end. The stacked tensors are
marked static (`torch._dynamo.mark_static_address`), so a captured CUDA graph reads them in place.

Exact up to the products' float rounding: in float32 the merged copy decodes the same greedy tokens and
log-probs within 1e-5 (tests).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class StackedProduct:
    """The siblings' weights stacked by rows, and the product last computed while siblings still need it.
    A plain object, not a module: its tensors are not parameters of the model (the views are)."""

    def __init__(self, linears: list[nn.Linear]):
        self.weight = torch.cat([lin.weight.detach() for lin in linears])
        has_bias = linears[0].bias is not None
        self.bias = torch.cat([lin.bias.detach() for lin in linears]) if has_bias else None
        bounds = [0]
        for lin in linears:
            bounds.append(bounds[-1] + lin.out_features)
        self.bounds = bounds
        self.held = None  # (input, product, reads left)
        self.product = None  # the float8 rows the decode reads instead of `weight` (fp8_linears.py), if any
        for t in (self.weight, self.bias):
            if t is not None and t.is_cuda:
                torch._dynamo.mark_static_address(t)

    def slice_for(self, index: int, x: torch.Tensor) -> torch.Tensor:
        held = self.held
        if held is not None and held[0] is x:
            product, left = held[1], held[2] - 1
        else:
            product = F.linear(x, self.weight, self.bias) if self.product is None else self.product(x, self.bias)
            left = len(self.bounds) - 2
        self.held = (x, product, left) if left > 0 else None
        return product[..., self.bounds[index]:self.bounds[index + 1]]


class FusedPart(nn.Module):
    """One sibling: its output is its slice of the stacked product; `weight`/`bias` view the stack."""

    def __init__(self, stack: StackedProduct, index: int):
        super().__init__()
        lo, hi = stack.bounds[index], stack.bounds[index + 1]
        self.in_features, self.out_features = stack.weight.shape[1], hi - lo
        self.weight = nn.Parameter(stack.weight[lo:hi], requires_grad=False)
        self.bias = None if stack.bias is None else nn.Parameter(stack.bias[lo:hi], requires_grad=False)
        object.__setattr__(self, "stack", stack)  # not a submodule: its tensors are no parameters of the model
        self.index = index

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stack.slice_for(self.index, x)


def fusible(linears: list) -> bool:
    """Plain linear maps of one input size, dtype and device, all with a bias or none."""
    if not all(type(lin) is nn.Linear for lin in linears):
        return False
    first = linears[0]
    return all(lin.in_features == first.in_features and lin.weight.dtype == first.weight.dtype
               and lin.weight.device == first.weight.device and (lin.bias is None) == (first.bias is None)
               for lin in linears)


def fuse_sibling_linears(model: nn.Module) -> int:
    """Replace each fusible group of SIBLINGS in `model` by FusedParts over one stacked weight; the
    number of groups fused."""
    fused = 0
    for module in list(model.modules()):
        for names in SIBLINGS:
            linears = [getattr(module, n, None) for n in names]
            if all(lin is not None for lin in linears) and fusible(linears):
                stack = StackedProduct(linears)
                for index, name in enumerate(names):
                    setattr(module, name, FusedPart(stack, index))
                fused += 1
    return fused
