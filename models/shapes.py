"""Named architectures in their real shapes with random weights, for benchmarks and smoke runs
on a GPU node that cannot download weights.

    policy.model: random:qwen3-1.7b          # salon train ... --set policy.model=random:qwen3-1.7b
    judge.model:  random:qwen2.5-vl-7b
    reward.absolute_kwargs.model: random:hpsv3   # HPSv3 (Qwen2-VL-7B + head), in the released layout
    build_random("qwen3-1.7b", folder)       -> folder with config, tokenizer, random weights

Commands name these models `random:NAME` and salon.models.names.resolve_model builds them.
A random model costs what the real one costs (same layers, widths, vocabulary, image tokens),
so step times, memory and throughput measured with it hold for the real checkpoint; what it
writes is noise. The config values are those of the published config.json files. The tokenizer
is a small byte-level BPE with Qwen's special tokens (salon.models.tiny): it decodes every id
it knows and drops the rest, so a random policy's completions decode to short noise and never
pass the gate. Weights are drawn with seed 0 on the GPU when there is one, stored in bf16 with
`save_pretrained` and loaded back through the Auto classes like any checkpoint; an existing
folder is reused, so a resumed run sees the same base weights.
"""

from __future__ import annotations

from pathlib import Path

# Qwen/Qwen3-1.7B config.json
QWEN3_1_7B = dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                  rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1e6},
                  tie_word_embeddings=True, hidden_act="silu")
# Qwen/Qwen2.5-VL-7B-Instruct config.json, text and vision towers
QWEN2_5_VL_7B_TEXT = dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                          num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=128000,
                          rms_norm_eps=1e-6, hidden_act="silu", tie_word_embeddings=False,
                          rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1e6})
QWEN2_5_VL_7B_VISION = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, in_chans=3,
                            out_hidden_size=3584, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                            window_size=112, fullatt_block_indexes=[7, 15, 23, 31], tokens_per_second=2,
                            hidden_act="silu")
# Qwen/Qwen2-VL-7B-Instruct config.json (flat in the original; HPSv3 is built on it)
QWEN2_VL_7B_TEXT = dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                        num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
                        rope_theta=1e6, mrope_section=[16, 24, 24])
QWEN2_VL_7B_VISION = dict(depth=32, embed_dim=1280, hidden_size=3584, num_heads=16, mlp_ratio=4, patch_size=14,
                          spatial_merge_size=2, temporal_patch_size=2)
# Qwen2-VL's 151657 tokens plus <|Reward|>: the rows resize_token_embeddings(len(tokenizer)) leaves
# (inferred from HPSv3's code; the released file's header has not been read)
HPSV3_VOCAB_ROWS = 151658
SHAPES = {"qwen3-1.7b": ("qwen3", QWEN3_1_7B),
          "qwen2.5-vl-7b": ("qwen2_5_vl", (QWEN2_5_VL_7B_TEXT, QWEN2_5_VL_7B_VISION)),
          "hpsv3": ("hpsv3", (QWEN2_VL_7B_TEXT, QWEN2_VL_7B_VISION))}


def build_random(name: str, folder: Path, shape: dict | tuple | None = None) -> Path:
    """Build the architecture SHAPES[name] into `folder` (once) and return the folder. `shape`
    overrides the named shape's values (tests build the real vocabulary with tiny widths)."""
    if name not in SHAPES:
        raise ValueError(f"unknown architecture {name!r}: use {', '.join(SHAPES)}")
    folder = Path(folder)
    arch, values = SHAPES[name]
    if arch == "hpsv3":
        from salon.models.hpsv3 import build_hpsv3

        more_text, more_vision = shape or ({}, {})
        return build_hpsv3(folder, {**values[0], **more_text}, {**values[1], **more_vision},
                           vocab_rows=HPSV3_VOCAB_ROWS, device=_device_and_dtype()[0])
    if (folder / "config.json").exists():
        return folder
    if arch == "qwen3":
        _build_causal_lm(folder, {**values, **(shape or {})})
    else:
        text, vision = values
        more_text, more_vision = shape or ({}, {})
        _build_vl(folder, {**text, **more_text}, {**vision, **more_vision})
    return folder


def _device_and_dtype():
    import torch

    return ("cuda", torch.bfloat16) if torch.cuda.is_available() else ("cpu", torch.float32)


def _build_causal_lm(folder: Path, values: dict) -> None:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from salon.models.tokenizer import chat_tokenizer

    tok = chat_tokenizer()
    device, dtype = _device_and_dtype()
    cfg = Qwen3Config(**values, bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM._from_config(cfg, dtype=dtype)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)


def _build_vl(folder: Path, text: dict, vision: dict) -> None:
    import torch
    from transformers import (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor,
                              Qwen2VLImageProcessor, Qwen2VLVideoProcessor)

    from salon.models.tokenizer import CHAT_TEMPLATE, SPECIALS, chat_tokenizer

    tok = chat_tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    device, dtype = _device_and_dtype()
    cfg = Qwen2_5_VLConfig(text_config=dict(text, bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                                            pad_token_id=ids["<|endoftext|>"]),
                           vision_config=vision, image_token_id=ids["<|image_pad|>"],
                           video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                           vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=False)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(cfg, dtype=dtype).eval()
    model.save_pretrained(folder)
    # the published preprocessor: 14-pixel patches merged 2x2, so a 600x600 painting is 462 tokens
    Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(), tokenizer=tok,
                        video_processor=Qwen2VLVideoProcessor(), chat_template=CHAT_TEMPLATE).save_pretrained(folder)
