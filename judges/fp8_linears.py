"""The judge's language-model linears in float8: `judge.kwargs.quantize: fp8` (TransformersJudgeConfig).

    quantize_linears(model.model.language_model)   # each nn.Linear -> Fp8Linear, in place; returns the count

A pairwise judge spends its card time in the prefill of its language model (a 7B model reads each
comparison's second image and the question: about 500 tokens a comparison, 512 comparisons a step at
64 rollouts), which is bound by arithmetic, not memory. Hopper's tensor cores do float8 at twice the
rate of bfloat16, so the linears there take `torch._scaled_mm` on e4m3 operands:

- each weight row (output channel) is scaled to e4m3's range once, at conversion;
- each token's activations are scaled the same way at every call (dynamic, no calibration data);
- the product accumulates in float32 and comes back in the activations' dtype, rescaled by both.

That is the "FP8 dynamic" scheme of vLLM and of transformers' FBGEMM fp8 integration. The vision tower,
the attention (and its key/value caches) and the answer head keep the model's dtype. The judge's
probabilities move by a little (tests/test_judge_fp8.py bounds it on a tiny model; the H200 figure is
in docs/judges.md). On a CPU `_scaled_mm` runs too (float32 out), which is how the tests run it.
"""

from __future__ import annotations

import torch
from torch import nn

from salon.pool.errors import JudgeError

FP8 = torch.float8_e4m3fn
FP8_MAX = float(torch.finfo(FP8).max)  # 448
TINY = 1e-12  # a row of zeros gets this scale, not a division by zero


def _rowwise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (rows, k) as e4m3 and each row's float32 scale (rows, 1): x ~= q * scale."""
    scale = x.abs().amax(dim=1, keepdim=True).float().clamp(min=TINY) / FP8_MAX
    return (x.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(FP8), scale


class Fp8Linear(nn.Module):
    """A frozen nn.Linear with its weight in e4m3 and one scale per output channel."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        weight, scale = _rowwise(linear.weight.detach())
        self.register_buffer("weight", weight)  # (out, in), row-major: its .t() is the column-major operand
        self.register_buffer("weight_scale", scale.t().contiguous())  # (1, out)
        bias = linear.bias
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        q, scale = _rowwise(rows)
        out = torch._scaled_mm(q, self.weight.t(), scale_a=scale, scale_b=self.weight_scale, out_dtype=x.dtype)
        if self.bias is not None:
            out = out + self.bias  # rowwise-scaled _scaled_mm takes no bias on every build
        return out.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, e4m3"


def quantize_linears(module: nn.Module) -> int:
    """Replace every nn.Linear under `module` with an Fp8Linear, in place; the number replaced. Raises
    JudgeError where this torch or card has no float8 product (it is tried once, on a small matrix)."""
    linears = [(name, m) for name, m in module.named_modules() if isinstance(m, nn.Linear)]
    if not linears:
        return 0
    _check_float8(linears[0][1].weight)
    for name, linear in linears:
        parent_name, _, child = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        setattr(parent, child, Fp8Linear(linear))
    return len(linears)


def _check_float8(like: torch.Tensor) -> None:
    probe = torch.ones(16, 16, device=like.device, dtype=like.dtype)
    try:
        Fp8Linear(nn.Linear(16, 16, bias=False, device=like.device, dtype=like.dtype))(probe)
    except (RuntimeError, NotImplementedError) as e:
        where = torch.cuda.get_device_name(like.device) if like.device.type == "cuda" else like.device.type
        raise JudgeError(f"quantize='fp8' cannot run on {where} with torch {torch.__version__}: {e}. Float8 "
                         "products need a card with float8 tensor cores (Ada, Hopper or later) or a CPU; "
                         "use quantize='none'") from e
