"""Tiny random models and references built from configs, so a training run works offline on a CPU.

    build_tiny("qwen3", folder)                  -> a tiny Qwen3 causal LM + tokenizer (tiny:qwen3)
    build_tiny("qwen2_5_vl", folder)             -> a tiny Qwen2.5-VL + processor (tiny:qwen2_5_vl)
    build_tiny("hpsv3", folder)                  -> a tiny HPSv3 in the released layout (tiny:hpsv3)
    resolve_references("tiny:refs", folder)      -> folder with love/ and okay/ synthetic paintings
    build_lm(folder, "qwen2"), build_vl(folder, "qwen3_vl")   the builders (tests use them too)

Commands name these models `tiny:ARCH` and salon.models.names.resolve_model builds them (the one
resolver of model names). The models are random (seed 0), real transformers classes saved with
`save_pretrained` and loaded back with the Auto classes, exactly as a real checkpoint would be;
`smoke.yaml` uses them. HPSv3 is saved as it was released instead (HPSv3.safetensors in the
transformers 4.45 key layout beside base/ with the Qwen2-VL config and processor:
salon.models.hpsv3.save_released) and loads through salon's HPSv3 loader.
"""

from __future__ import annotations

from pathlib import Path

from salon.models.tokenizer import CHAT_TEMPLATE, SPECIALS, chat_tokenizer
from salon.pool.errors import ConfigError

POLICY_ARCHS = ("qwen2", "qwen3")
JUDGE_ARCHS = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
SCORER_ARCHS = ("hpsv3",)
# HPSv3's Qwen2-VL towers at test size; the head keeps its real widths (1024, 16, 2)
TINY_HPSV3_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1e6, mrope_section=[2, 3, 3])
TINY_HPSV3_VISION = dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, mlp_ratio=2, patch_size=14,
                         spatial_merge_size=2, temporal_patch_size=2)


TINY_ARCHS = POLICY_ARCHS + JUDGE_ARCHS + SCORER_ARCHS


def is_tiny(spec: str | None) -> bool:
    return bool(spec) and str(spec).startswith("tiny:")


def build_tiny(arch: str, folder: str | Path) -> Path:
    """The tiny model `arch` (one of TINY_ARCHS) saved into `folder`."""
    if arch in SCORER_ARCHS:
        from salon.models.hpsv3 import build_hpsv3

        return build_hpsv3(folder, TINY_HPSV3_TEXT, TINY_HPSV3_VISION)
    if arch in POLICY_ARCHS:
        return build_lm(folder, arch)
    if arch in JUDGE_ARCHS:
        return build_vl(folder, arch)
    raise ValueError(f"unknown tiny model {arch!r}: use {', '.join(TINY_ARCHS)}")


def build_lm(folder: str | Path, arch: str = "qwen3", seed: int = 0) -> Path:
    """A random tiny Qwen2 / Qwen3 causal LM with a chat-template tokenizer, saved into `folder`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    tok = chat_tokenizer()
    common = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                  bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    if arch not in POLICY_ARCHS:
        raise ValueError(f"unknown arch {arch!r}: use {' or '.join(POLICY_ARCHS)}")
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(Qwen3Config(head_dim=8, **common)) if arch == "qwen3" else \
        Qwen2ForCausalLM(Qwen2Config(**common))
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return Path(folder)


def build_vl(folder: str | Path, arch: str = "qwen2_5_vl", seed: int = 0) -> Path:
    """A random tiny Qwen2-VL / Qwen2.5-VL / Qwen3-VL with its processor, saved into `folder`."""
    import torch
    from transformers import Qwen2VLImageProcessor

    folder = Path(folder)
    tok = chat_tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    text = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, bos_token_id=ids["<|endoftext|>"],
                eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e4})
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=64,
                  spatial_merge_size=2, temporal_patch_size=2)
    if arch == "qwen2_vl":
        from transformers import (Qwen2VLConfig as Config, Qwen2VLForConditionalGeneration as Model,
                                  Qwen2VLProcessor as Processor, Qwen2VLVideoProcessor as Video)

        patch, max_pixels = 14, 112 * 112
        vision = dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, mlp_ratio=2, spatial_merge_size=2,
                      temporal_patch_size=2)
    elif arch == "qwen2_5_vl":
        from transformers import (Qwen2_5_VLConfig as Config, Qwen2_5_VLForConditionalGeneration as Model,
                                  Qwen2_5_VLProcessor as Processor, Qwen2VLVideoProcessor as Video)

        patch, max_pixels = 14, 112 * 112
        vision.update(window_size=56, fullatt_block_indexes=[1])
    elif arch == "qwen3_vl":
        from transformers import (Qwen3VLConfig as Config, Qwen3VLForConditionalGeneration as Model,
                                  Qwen3VLProcessor as Processor)
        from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor as Video

        patch, max_pixels = 16, 128 * 128
        text.update(head_dim=16)
        text["rope_parameters"] = dict(text["rope_parameters"], mrope_interleaved=True)
        vision.update(num_position_embeddings=64, deepstack_visual_indexes=[1])
    else:
        raise ValueError(f"unknown arch {arch!r}: use {', '.join(JUDGE_ARCHS)}")
    vision["patch_size"] = patch
    torch.manual_seed(seed)
    cfg = Config(text_config=text, vision_config=vision, tie_word_embeddings=False,
                 image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                 vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    Model(cfg).eval().save_pretrained(folder)
    sizes = dict(patch_size=patch, merge_size=2, min_pixels=56 * 56, max_pixels=max_pixels)
    video = Video(patch_size=patch, merge_size=2) if arch == "qwen3_vl" else Video(**sizes)
    Processor(image_processor=Qwen2VLImageProcessor(temporal_patch_size=2, **sizes), tokenizer=tok,
              video_processor=video, chat_template=CHAT_TEMPLATE).save_pretrained(folder)
    return folder


def resolve_references(spec: str, folder: Path) -> str:
    """`spec`, or a folder of six synthetic paintings (love/ and okay/) built into `folder`."""
    if not is_tiny(spec):
        return spec
    if spec != "tiny:refs":
        raise ConfigError([f"{spec}: the only tiny references are tiny:refs"], "tiny references")
    import numpy as np
    from PIL import Image

    folder = Path(folder)
    rng = np.random.default_rng(0)
    for tier in ("love", "okay"):
        (folder / tier).mkdir(parents=True, exist_ok=True)
        for i in range(3):
            path = folder / tier / f"{tier}-{i}.png"
            if path.exists():
                continue
            arr = np.full((96, 96, 3), 240, dtype=np.uint8)  # paper, then a few soft blobs
            yy, xx = np.mgrid[:96, :96]
            for _ in range(4):
                cy, cx, r = rng.integers(20, 76, 2).tolist() + [int(rng.integers(10, 30))]
                blob = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
                arr[blob] = (0.5 * arr[blob] + 0.5 * rng.integers(0, 255, 3)).astype(np.uint8)
            Image.fromarray(arr).save(path)
    return str(folder)
