"""HPSv3, a 7B human-preference score model, as an absolute scorer (registry name "hpsv3").

    judge = load_hpsv3(model="ckpt")                     # ckpt/HPSv3.safetensors + ckpt/base/
    judge = load_hpsv3(model="http://127.0.0.1:8000")    # a running HPSv3 service (hpsv3_remote.py)
    judge.rate(images, prompts=None)   # [Rating(score, mu, log_sigma, reason)], one per image
    judge.score(images)                # [score or None]: the ImageJudge protocol

The checkpoint folder holds the released `HPSv3.safetensors` (MizzenAI/HPSv3, 16.6 GB) and, in
`base/` (or beside it), Qwen2-VL-7B-Instruct's config and processor files, not its weights:

    hf download MizzenAI/HPSv3 HPSv3.safetensors --local-dir ckpt
    hf download Qwen/Qwen2-VL-7B-Instruct --exclude "*.safetensors" --local-dir ckpt/base

It runs on transformers 5.x (salon.models.hpsv3: the strict loader and the original forward). Each
image is composited onto white and resized as HPSv3 resized it: to about 448x448 pixels (256 x
28 x 28) keeping its aspect, sides multiples of 28, bicubic. A 600 px canvas lands on 420 px, not
448 (a float rounding in the original; 225 visual tokens). The prompt fills the rubric it was
trained with (salon.models.hpsv3_prompt). HPSv3 gives mu and log sigma; mu has no bounds (about -10 for a
blank canvas to +10 for the best text-to-image models), so the score is the prior art's
`1 / (1 + exp(-mu / 4))`. A failure is a Rating with score None and the reason, never 0.
"""

from __future__ import annotations

import logging
import math
from typing import Sequence

from PIL import Image

from salon.judges.hpsv3_config import HPSv3Config, each_prompt
from salon.judges.hpsv3_rating import rating_from
from salon.judges.verdict import Rating, as_rgb
from salon.models.hpsv3_prompt import hpsv3_text
from salon.models.names import is_url
from salon.pool.errors import ConfigError, JudgeError

log = logging.getLogger(__name__)

FACTOR = 28  # patch 14 x merge 2
PIXELS = 256 * 28 * 28  # HPSv3's min_pixels = max_pixels


def resized_size(height: int, width: int) -> tuple[int, int]:
    """HPSv3's target (height, width): sides multiples of 28, area brought to PIXELS.

    As its vendored qwen-vl-utils `smart_resize` with min_pixels = max_pixels = PIXELS: round each
    side to 28, then scale down (floor) or up (ceil) by the area ratio when the area is off."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio {max(height, width) / min(height, width):.0f} is over 200")
    h = max(FACTOR, round(height / FACTOR) * FACTOR)
    w = max(FACTOR, round(width / FACTOR) * FACTOR)
    if h * w > PIXELS:
        beta = math.sqrt(height * width / PIXELS)
        h, w = math.floor(height / beta / FACTOR) * FACTOR, math.floor(width / beta / FACTOR) * FACTOR
    elif h * w < PIXELS:
        beta = math.sqrt(PIXELS / (height * width))
        h, w = math.ceil(height * beta / FACTOR) * FACTOR, math.ceil(width * beta / FACTOR) * FACTOR
    return h, w


def hpsv3_image(image: Image.Image) -> Image.Image:
    """The image HPSv3 sees: transparency on white, then its resize (600x600 -> 420x420)."""
    rgb = as_rgb(image)
    h, w = resized_size(rgb.height, rgb.width)
    return rgb.resize((w, h), Image.BICUBIC)


class HPSv3Judge:
    """HPSv3 in this process: a `RatingJudge` (verdict.py)."""

    def __init__(self, config: HPSv3Config | None = None, **kwargs):
        import torch

        from salon.models.hpsv3 import load_released, released_paths

        cfg = config or HPSv3Config(**kwargs)
        if is_url(cfg.model):
            raise ConfigError([f"model={cfg.model} is a service URL: use load_hpsv3 (salon.judges.hpsv3_remote)"],
                              "hpsv3")
        checkpoint, base = released_paths(cfg.model, cfg.base)
        device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if device.startswith("cuda") else "float32")
        try:
            self.model, self.processor, self.reward_id = load_released(
                checkpoint, base, getattr(torch, dtype), device, cfg.attn_implementation)
        except (OSError, ValueError) as e:
            raise JudgeError(f"could not load HPSv3 from {checkpoint} with base {base}: {e}") from e
        self.config = cfg
        self.name = f"hpsv3:{cfg.model}"
        self.patch = self.model.config.vision_config.patch_size

    def score(self, images: Sequence[Image.Image]) -> list[float | None]:
        return [r.score for r in self.rate(images)]

    def rate(self, images: Sequence[Image.Image], prompts: Sequence[str] | None = None) -> list[Rating]:
        """One Rating per image; `prompts` (one per image) default to the config's prompt."""
        prompts = each_prompt(self.config, images, prompts)
        ratings: list[Rating | None] = [None] * len(images)
        ready = []
        for i, image in enumerate(images):
            try:
                ready.append((i, hpsv3_image(image)))
            except (OSError, ValueError, AttributeError) as e:
                ratings[i] = Rating(None, reason=f"could not read image: {e}")
        size = self.config.batch_size
        for start in range(0, len(ready), size):
            chunk = ready[start:start + size]
            for (i, _), rating in zip(chunk, self._rate_chunk([im for _, im in chunk], [prompts[i] for i, _ in chunk])):
                ratings[i] = rating
        return ratings

    def inputs(self, images: Sequence[Image.Image], prompts: Sequence[str]):
        """The processor's batch for already resized images: one user turn each, image then rubric."""
        texts = [self.processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": hpsv3_text(p)}]}],
            tokenize=False, add_generation_prompt=True) for p in prompts]
        batch = self.processor(text=texts, images=list(images), padding=True, return_tensors="pt")
        for image, grid in zip(images, batch["image_grid_thw"].tolist()):
            if grid != [1, image.height // self.patch, image.width // self.patch]:
                raise JudgeError(f"the processor resized a {image.width}x{image.height} image again (grid {grid}): "
                                 "use Qwen2-VL-7B-Instruct's preprocessor_config.json (min_pixels 3136, "
                                 "max_pixels 12845056) in the base folder")
        return batch

    def _rate_chunk(self, images, prompts) -> list[Rating]:
        import torch

        try:
            batch = self.inputs(images, prompts).to(self.model.device)
            out = self.model.reward(batch["input_ids"], batch["attention_mask"], batch["pixel_values"],
                                    batch["image_grid_thw"], self.reward_id).tolist()
        except (RuntimeError, ValueError, torch.cuda.OutOfMemoryError) as e:
            # an infrastructure failure (out of memory, a bad batch): missing, never a bad painting
            log.warning("hpsv3 forward failed: %s", e)
            return [Rating(None, reason=f"hpsv3 failed: {type(e).__name__}: {e}")] * len(images)
        return [rating_from(mu, log_sigma) for mu, log_sigma in out]


def load_hpsv3(model: str | None = None, **kwargs):
    """The HPSv3 scorer for `model`: a local checkpoint folder, or an http(s) HPSv3 service."""
    if not model:
        raise ConfigError(["model is required: the folder holding HPSv3.safetensors, or a service URL"], "hpsv3")
    cfg = HPSv3Config(model=model, **kwargs)
    if is_url(cfg.model):
        from salon.judges.hpsv3_remote import RemoteHPSv3

        return RemoteHPSv3(cfg)
    return HPSv3Judge(cfg)
