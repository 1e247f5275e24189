"""The judge's language-model linears in float8 (judges/fp8_linears.py), through torch's own `_scaled_mm`
on the CPU, against the same tiny Qwen-VL judge in float32."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_models import flat_image, tiny_vl  # noqa: E402

from salon.judges.fp8_linears import FP8, Fp8Linear, quantize_linears  # noqa: E402
from salon.judges.verdict import Reference  # noqa: E402
from salon.judges.vlm_transformers import TransformersJudgeConfig, TransformersPairwiseJudge  # noqa: E402
from salon.pool.errors import ConfigError, JudgeError  # noqa: E402


def noise(h, w, seed):
    from PIL import Image

    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8))


def test_an_fp8_linear_is_the_linear_within_e4m3_rounding():
    torch.manual_seed(0)
    linear = torch.nn.Linear(256, 96)
    x = torch.randn(3, 7, 256) * torch.logspace(-2, 2, 7)[None, :, None]  # tokens of very different scales
    fp8 = Fp8Linear(linear)
    out, ref = fp8(x), linear(x)
    assert fp8.weight.dtype == FP8 and out.shape == ref.shape and out.dtype == x.dtype
    # e4m3 keeps 3 mantissa bits (relative rounding up to 1/16 an element); over 256 products of both
    # operands' roundings a row's error measured 3.5 %: each token is scaled on its own, so the small ones
    # are as exact as the large ones
    for t in range(7):
        rel = ((out[:, t] - ref[:, t]).norm() / ref[:, t].norm()).item()
        assert rel < 0.06, (t, rel)
    assert torch.equal(fp8.bias, linear.bias.detach())


def test_a_row_of_zeros_stays_zero():
    fp8 = Fp8Linear(torch.nn.Linear(32, 16, bias=False))
    out = fp8(torch.zeros(2, 32))
    assert torch.isfinite(out).all() and out.abs().max().item() == 0.0


@pytest.fixture(scope="module")
def folder():
    return str(tiny_vl("qwen2_5_vl"))


def test_quantize_turns_only_the_language_models_linears(folder):
    judge = TransformersPairwiseJudge(model=folder, quantize="fp8")
    lm = judge.model.model.language_model
    assert any(isinstance(m, Fp8Linear) for m in lm.modules())
    assert not any(isinstance(m, torch.nn.Linear) for m in lm.modules())
    assert any(isinstance(m, torch.nn.Linear) for m in judge.model.model.visual.modules())
    assert isinstance(judge.model.get_output_embeddings(), torch.nn.Linear)  # the answer head
    assert quantize_linears(lm) == 0  # nothing left to turn


@pytest.mark.parametrize("sharing", ["on", "off"])
def test_fp8_judges_as_the_float32_judge_does_within_a_stated_tolerance(folder, sharing):
    images = [noise(h, w, i) for i, (h, w) in enumerate([(60, 60), (80, 50), (100, 100), (30, 90)])]
    pairs = [(a, b) for a in images for b in images if a is not b]
    plain = np.array(TransformersPairwiseJudge(model=folder, sharing=sharing).first_wins(pairs))
    fp8 = np.array(TransformersPairwiseJudge(model=folder, sharing=sharing, quantize="fp8").first_wins(pairs))
    diff = np.abs(fp8 - plain)
    # measured 0.001 on this model; the bound is 10x that, and the pairs' own spread is larger still
    assert diff.max() < 0.01, diff.max()
    assert diff.max() > 0  # the products did run in float8


def test_a_taught_fp8_judge_keeps_its_preferences():
    judge = TransformersPairwiseJudge(model=str(tiny_vl("qwen2_5_vl", taught=True)), quantize="fp8")
    bright, dark = flat_image(220, seed=1), flat_image(50, seed=2)
    v = judge.judge([bright, dark], [Reference.from_image(flat_image(130, seed=3), id="mid")])
    assert v[0][0].p > 0.9 and v[1][0].p < 0.1


def test_an_unknown_quantize_names_the_choices():
    with pytest.raises(ConfigError, match="quantize.*fp8"):
        TransformersJudgeConfig(model="m", quantize="int4")


def test_a_model_without_a_language_model_is_refused_in_words(folder):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(folder)
    model.model.language_model = None
    with pytest.raises(JudgeError, match="language model"):
        TransformersPairwiseJudge.from_loaded(model, AutoProcessor.from_pretrained(folder),
                                              TransformersJudgeConfig(model=folder, quantize="fp8"))
