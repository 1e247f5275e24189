"""Tiny VLM judges for tests: the random ones of salon.models.tiny, and one taught to prefer brightness.

    tiny_vl(arch="qwen2_5_vl", taught=False)         built once per process into a temp folder
    tiny_hpsv3()                                     tiny:hpsv3 in the released layout, built once
    teach_ab_preference(folder, steps=...)           fine-tune it to answer "A"/"B" (brighter wins)
    flat_image(level)                                a noisy flat painting of that brightness

The models are built by `salon.models.tiny.build_vl` / `build_lm` (the one place tiny models are
made; tests import those directly). Random weights answer about 0.5; `teach_ab_preference` gives a
model whose answer depends on the images and whose top tokens are "A" and "B", which a server that
returns top-k logprobs needs. Import from tests: `from fixtures_models import ...` (tests/ is on
`sys.path`).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach the Hub


def smooth_painting(seed: int, size=(600, 600), mode: str = "RGB"):
    """A smooth random RGB image (a 6 x 6 grid of colours, bicubic up): scorers see a different
    picture per seed, the same one every time."""
    import numpy as np
    from PIL import Image

    small = np.random.default_rng(seed).integers(0, 255, (6, 6, 3), dtype=np.uint8)
    return Image.fromarray(small).resize(size, Image.BICUBIC).convert(mode)


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


def teach_ab_preference(folder: str | Path, steps: int = 300, seed: int = 0, lr: float = 3e-3) -> Path:
    """Fine-tune the tiny VLM in `folder` to answer "A" when Painting A is brighter, else "B".

    Uses the judges' own prompt (salon.judges.prompt), so the answer tokens come out on top.
    40 steps at lr 1e-2 left a model that only answered by position under transformers 5.24
    (p within 0.03 of 0.5 in both orders); 300 at 3e-3 gives p > 0.99 on 60-level gaps in ~7 s.
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


@functools.lru_cache(maxsize=None)
def tiny_vl(arch: str = "qwen2_5_vl", taught: bool = False) -> Path:
    """A tiny VLM folder built once per test process (removed at exit); `taught`: teach_ab_preference."""
    from salon.models.tiny import build_vl

    folder = Path(tempfile.mkdtemp(prefix=f"salon-tiny-{arch}-"))
    atexit.register(shutil.rmtree, folder, True)
    build_vl(folder, arch)
    if taught:
        teach_ab_preference(folder)
    return folder


@functools.lru_cache(maxsize=None)
def tiny_hpsv3() -> Path:
    """tiny:hpsv3 (salon.models.tiny: released layout, HPSv3.safetensors + base/) built once per test process."""
    from salon.models.names import resolve_model

    folder = Path(tempfile.mkdtemp(prefix="salon-tiny-hpsv3-"))
    atexit.register(shutil.rmtree, folder, True)
    return Path(resolve_model("tiny:hpsv3", folder))


def flat_image(level: float, size=(64, 64), seed: int = 0, tint=(0, 0, 0)):
    """A noisy flat painting of the given brightness (what the taught model compares)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    arr = level + np.asarray(tint, dtype=float) + rng.normal(0, 12, size=(size[1], size[0], 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype("uint8"))
