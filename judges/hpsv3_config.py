"""HPSv3's settings, shared by the scorer in this process (hpsv3.py) and the service client
(hpsv3_remote.py): a dataclass checked on construction (and before anything loads, by
salon.judges.registry.judge_problems, whose SETTINGS name it).

    HPSv3Config(model="ckpt", batch_size=8)              # or model="http://127.0.0.1:8000"
    each_prompt(config, images, prompts)                 # one prompt per image
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from salon.models.hpsv3_prompt import DEFAULT_PROMPT, REWARD_TOKEN
from salon.models.names import is_url
from salon.pool.errors import ConfigError

DTYPES = ("auto", "bfloat16", "float16", "float32")
LOCAL_ONLY = ("base", "dtype", "device", "attn_implementation")  # HPSv3Config fields a service ignores


@dataclass
class HPSv3Config:
    model: str  # folder with HPSv3.safetensors (or the file), or the http(s) URL of an HPSv3 service
    base: str | None = None  # Qwen2-VL-7B-Instruct config + processor; default MODEL/base, else MODEL
    prompt: str = DEFAULT_PROMPT
    batch_size: int = 8  # images per forward pass; for a service, requests in flight
    dtype: str = "auto"  # auto: bfloat16 on cuda, float32 on cpu (the head is always float32)
    device: str = "auto"
    attn_implementation: str = "sdpa"
    timeout_s: float = 90.0  # service: seconds per request (a cold start took 56 s in the prior art)
    attempts: int = 3  # service: tries per image, with backoff_s, 2 x backoff_s, ... between
    backoff_s: float = 5.0

    def __post_init__(self):
        p = []
        if not self.model:
            p.append("model is empty: give the folder holding HPSv3.safetensors or a service URL")
        if not self.prompt or REWARD_TOKEN in self.prompt:
            p.append(f"prompt={self.prompt!r}: give a text prompt (without the {REWARD_TOKEN} token)")
        if self.dtype not in DTYPES:
            p.append(f"dtype={self.dtype!r}: use one of {', '.join(DTYPES)}")
        for name, low in (("batch_size", 1), ("attempts", 1)):
            if getattr(self, name) < low:
                p.append(f"{name}={getattr(self, name)}: must be at least {low}")
        if self.timeout_s <= 0:
            p.append(f"timeout_s={self.timeout_s}: must be positive")
        if self.backoff_s < 0:
            p.append(f"backoff_s={self.backoff_s}: must be 0 or more")
        if is_url(self.model):
            p += [f"{k}={getattr(self, k)!r} applies to a local checkpoint, not to the service at {self.model}"
                  for k in LOCAL_ONLY if getattr(self, k) != type(self).__dataclass_fields__[k].default]
            self.model = self.model.rstrip("/")
        if p:
            raise ConfigError(p, "hpsv3")


def each_prompt(config: HPSv3Config, images: Sequence, prompts: Sequence[str] | None) -> list[str]:
    """One prompt per image: the ones given, or the config's."""
    prompts = [config.prompt] * len(images) if prompts is None else list(prompts)
    if len(prompts) != len(images):
        raise ValueError(f"{len(prompts)} prompts for {len(images)} images")
    return prompts


