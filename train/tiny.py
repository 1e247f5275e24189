"""Tiny random models and references built from configs, so a training run works offline on a CPU.

    resolve_model("tiny:qwen3", folder)          -> folder with a tiny Qwen3 causal LM + tokenizer
    resolve_model("tiny:qwen2_5_vl", folder)     -> folder with a tiny Qwen2.5-VL + processor
    resolve_references("tiny:refs", folder)      -> folder with love/ and okay/ synthetic paintings

Anything not starting with `tiny:` is returned unchanged (a folder or Hub id). The models are
random (seed 0), real transformers classes saved with `save_pretrained` and loaded back with the
Auto classes, exactly as a real checkpoint would be; `smoke.yaml` uses them. Builders are
idempotent: an existing folder is reused.
"""

from __future__ import annotations

from pathlib import Path

from salon.pool.errors import ConfigError

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|image_pad|>", "<|video_pad|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' or 'image' in item %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = ["function setup() { createCanvas(600, 600, WEBGL); brush.fill('#e8734a', 120); }",
          "Painting A: Painting B: Which is the better watercolour painting? Answer A or B.",
          "You are a watercolour painter who paints with code. Paint a peach hibiscus."]
POLICY_ARCHS = ("qwen2", "qwen3")
JUDGE_ARCHS = ("qwen2_5_vl",)


def is_tiny(spec: str | None) -> bool:
    return bool(spec) and str(spec).startswith("tiny:")


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=SPECIALS[1:], chat_template=CHAT_TEMPLATE)


def resolve_model(spec: str, folder: Path) -> str:
    """A loadable model path: `spec` itself, or a tiny model built into `folder`."""
    if not is_tiny(spec):
        return spec
    arch = spec.split(":", 1)[1]
    folder = Path(folder)
    if (folder / "config.json").exists():
        return str(folder)
    if arch in POLICY_ARCHS:
        _build_policy(folder, arch)
    elif arch in JUDGE_ARCHS:
        _build_judge(folder)
    else:
        raise ConfigError([f"{spec}: unknown tiny model; use tiny:{', tiny:'.join(POLICY_ARCHS + JUDGE_ARCHS)}"],
                          "tiny model")
    return str(folder)


def _build_policy(folder: Path, arch: str) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    tok = _tokenizer()
    common = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                  bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(head_dim=8, **common)) if arch == "qwen3" else \
        Qwen2ForCausalLM(Qwen2Config(**common))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)


def _build_judge(folder: Path) -> None:
    import torch
    from transformers import (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor,
                              Qwen2VLImageProcessor, Qwen2VLVideoProcessor)

    tok = _tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    text = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, bos_token_id=ids["<|endoftext|>"],
                eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e4})
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=64, window_size=56,
                  fullatt_block_indexes=[1], patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
    torch.manual_seed(0)
    cfg = Qwen2_5_VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=False,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    Qwen2_5_VLForConditionalGeneration(cfg).eval().save_pretrained(folder)
    sizes = dict(patch_size=14, merge_size=2, min_pixels=56 * 56, max_pixels=112 * 112)
    Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(temporal_patch_size=2, **sizes), tokenizer=tok,
                        video_processor=Qwen2VLVideoProcessor(**sizes),
                        chat_template=CHAT_TEMPLATE).save_pretrained(folder)


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
