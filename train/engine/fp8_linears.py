"""The decode's linear maps read from float8 weights: `grpo.generation_weights: fp8`.

    products = quantize_linears(model)      # in place, on the merged copy (generation only): the products changed
    requantize(products)                    # after the copy's own weights were rewritten (its refresh)

At 8 rows a decode step reads every weight of the policy for 8 tokens. On an H100 a step's products took 1.53
ms of its 2.8 for Qwen3-1.7B's 3.4 GB alone, and 2.5 ms on half the card beside large products standing in for
the judge's and the update's, which share the memory system (docs/step-measurements.md). Here the decoder
layers' weights are also kept as float8 (e4m3, one float32 scale per output row: the row's largest magnitude
maps to 448), half the bytes, and a Triton kernel reads those: it widens each tile to the activations' dtype,
multiplies on the tensor cores with float32 sums and scales each output column at the end. The activations
stay as they are (weights-only rounding). The embeddings and the LM head, whose logits are sampled from, stay
as trained, and so does the copy's own weight, which the refresh writes by name as before; the float8 copy is
made from it after.

Not exact: each weight is rounded to 3 mantissa bits (a relative error of at most 1/16). The sampler then draws
from a policy a little off the trained one and records its own log-probs; the update weighs every token by the
trained policy's probability over the sampler's, truncated at `grpo.importance_sampling_cap` (salon.train.
update.stale_correction, on every step, fresh ones too), as TRL corrects for a vLLM sampler. The weights are
logged per step as salon/overlap/importance_weight_*.

On a CPU (tests) the same products are taken from the float8 weights widened back, with F.linear.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from salon.train.engine.fused_linears import FusedPart

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0  # e4m3's largest finite value

try:
    import triton
    import triton.language as tl
except ImportError:  # a CPU-only torch build: the widened weights with F.linear only
    triton = None


class Fp8Product:
    """A weight's float8 rows and their scales, remade from `weight` (the copy's own) by `requantize`."""

    def __init__(self, weight: torch.Tensor):
        self.weight = weight
        self.q = torch.empty(weight.shape, dtype=FP8, device=weight.device)
        self.scale = torch.empty(weight.shape[0], dtype=torch.float32, device=weight.device)
        for t in (self.q, self.scale):
            if t.is_cuda:  # a captured CUDA graph reads them in place; requantize writes them in place
                torch._dynamo.mark_static_address(t)
        self.requantize()

    @torch.no_grad()
    def requantize(self) -> None:
        rows = self.weight.float()
        scale = rows.abs().amax(dim=1).clamp(min=1e-12) / FP8_MAX
        self.scale.copy_(scale)
        self.q.copy_((rows / scale[:, None]).to(FP8))

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        y = torch.ops.salon.fp8_linear(x, self.q, self.scale)
        return y if bias is None else y + bias


class Fp8Linear(nn.Module):
    """An nn.Linear whose forward reads the float8 rows; `weight` (and `bias`) stay the module's parameters."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        object.__setattr__(self, "product", Fp8Product(linear.weight.detach()))  # no submodule, no parameter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.product(x, self.bias)


def quantize_linears(model: nn.Module) -> list[Fp8Product]:
    """Every linear map of the decoder layers (`model.model.layers`), plain or fused siblings (fused_linears.py),
    read from float8 rows from now on; the products, for `requantize`."""
    products = []
    for layer in model.model.layers:
        for module in list(layer.modules()):
            for name, child in list(module.named_children()):
                if type(child) is nn.Linear:
                    fp8 = Fp8Linear(child)
                    setattr(module, name, fp8)
                    products.append(fp8.product)
                elif isinstance(child, FusedPart) and child.stack.product is None:
                    child.stack.product = Fp8Product(child.stack.weight)
                    products.append(child.stack.product)
    return products


def requantize(products: list[Fp8Product]) -> None:
    for product in products:
        product.requantize()


def widened(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The weight the float8 rows stand for, in `dtype`."""
    return (q.float() * scale[:, None]).to(dtype)


@torch.library.custom_op("salon::fp8_linear", mutates_args=())
def fp8_linear(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """x @ (q * scale).T in x's dtype: the kernel on CUDA, F.linear on the widened weight elsewhere."""
    if not x.is_cuda or triton is None:
        return F.linear(x, widened(q, scale, x.dtype))
    rows = x.reshape(-1, x.shape[-1])
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty((rows.shape[0], q.shape[0]), dtype=x.dtype, device=x.device)
    launch(rows, q, scale, out)
    return out.reshape(*x.shape[:-1], q.shape[0])


@fp8_linear.register_fake
def _(x, q, scale):
    return x.new_empty((*x.shape[:-1], q.shape[0]))


if triton is not None:
    @triton.jit
    def _fp8_rows_kernel(x_ptr, q_ptr, scale_ptr, y_ptr, M, N, K, stride_xm, stride_qn, stride_ym,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        """y = x @ (q * scale).T: a program's BLOCK_N output columns for BLOCK_M rows of x (at least the 16 the
        tensor cores take), its float8 rows of q streamed along K and widened to x's dtype tile by tile."""
        pid_n, pid_m = tl.program_id(0), tl.program_id(1)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            ks = k + tl.arange(0, BLOCK_K)
            x = tl.load(x_ptr + rows[:, None] * stride_xm + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K),
                        other=0.0)
            w = tl.load(q_ptr + cols[:, None] * stride_qn + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K),
                        other=0.0)
            acc += tl.dot(x, tl.trans(w.to(x.dtype)))
        scale = tl.load(scale_ptr + cols, mask=cols < N, other=0.0)
        acc = acc * scale[None, :]
        tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], acc.to(y_ptr.dtype.element_ty),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


def tiling(m: int, n: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) for m rows and n output columns: few columns a program, so even
    the 2,048-column products spread over a card's multiprocessors, and long float8 runs along K."""
    block_m = min(64, max(16, triton.next_power_of_2(m)))
    return block_m, 16 if n <= 4096 else 32, 512 if block_m <= 16 else 128, 4, 4


def launch(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, out: torch.Tensor) -> None:
    m, k = x.shape
    n = q.shape[0]
    block_m, block_n, block_k, warps, stages = tiling(m, n)
    grid = (triton.cdiv(n, block_n), triton.cdiv(m, block_m))
    _fp8_rows_kernel[grid](x, q, scale, out, m, n, k, x.stride(0), q.stride(0), out.stride(0),
                           BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages)
