"""Tiny, real transformers models built offline from configs, for tests (no Hub, no weights).

    build_tiny_qwen_vl(folder, arch="qwen2_5_vl")   a Qwen2-VL / Qwen2.5-VL / Qwen3-VL with processor
    teach_ab_preference(folder, steps=...)           fine-tune it to answer "A"/"B" (brighter wins)
    build_tiny_text_lm(folder, arch="qwen2")         a Qwen2 / Qwen3 causal LM with a chat template
    tiny_vl(arch="qwen2_5_vl", taught=False)         built once per process into a temp folder

Each builder writes a folder that `AutoModelForImageTextToText` / `AutoModelForCausalLM` and
`AutoProcessor` / `AutoTokenizer` load with `HF_HUB_OFFLINE=1`, and returns the folder. The
tokenizer is a byte-level BPE trained on a few sentences, so every ASCII character (in particular
"A" and "B") is one token. Random weights answer about 0.5; `teach_ab_preference` gives a model
whose answer depends on the images and whose top tokens are "A" and "B", which a server that
returns top-k logprobs needs. Import from tests: `from tests.fixtures_models import ...` or put
the tests folder on `sys.path`.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach the Hub

SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

# Qwen-style chat template (a cut-down copy of the real one's structure): string or list content,
# one <|vision_start|><|image_pad|><|vision_end|> per image item, the assistant header on request.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' or 'image' in item %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CORPUS = [
    "Painting A: Painting B: Which is the better watercolour painting? Answer with one letter, A or B.",
    "A watercolour of a peach hibiscus, loose washes, soft edges, a fully painted canvas.",
    "You are a careful art critic. Compare composition, colour, brushwork and finish.",
    "The quick brown fox jumps over the lazy dog. 0123456789 user assistant system",
]


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:],
        chat_template=CHAT_TEMPLATE,
    )


def build_tiny_qwen_vl(folder: str | Path, arch: str = "qwen2_5_vl", seed: int = 0) -> Path:
    """Write a randomly initialised tiny VLM of the given architecture plus its processor."""
    import torch
    from transformers import Qwen2VLImageProcessor

    folder = Path(folder)
    tok = _tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    token_ids = dict(
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    text = dict(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    if arch in ("qwen2_vl", "qwen2_5_vl"):
        from transformers import Qwen2VLVideoProcessor

        patch, max_pixels = 14, 112 * 112
        text["rope_parameters"] = {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e4}
        video = Qwen2VLVideoProcessor(patch_size=patch, merge_size=2, min_pixels=56 * 56, max_pixels=max_pixels)
        if arch == "qwen2_vl":
            from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor

            vision = dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, mlp_ratio=2, patch_size=patch,
                          spatial_merge_size=2, temporal_patch_size=2)
            config, model_cls, proc_cls = Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor
        else:
            from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor

            vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=64,
                          window_size=56, fullatt_block_indexes=[1], patch_size=patch, spatial_merge_size=2,
                          temporal_patch_size=2)
            config, model_cls, proc_cls = Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor
    elif arch == "qwen3_vl":
        from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor
        from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

        patch, max_pixels = 16, 128 * 128
        text.update(head_dim=16, rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3],
                                                  "mrope_interleaved": True, "rope_theta": 1e4})
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=64,
                      patch_size=patch, spatial_merge_size=2, temporal_patch_size=2,
                      num_position_embeddings=64, deepstack_visual_indexes=[1])
        video = Qwen3VLVideoProcessor(patch_size=patch, merge_size=2)
        config, model_cls, proc_cls = Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor
    else:
        raise ValueError(f"unknown arch {arch!r}: use qwen2_vl, qwen2_5_vl or qwen3_vl")

    cfg = config(text_config=text, vision_config=vision, tie_word_embeddings=False, **token_ids)
    model = model_cls(cfg).eval()
    image_proc = Qwen2VLImageProcessor(patch_size=patch, merge_size=2, temporal_patch_size=2,
                                       min_pixels=56 * 56, max_pixels=max_pixels)
    processor = proc_cls(image_processor=image_proc, tokenizer=tok, video_processor=video,
                         chat_template=CHAT_TEMPLATE)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _brightness_pairs(n: int, rng):
    """Pairs of noisy flat images of different brightness; label 0 when the first is brighter."""
    import numpy as np
    from PIL import Image

    pairs, labels = [], []
    for _ in range(n):
        levels = rng.uniform(20, 235, size=2)
        while abs(levels[0] - levels[1]) < 40:
            levels = rng.uniform(20, 235, size=2)
        imgs = []
        for level in levels:
            tint = rng.uniform(-20, 20, size=3)
            arr = level + tint + rng.normal(0, 12, size=(64, 64, 3))
            imgs.append(Image.fromarray(np.clip(arr, 0, 255).astype("uint8")))
        pairs.append(tuple(imgs))
        labels.append(0 if levels[0] > levels[1] else 1)
    return pairs, labels


def teach_ab_preference(folder: str | Path, steps: int = 40, seed: int = 0, lr: float = 1e-2) -> Path:
    """Fine-tune the tiny VLM in `folder` to answer "A" when Painting A is brighter, else "B".

    Uses the judges' own prompt (salon.judges.prompt), so the answer tokens come out on top.
    """
    import numpy as np
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from salon.judges.prompt import PAIRWISE_PROMPT

    folder = Path(folder)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = AutoModelForImageTextToText.from_pretrained(folder).train()
    processor = AutoProcessor.from_pretrained(folder)
    answer_ids = [processor.tokenizer.convert_tokens_to_ids(t) for t in PAIRWISE_PROMPT.answers]
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(steps):
        pairs, labels = _brightness_pairs(8, rng)
        texts = [processor.apply_chat_template(PAIRWISE_PROMPT.messages(), add_generation_prompt=True,
                                               tokenize=False)] * len(pairs)
        batch = processor(text=texts, images=[im for p in pairs for im in p], return_tensors="pt", padding=True)
        logits = model(**batch).logits[:, -1]
        target = torch.tensor([answer_ids[y] for y in labels])
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval().save_pretrained(folder)
    return folder


def build_tiny_text_lm(folder: str | Path, arch: str = "qwen2", seed: int = 0) -> Path:
    """Write a randomly initialised tiny Qwen2 / Qwen3 causal LM with a chat-template tokenizer."""
    import torch

    folder = Path(folder)
    tok = _tokenizer()
    common = dict(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    if arch == "qwen2":
        from transformers import Qwen2Config, Qwen2ForCausalLM

        model = Qwen2ForCausalLM(Qwen2Config(**common))
    elif arch == "qwen3":
        from transformers import Qwen3Config, Qwen3ForCausalLM

        model = Qwen3ForCausalLM(Qwen3Config(head_dim=8, **common))
    else:
        raise ValueError(f"unknown arch {arch!r}: use qwen2 or qwen3")
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@functools.lru_cache(maxsize=None)
def tiny_vl(arch: str = "qwen2_5_vl", taught: bool = False) -> Path:
    """A tiny VLM folder built once per test process (removed at exit); `taught`: teach_ab_preference."""
    folder = Path(tempfile.mkdtemp(prefix=f"salon-tiny-{arch}-"))
    atexit.register(shutil.rmtree, folder, True)
    build_tiny_qwen_vl(folder, arch)
    if taught:
        teach_ab_preference(folder)
    return folder


def flat_image(level: float, size=(64, 64), seed: int = 0, tint=(0, 0, 0)):
    """A noisy flat painting of the given brightness (what the taught model compares)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    arr = level + np.asarray(tint, dtype=float) + rng.normal(0, 12, size=(size[1], size[0], 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype("uint8"))
