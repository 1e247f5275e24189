"""The decode's products from float8 rows (grpo.generation_weights=fp8, salon.train.engine.fp8_linears), on a CPU:
the rounding's bound, the Triton kernel under Triton's interpreter and compiled for sm_90, the merged copy reading
them and remaking them at each refresh, and what the config refuses. The trainer's correction at every step is in
test_train_overlap.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from salon.pool.errors import ConfigError
from salon.train.engine.fp8_linears import FP8_MAX, Fp8Linear, Fp8Product, widened

KERNEL_CHECK = """
import torch
import torch.nn.functional as F
from salon.train.engine import fp8_linears as f8

torch.manual_seed(0)
for m, n, k in ((8, 48, 64), (3, 40, 72), (64, 32, 96), (80, 16, 64)):
    w = torch.randn(n, k)
    product = f8.Fp8Product(w)
    x = torch.randn(m, k)
    want = F.linear(x, f8.widened(product.q, product.scale, x.dtype))
    for tiling in ((16, 16, 32, 4, 1), (64, 32, 64, 4, 1)):
        f8.tiling = lambda rows, cols, t=tiling: t
        got = torch.empty(m, n)
        f8.launch(x, product.q, product.scale, got)
        assert (got - want).abs().max() < 1e-4, (m, n, k, tiling, (got - want).abs().max())
print("kernel ok")
"""


def test_each_weight_is_rounded_within_a_sixteenth_and_its_row_fills_the_range():
    torch.manual_seed(0)
    w = torch.randn(64, 256) * torch.logspace(-3, 1, 64)[:, None]  # rows of very different sizes
    product = Fp8Product(w)
    assert product.q.dtype == torch.float8_e4m3fn
    back = widened(product.q, product.scale, torch.float32)
    assert torch.allclose(product.q.float().abs().amax(dim=1), torch.full((64,), FP8_MAX))
    tiny = product.scale[:, None] * 2.0 ** -9  # below e4m3's smallest normal, the step is absolute
    assert ((back - w).abs() <= w.abs() / 16 + tiny).all()
    w.mul_(2)  # the copy's weight rewritten in place (a refresh): remade from it
    product.requantize()
    assert torch.allclose(widened(product.q, product.scale, torch.float32), 2 * back)


def test_a_float8_linear_keeps_its_parameters_and_gives_the_widened_weights_product():
    linear = torch.nn.Linear(32, 24)
    fp8 = Fp8Linear(linear)
    assert fp8.weight is linear.weight and fp8.bias is linear.bias
    assert [n for n, _ in fp8.named_parameters()] == ["weight", "bias"]
    x = torch.randn(5, 3, 32)
    want = torch.nn.functional.linear(x, widened(fp8.product.q, fp8.product.scale, x.dtype), linear.bias)
    assert torch.allclose(fp8(x), want, atol=1e-6)
    assert (fp8(x) - linear(x)).abs().max() < 0.1 * linear(x).abs().max()  # near the trained product, not it


def test_the_kernel_equals_the_widened_product_under_tritons_interpreter():
    """Float32 activations (the interpreter truncates bf16 casts where a card rounds them), rows fewer than,
    equal to and more than a tile, columns and K not multiples of the tile."""
    pytest.importorskip("triton")
    out = subprocess.run([sys.executable, "-c", KERNEL_CHECK], env={**os.environ, "TRITON_INTERPRET": "1"},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "kernel ok" in out.stdout, out.stderr[-3000:]


def test_the_kernel_compiles_for_sm90_at_the_decodes_tilings():
    """What the interpreter cannot show: float8 rows widened to bf16 on the tensor cores, at the tilings 8 and 64
    rows take, for Qwen3-1.7B's products (2,048 and 12,288 columns)."""
    pytest.importorskip("triton")
    from salon.train.engine import fp8_linears as f8
    from triton_support import compile_for_sm90

    for rows, cols in ((8, 2048), (8, 12288), (64, 4096)):
        block_m, block_n, block_k, warps, stages = f8.tiling(rows, cols)
        compile_for_sm90(f8._fp8_rows_kernel, ["*bf16", "*fp8e4nv", "*fp32", "*bf16"] + ["i32"] * 6,
                         dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k), num_warps=warps, num_stages=stages)


@pytest.mark.parametrize("field", ["generation_weights", "generation_kv_cache"])
def test_the_config_refuses_float8_sampling_where_nothing_would_correct_for_it(field):
    """Float8 weights or a float8 cache (salon.train.engine.fp8_cache): a sampler off the policy at every step."""
    from salon.train.config_grpo import GRPOSettings

    assert GRPOSettings(**{field: "fp8"}).sampler_rounds and not GRPOSettings().sampler_rounds
    GRPOSettings(**{field: "fp8"}, generation="compiled", max_staleness=0)
    for wrong, says in ((dict(generation="transformers"), "compiled engine's"),
                        (dict(update_per_group=True), "choose one"),
                        (dict(steps_per_generation=2), "leave grpo.generation_batch_size"),
                        (dict(extra={"num_iterations": 2}), "num_iterations must be 1"),
                        (dict(trainer="trl_async", scale_rewards="group"), f"{field} tune salon's compiled")):
        with pytest.raises(ConfigError, match=says):
            GRPOSettings(**{field: "fp8"}, **wrong)


@pytest.mark.parametrize("field", ["generation_weights", "generation_kv_cache"])
def test_auto_refuses_float8_sampling_where_it_chooses_another_engine(field):
    from pathlib import Path

    from salon.train.config import load_config
    from salon.train.engine.choice import resolve_generation

    configs = Path(__file__).resolve().parent.parent / "train" / "configs"
    cfg = load_config(configs / "smoke.yaml", ["grpo.use_cpu=true", f"grpo.{field}=fp8"])
    with pytest.raises(ConfigError, match=f"grpo.{field}=fp8 is the compiled engine's, and grpo.generation=auto "
                                          "chose transformers here"):
        resolve_generation(cfg)
