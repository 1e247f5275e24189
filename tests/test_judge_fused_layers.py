"""The judge's fused RMSNorm and gated SiLU (judges/fused_layers.py): transformers' Qwen2.5-VL modules' answers
under Triton's interpreter, in float32 (the interpreter truncates where the card rounds to bf16), and the
kernels compiled for sm_90. benchmarks/bench_judge_gpu.py times them on a card."""

import os
import subprocess
import sys

import pytest

INTERPRETED = """
import torch
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qvl
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLTextConfig, Qwen2_5_VLVisionConfig
from salon.judges import fused_layers as fl

torch.manual_seed(0)
text = Qwen2_5_VLTextConfig(hidden_size=96, intermediate_size=200, rms_norm_eps=1e-6)
vision = Qwen2_5_VLVisionConfig(hidden_size=40, intermediate_size=72, hidden_act="silu")
for width, eps in ((96, 1e-6), (40, 1e-5), (300, 1e-6)):   # widths under, at and over a power of two's block
    norm = qvl.Qwen2_5_VLRMSNorm(width, eps=eps)
    torch.nn.init.normal_(norm.weight, 1.0, 0.3)
    for x in (torch.randn(2, 7, width) * 3, torch.randn(11, width)):   # a batch of rows, and the vision's 2D
        want = norm(x)
        got = fl._norm_forward(norm, x)
        assert got.shape == want.shape and (got - want).abs().max() <= 1e-5 * want.abs().max(), (width, x.shape)
    assert fl._agrees(norm, fl._norm_forward, width)

for mlp, width in ((qvl.Qwen2MLP(text), 96), (qvl.Qwen2_5_VLMLP(vision, bias=True), 40)):
    x = torch.randn(3, 5, width)
    want = mlp(x)
    got = fl._mlp_forward(mlp, x)
    assert (got - want).abs().max() <= 1e-5 * want.abs().max(), type(mlp).__name__
    assert fl._agrees(mlp, fl._mlp_forward, width)
g, u = torch.randn(4097), torch.randn(4097)   # two programs and a part of a third
assert (fl.silu_mul(g, u) - torch.nn.functional.silu(g) * u).abs().max() < 1e-6


class OnePlusWeightRMSNorm(torch.nn.Module):  # another norm's formula (Gemma's): not the kernel's, kept as it is
    def __init__(self, width):
        super().__init__()
        self.weight, self.variance_epsilon = torch.nn.Parameter(torch.randn(width)), 1e-6

    def forward(self, x):
        return (1 + self.weight) * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)


gelu = qvl.Qwen2MLP(Qwen2_5_VLTextConfig(hidden_size=96, intermediate_size=200, hidden_act="gelu"))
assert fl._is_norm(OnePlusWeightRMSNorm(96)) and not fl._agrees(OnePlusWeightRMSNorm(96), fl._norm_forward, 96)
assert fl._is_gated_mlp(gelu) and not fl._agrees(gelu, fl._mlp_forward, 96)
# a decoder layer fused in place (its two norms and its MLP), the same answer, then its own forwards again
small = Qwen2_5_VLTextConfig(hidden_size=256, intermediate_size=96, num_attention_heads=2, num_key_value_heads=1)
layer = qvl.Qwen2_5_VLDecoderLayer(small, 0).eval()   # heads of 128, as the rotary's sections take
x = torch.randn(2, 9, 256)
rope = qvl.Qwen2_5_VLRotaryEmbedding(small)
positions = torch.arange(9).expand(3, 2, 9)
want = layer(x, position_embeddings=rope(x, positions))
assert fl._fuse(layer) == 3 and fl._fuse(layer) == 3   # again: the same three
got = layer(x, position_embeddings=rope(x, positions))
assert (got - want).abs().max() <= 1e-5 * want.abs().max()
assert fl.unfuse_layers(layer) == 3 and all("forward" not in vars(m) for m in layer.modules())
print("fused ok")
"""


def test_fused_layers_give_the_modules_answers_under_tritons_interpreter():
    pytest.importorskip("triton")
    out = subprocess.run([sys.executable, "-c", INTERPRETED], env={**os.environ, "TRITON_INTERPRET": "1"},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "fused ok" in out.stdout, out.stderr[-3000:]


def test_nothing_is_fused_off_cuda():
    """On a CPU the judge keeps transformers' forwards: the model is untouched."""
    import torch
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qvl
    from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLTextConfig

    from salon.judges.fused_layers import fuse_layers

    layer = qvl.Qwen2_5_VLDecoderLayer(Qwen2_5_VLTextConfig(hidden_size=64, intermediate_size=96,
                                                            num_attention_heads=4, num_key_value_heads=2), 0)
    assert fuse_layers(layer) == 0
    assert all("forward" not in vars(m) for m in layer.modules())
    assert fuse_layers(torch.nn.Linear(2, 2)) == 0


def test_the_fused_kernels_compile_for_the_h200():
    """What the interpreter cannot show: the kernels in bf16, compiled for sm_90."""
    pytest.importorskip("triton")
    from salon.judges import fused_layers as fl
    from triton_support import compile_for_sm90

    compile_for_sm90(fl._rms_norm_kernel, ["*bf16"] * 3 + ["i32"] * 3 + ["fp32"], {"BLOCK": 4096}, num_warps=8)
    compile_for_sm90(fl._silu_mul_kernel, ["*bf16"] * 3 + ["i32"], {"BLOCK": fl.SILU_BLOCK}, num_warps=8)
