"""The judge's RMSNorms and its MLPs' gated SiLU, each one Triton kernel on CUDA.

    fused = fuse_layers(model)      # a loaded judge on CUDA: how many modules now run fused
    unfuse_layers(model)            # transformers' forwards again (a benchmark's other judge on the same model)

transformers' RMSNorm is six elementwise kernels (the hidden states to float32, squared, their mean, the
rsqrt product, back to the input's dtype, the weight's product), each reading and writing the hidden
states, four of them in float32; a Qwen-VL judge runs two a layer over every token it reads. Its MLP's
`act_fn(gate) * up` is two more, over the intermediate width. Here each is one kernel that reads its
inputs once and writes its output once, computing what the module computes: float32 inside, rounded to
the module's dtype where transformers rounds (the normalised states before the weight's product, the SiLU
before the product with `up`). Only the sum of squares adds up in another order.

A module is fused only where the kernel gives its own forward's answer: each module class is checked once,
on the card, against its own forward on random states (`_agrees`); one that differs (another norm's
formula, another activation) keeps its forward. `tests/test_judge_fused_layers.py` runs the kernels
under Triton's interpreter against transformers' Qwen2.5-VL modules, and compiles them for sm_90.
"""

from __future__ import annotations

import contextlib
import functools
import logging

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # a CPU-only torch build: nothing to fuse
    triton = None

log = logging.getLogger(__name__)

SILU_BLOCK = 2048  # elements a program of the gated SiLU


if triton is not None:

    @triton.jit
    def _rms_norm_kernel(X, W, Y, stride_x, stride_y, width, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        inside = offs < width
        x = tl.load(X + row * stride_x + offs, mask=inside, other=0.0).to(tl.float32)
        normed = x * tl.rsqrt(tl.sum(x * x, 0) / width + eps)
        w = tl.load(W + offs, mask=inside, other=0.0).to(tl.float32)
        # transformers rounds the normalised states to the input's dtype, then multiplies by the weight
        y = w * normed.to(X.dtype.element_ty).to(tl.float32)
        tl.store(Y + row * stride_y + offs, y.to(Y.dtype.element_ty), mask=inside)

    @triton.jit
    def _silu_mul_kernel(G, U, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inside = offs < n
        g = tl.load(G + offs, mask=inside, other=0.0).to(tl.float32)
        u = tl.load(U + offs, mask=inside, other=0.0).to(tl.float32)
        # SiLU rounded to the dtype, as torch's silu returns it, then the product
        silu = (g / (1.0 + tl.exp(-g))).to(G.dtype.element_ty).to(tl.float32)
        tl.store(Y + offs, (silu * u).to(Y.dtype.element_ty), mask=inside)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' RMSNorm forward (`weight * (x / rms(x)).to(x.dtype)`) in one kernel; weight in x's dtype."""
    width = x.shape[-1]
    rows = x.reshape(-1, width)  # a view where x is contiguous
    out = torch.empty_like(rows)
    if rows.shape[0]:
        with _on(x):
            _rms_norm_kernel[(rows.shape[0],)](rows, weight, out, rows.stride(0), out.stride(0), width, eps,
                                               BLOCK=triton.next_power_of_2(width), num_warps=8 if width > 2048 else 4)
    return out.view(x.shape)


def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """`silu(gate) * up` in one kernel (same shapes and dtype, contiguous)."""
    out = torch.empty_like(gate)
    n = gate.numel()
    if n:
        with _on(gate):
            _silu_mul_kernel[(triton.cdiv(n, SILU_BLOCK),)](gate, up, out, n, BLOCK=SILU_BLOCK, num_warps=8)
    return out


def _on(t: torch.Tensor):
    """Triton launches on the current CUDA device: the tensor's (a judge on another card than the trainer's)."""
    return torch.cuda.device(t.device) if t.is_cuda else contextlib.nullcontext()


def _norm_forward(module, hidden_states: torch.Tensor) -> torch.Tensor:
    if hidden_states.dtype != module.weight.dtype or not hidden_states.is_contiguous():
        return type(module).forward(module, hidden_states)
    return rms_norm(hidden_states, module.weight, module.variance_epsilon)


def _mlp_forward(module, hidden_states: torch.Tensor) -> torch.Tensor:
    gate, up = module.gate_proj(hidden_states), module.up_proj(hidden_states)
    if not (gate.is_contiguous() and up.is_contiguous() and gate.dtype == up.dtype):
        return module.down_proj(module.act_fn(gate) * up)
    return module.down_proj(silu_mul(gate, up))


def _is_norm(module) -> bool:
    return (type(module).__name__.endswith("RMSNorm") and hasattr(module, "variance_epsilon")
            and isinstance(getattr(module, "weight", None), torch.nn.Parameter) and module.weight.dim() == 1)


def _is_gated_mlp(module) -> bool:
    return all(isinstance(getattr(module, name, None), torch.nn.Linear) for name in ("gate_proj", "up_proj",
                                                                                     "down_proj"))


@torch.inference_mode()
def _agrees(module, fused_forward, width: int) -> bool:
    """Whether `fused_forward` gives the module's own answer on random states, within the dtype's rounding."""
    param = next(module.parameters())
    gen = torch.Generator(device=param.device).manual_seed(0)
    x = torch.randn(3, 37, width, generator=gen, device=param.device, dtype=torch.float32).to(param.dtype)
    want, got = type(module).forward(module, x).float(), fused_forward(module, x).float()
    tolerance = 1e-5 if param.dtype == torch.float32 else 2 ** -6  # float32; a bf16 rounding step or two
    return bool(torch.allclose(got, want, rtol=tolerance, atol=tolerance))


def fuse_layers(model) -> int:
    """Every RMSNorm and gated-SiLU MLP of `model` whose answer the kernels give runs fused from now on (an
    instance's own `forward`); the number fused. Nothing where the model is not on CUDA or Triton is missing."""
    param = next(model.parameters(), None)
    if triton is None or param is None or param.device.type != "cuda":
        return 0
    return _fuse(model)


def _fuse(model) -> int:
    checked: dict[type, bool] = {}
    fused = 0
    for module in model.modules():
        if _is_norm(module):
            forward, width = _norm_forward, module.weight.shape[0]
        elif _is_gated_mlp(module):
            forward, width = _mlp_forward, module.gate_proj.in_features
        else:
            continue
        kind = type(module)
        if kind not in checked:
            checked[kind] = _agrees(module, forward, width)
            if not checked[kind]:
                log.info("judge: %s keeps its own forward (the fused kernel's answer differs)", kind.__name__)
        if checked[kind]:
            # a partial of a module-level function, not a bound method: a deep copy gets its own module's
            module.forward = functools.partial(forward, module)
            fused += 1
    return fused


def unfuse_layers(model) -> int:
    """The modules `fuse_layers` fused run their own forward again; how many."""
    unfused = 0
    for module in model.modules():
        own = vars(module).get("forward")
        if isinstance(own, functools.partial) and own.func in (_norm_forward, _mlp_forward):
            del module.forward
            unfused += 1
    return unfused
