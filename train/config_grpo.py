"""The train config's `grpo:` section: salon's generation settings and any field of TRL's GRPOConfig.

    grpo:
      generation: compiled            # or transformers, continuous_batching, vllm_server, vllm_colocate
      per_device_train_batch_size: 8
      epsilon: 0.3                    # not salon's: checked against GRPOConfig itself, passed as is

Loaded as part of salon.train.config.load_config; the checks run on construction.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from salon.train.config_checks import on_off, raise_problems

GENERATION_ENGINES = ("transformers", "compiled", "continuous_batching", "vllm_server", "vllm_colocate")
GENERATION_COMPILE = ("auto", "on", "off")
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo")
SCALE_REWARDS = ("group", "batch", "none")


@dataclass
class GRPOSettings:
    learning_rate: float = 5e-5
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_steps: int = 5
    beta: float = 0.0  # KL coefficient; >0 loads the reference (the base model, adapters off)
    num_generations: int = 8
    per_device_train_batch_size: int = 8  # completions per device per micro-step
    gradient_accumulation_steps: int = 1
    max_completion_length: int = 4096
    temperature: float = 1.0
    top_p: float = 0.95  # TRL's 1.0 / 0 defaults invented ~1 method per 11 rollouts in the prior art
    top_k: int = 20
    scale_rewards: str = "none"  # "group" shrank survivors' advantages where rejects were common
    loss_type: str = "dapo"
    max_steps: int = 200
    save_steps: int = 10
    logging_steps: int = 1
    report_to: list[str] = field(default_factory=lambda: ["trackio"])
    use_cpu: bool = False
    bf16: bool = True
    gradient_checkpointing: bool = True
    # How completions are generated: transformers (TRL's plain generate on the peft model), compiled
    # (salon.train.generation: a merged copy of the policy, static KV cache, CUDA graphs), continuous_batching
    # (transformers' paged engine, no extra package), vllm_server (a `trl vllm-serve` process on other
    # GPUs, at vllm_server_base_url), vllm_colocate (vLLM in the training process, sharing the GPU);
    # auto: compiled where the policy trains on CUDA, transformers on a CPU.
    generation: str = "auto"
    generation_compile: str = "auto"  # compiled: torch.compile the decode step (auto: on CUDA only; off: static cache only)
    generation_prompt_bucket: int = 256  # compiled: prompts left-padded to a multiple of this, so shapes repeat
    generation_attention: str = "whole"  # compiled: decode attention over the whole static cache, or the filled part
    # Completions generated at once, per process: per_device_train_batch_size x steps_per_generation (TRL's
    # default steps_per_generation is gradient_accumulation_steps). 8 prompts x 8 per optimiser step:
    # per_device_train_batch_size=8, gradient_accumulation_steps=8. A steps_per_generation above
    # gradient_accumulation_steps makes one generation feed several optimiser steps (TRL then corrects
    # with the old policy's log-probs). Give at most one of the two.
    generation_batch_size: int | None = None  # completions per generation over all processes
    steps_per_generation: int | None = None
    vllm_server_base_url: str | None = None  # vllm_server: e.g. http://127.0.0.1:8000 (default: TRL's host:port)
    vllm_gpu_memory_utilization: float = 0.3  # vllm_colocate: the card's share vLLM may take
    extra: dict = field(default_factory=dict)  # any other GRPOConfig field, passed as is

    def __post_init__(self):
        p = []
        if self.learning_rate <= 0:
            p.append(f"grpo.learning_rate={self.learning_rate}: must be positive")
        if self.beta < 0:
            p.append(f"grpo.beta={self.beta}: the KL coefficient cannot be negative")
        if self.num_generations < 2:
            p.append(f"grpo.num_generations={self.num_generations}: GRPO needs at least 2 per prompt")
        elif self.per_device_train_batch_size * self.gradient_accumulation_steps % self.num_generations:
            p.append(f"grpo.per_device_train_batch_size x gradient_accumulation_steps = "
                     f"{self.per_device_train_batch_size * self.gradient_accumulation_steps} must be a multiple "
                     f"of grpo.num_generations={self.num_generations}")
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length",
                     "max_steps", "save_steps", "logging_steps"):
            if getattr(self, name) < 1:
                p.append(f"grpo.{name}={getattr(self, name)}: must be at least 1")
        if self.warmup_steps < 0:
            p.append(f"grpo.warmup_steps={self.warmup_steps}: must be 0 or more")
        if self.temperature <= 0:
            p.append(f"grpo.temperature={self.temperature}: must be positive")
        if not 0 < self.top_p <= 1:
            p.append(f"grpo.top_p={self.top_p}: must be in (0, 1]")
        if self.top_k < 0:
            p.append(f"grpo.top_k={self.top_k}: must be 0 (off) or more")
        if self.scale_rewards not in SCALE_REWARDS:
            p.append(f"grpo.scale_rewards={self.scale_rewards!r}: use one of {', '.join(SCALE_REWARDS)}")
        if self.loss_type not in LOSS_TYPES:
            p.append(f"grpo.loss_type={self.loss_type!r}: use one of {', '.join(LOSS_TYPES)}")
        if isinstance(self.report_to, str):
            self.report_to = [self.report_to]
        if self.generation not in ("auto", *GENERATION_ENGINES):
            p.append(f"grpo.generation={self.generation!r}: use auto or one of {', '.join(GENERATION_ENGINES)}")
        elif self.generation.startswith("vllm") and importlib.util.find_spec("vllm") is None:
            p.append(f"grpo.generation={self.generation}: vLLM is not installed here (`pip install vllm` on the "
                     "GPU node, a build matching its CUDA); or use generation=continuous_batching, which needs "
                     "no extra package")
        if not 0 < self.vllm_gpu_memory_utilization < 1:
            p.append(f"grpo.vllm_gpu_memory_utilization={self.vllm_gpu_memory_utilization}: a share in (0, 1)")
        self.generation_compile = on_off(self.generation_compile)
        if self.generation_compile not in GENERATION_COMPILE:
            p.append(f"grpo.generation_compile={self.generation_compile!r}: use {', '.join(GENERATION_COMPILE)}")
        if self.generation_attention not in ("filled", "whole"):
            p.append(f"grpo.generation_attention={self.generation_attention!r}: use filled or whole")
        if self.generation_prompt_bucket < 1:
            p.append(f"grpo.generation_prompt_bucket={self.generation_prompt_bucket}: must be at least 1")
        if self.generation_batch_size is not None and self.steps_per_generation is not None:
            p.append("grpo.generation_batch_size and grpo.steps_per_generation both set: give one (TRL derives the other)")
        if self.generation_batch_size is not None and (self.generation_batch_size < 1 or
                                                       self.generation_batch_size % self.num_generations):
            p.append(f"grpo.generation_batch_size={self.generation_batch_size}: a positive multiple of "
                     f"grpo.num_generations={self.num_generations} (whole groups)")
        if self.steps_per_generation is not None and self.steps_per_generation < 1:
            p.append(f"grpo.steps_per_generation={self.steps_per_generation}: must be at least 1")
        raise_problems("grpo", p)
