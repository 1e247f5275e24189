"""The train config's `grpo:` section: salon's generation settings and any field of TRL's GRPOConfig.

    grpo:
      generation: compiled            # or transformers, continuous_batching, vllm_server, vllm_colocate
      per_device_train_batch_size: 8
      epsilon: 0.3                    # not salon's: checked against GRPOConfig itself, passed as is

Loaded as part of salon.train.config.load_config; the checks run on construction.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from typing import Annotated, Literal

from salon.pool.field_checks import Range, at_least, field_problems, positive, raise_problems
from salon.train import config_trl_async
from salon.train.update import update_per_group

GENERATION_ENGINES = ("transformers", "compiled", "continuous_batching", "vllm_server", "vllm_colocate")
GENERATION_COMPILE = ("auto", "on", "off")
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo")
SCALE_REWARDS = ("group", "batch", "none")


Count = Annotated[int, at_least(1)]


@dataclass
class GRPOSettings:
    learning_rate: Annotated[float, positive] = 5e-5
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_steps: Annotated[int, at_least(0)] = 5
    beta: Annotated[float, Range(0, says="the KL coefficient cannot be negative")] = 0.0  # >0 loads the reference (the base model, adapters off)
    num_generations: Annotated[int, Range(2, says="GRPO needs at least 2 per prompt")] = 8
    per_device_train_batch_size: Count = 8  # completions per device per micro-step
    gradient_accumulation_steps: Count = 1
    max_completion_length: Count = 4096
    temperature: Annotated[float, positive] = 1.0
    top_p: Annotated[float, Range(0, 1, lo_open=True)] = 0.95  # TRL's 1.0 / 0 defaults invented ~1 method per 11 rollouts in the prior art
    top_k: Annotated[int, at_least(0), "0 = off"] = 20
    scale_rewards: Literal[SCALE_REWARDS] = "none"  # "group" shrank survivors' advantages where rejects were common
    loss_type: Literal[LOSS_TYPES] = "dapo"
    max_steps: Count = 200
    save_steps: Count = 10
    logging_steps: Count = 1
    report_to: list[str] = field(default_factory=lambda: ["trackio"])
    use_cpu: bool = False
    bf16: bool = True
    gradient_checkpointing: bool = True
    # the share of decoder layers that checkpoint (the others keep their activations: faster, more memory);
    # salon.train.update.partial_checkpointing
    gradient_checkpointing_layers: Annotated[float, Range(0, 1)] = 1.0
    # How completions are generated: transformers (TRL's plain generate on the peft model), compiled
    # (salon.train.engine.generation: a merged copy of the policy, static KV cache, CUDA graphs), continuous_batching
    # (transformers' paged engine, no extra package), vllm_server (a `trl vllm-serve` process on other
    # GPUs, at vllm_server_base_url), vllm_colocate (vLLM in the training process, sharing the GPU);
    # auto: compiled where the policy trains on CUDA, transformers on a CPU.
    generation: Literal[("auto", *GENERATION_ENGINES)] = "auto"
    # compiled: torch.compile the decode step (auto: on CUDA only; off: static cache only)
    generation_compile: Literal[GENERATION_COMPILE] = "auto"
    generation_prompt_bucket: Count = 256  # compiled: prompts left-padded to a multiple of this, so shapes repeat
    # compiled: how much of the static cache a decode step's attention reads: all of it (whole), the filled
    # positions rounded up to a multiple of 256 (buckets: one compiled step per length), the filled ones (filled:
    # a Triton kernel; in the trainer faster at batch 64 on an H200 and at batch 8 on an H100), or auto (filled from
    # 8 rows a call on, whole below: salon.train.engine.decode.FILLED_FROM_ROWS; filled at any rows over a float8
    # cache). salon.train.engine.decode_attention says how.
    generation_attention: Literal["auto", "buckets", "filled", "whole"] = "auto"
    # compiled: q/k/v and gate/up of each layer as one matrix product each (salon.train.engine.fused_linears); on an
    # H200 at 8 x 2,048 generation took 6.10-6.13 s against 6.65 unfused (the run of commit 6d35098)
    generation_fuse_linears: bool = True
    # compiled: the weights the decode reads. as_trained: the policy's own; fp8: its decoder layers' linear maps
    # also kept as float8 rows and read from those (half the bytes a decode step reads, salon.train.engine.
    # fp8_linears), every step's tokens then weighed by the trained policy's probability over the sampler's
    # (truncated at importance_sampling_cap, as for a stale step; logged as salon/overlap/importance_weight_*)
    generation_weights: Literal["as_trained", "fp8"] = "as_trained"
    # compiled: the KV cache the decode writes and reads. as_trained: in the policy's dtype; fp8: each position's
    # key and value head vectors as float8 with a scale each (about half the bytes; at 64 rows the cache is most
    # of what a decode step reads: salon.train.engine.fp8_cache), every step's tokens weighed as for fp8 weights
    generation_kv_cache: Literal["as_trained", "fp8"] = "as_trained"
    # compiled: the generation batch in this many waves of whole groups; with render.prefetch each wave's
    # paintings render while the next one generates (the decode runs at a smaller batch, its cost)
    generation_waves: Annotated[int, at_least(1)] = 1
    # Completions generated at once, per process: per_device_train_batch_size x steps_per_generation (TRL's
    # default steps_per_generation is gradient_accumulation_steps). 8 prompts x 8 per optimiser step:
    # per_device_train_batch_size=8, gradient_accumulation_steps=8. A steps_per_generation above
    # gradient_accumulation_steps makes one generation feed several optimiser steps (TRL then corrects
    # with the old policy's log-probs). Give at most one of the two.
    # compiled: generate the whole optimiser step at its first micro-batch, then let TRL score and update one
    # micro-batch at a time, so an update runs while later paintings render (salon.train.update.update_per_group)
    update_per_group: bool = False
    # the loss's forward with each row's padding moved to its end, attention causal with no mask (about
    # half the masked attention's work; salon.train.update.causal_loss); false: TRL's masked pass as it is
    causal_loss: bool = True
    # Overlap (salon.train.engine.overlap): 1 = the next step's completions are generated by the policy as it was
    # before this step's update while this step's are painted, judged and learned from, the update corrected by
    # truncated importance sampling on the log-probs recorded at generation; 0 = each step generates, then scores,
    # then updates. Auto: 1 for the compiled engine on CUDA (on an H100 with the card split, generation_sms below:
    # at 8 x 2,048 steady steps of 8.39 s against 9.54 synchronous, at 64 x 2,048 35.70 against 40.01:
    # docs/training.md), 0 elsewhere (a CPU's cores are the paintings'). 2 = the next two steps' completions decoded
    # as one batch by the policy before this step's update (staleness 1 then 2), the step after it learning with
    # the card to itself: a decode of few rows costs little more at twice the rows (on an H100 at 8 x 2,048,
    # 6.52 s against 8.39 at 1; never auto's: over eight learn_tiny pairs 2's rise fell below 0's range, one
    # pair collapsing, where 1's lay within it, docs/training.md; unmeasured at 64 rows).
    max_staleness: Literal[("auto", 0, 1, 2)] = "auto"
    # each token's importance weight pi_now / pi_sampler is cut at this (TRL's vllm_importance_sampling_clip_max,
    # its token_truncate mode); it enters the loss through the advantage (TRL accepts (B, T) advantages)
    importance_sampling_cap: Annotated[float, Range(1, says="a cap below 1 would shrink on-policy tokens")] = 3.0
    # where completions are generated: null = the trainer's device, in a thread of the training process; a device
    # ("cuda:1", "cpu") = a generation process of its own there, weights sent to it after each update (two cards:
    # generation on one, the judge and the update on the other; salon.train.engine.sampler_process)
    generation_device: str | None = None
    # with max_staleness 1 or 2 on one card: the multiprocessors the decode keeps to itself while the judge and the
    # update run beside it on the rest (CUDA green contexts, salon.train.engine.sm_partition; the driver rounds
    # to 8 on Hopper). auto: half the card's, where the overlapped step decodes in the training process on CUDA,
    # and shared where the driver cannot split (on an H100 at 8 x 2,048, 8.37 s on 64 + 68 and 9.55 on 48 + 84
    # against 9.61 sharing every multiprocessor and 10.0-10.4 synchronous, one or two steady steps each:
    # results/bench_train_gpu_split_h100.json);
    # null: shared, the decode on a stream of the highest priority
    generation_sms: int | str | None = "auto"
    # grpo: TRL's GRPOTrainer with salon's engines; trl_async: TRL's AsyncGRPOTrainer, generation on a vLLM server
    # (grpo.vllm_server_base_url), salon's reward in its rollout worker (salon.train.trl_async)
    trainer: Literal["grpo", "trl_async"] = "grpo"
    generation_batch_size: Annotated[int | None, at_least(1)] = None  # completions per generation over all processes
    steps_per_generation: Annotated[int | None, at_least(1)] = None
    vllm_server_base_url: str | None = None  # vllm_server: e.g. http://127.0.0.1:8000 (default: TRL's host:port)
    # vllm_colocate: the card's share vLLM may take
    vllm_gpu_memory_utilization: Annotated[float, Range(0, 1, lo_open=True, hi_open=True)] = 0.3
    extra: dict = field(default_factory=dict)  # any other GRPOConfig field, passed as is

    def __post_init__(self):
        p = field_problems(self, "grpo.")
        if isinstance(self.report_to, str):
            self.report_to = [self.report_to]
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if self.num_generations >= 2 and batch % self.num_generations:
            p.append(f"grpo.per_device_train_batch_size x gradient_accumulation_steps = {batch} must be a multiple "
                     f"of grpo.num_generations={self.num_generations}")
        if self.generation.startswith("vllm") and importlib.util.find_spec("vllm") is None:
            p.append(f"grpo.generation={self.generation}: vLLM is not installed here (`pip install vllm` on the "
                     "GPU node, a build matching its CUDA); or use generation=continuous_batching, which needs "
                     "no extra package")
        if self.generation_batch_size is not None and self.steps_per_generation is not None:
            p.append("grpo.generation_batch_size and grpo.steps_per_generation both set: give one (TRL derives the other)")
        if self.generation_batch_size and self.num_generations >= 2 and self.generation_batch_size % self.num_generations:
            p.append(f"grpo.generation_batch_size={self.generation_batch_size}: a positive multiple of "
                     f"grpo.num_generations={self.num_generations} (whole groups)")
        if not self.gradient_checkpointing and self.gradient_checkpointing_layers != 1.0:
            p.append(f"grpo.gradient_checkpointing_layers={self.gradient_checkpointing_layers} shares out checkpointing, "
                     "which grpo.gradient_checkpointing=false turns off: set one of them")
        p += update_per_group.config_problems(self)
        p += config_trl_async.config_problems(self)
        p += self._staleness_problems()
        p += self._fp8_problems()
        p += self._generation_device_problems()
        raise_problems("grpo", p)

    def _generation_device_problems(self) -> list[str]:
        """grpo.generation_device: a device torch names, and an engine salon's sampler process runs."""
        device = self.generation_device
        if device is None:
            return []
        if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
            return [f"grpo.generation_device={device!r}: a device such as cpu, cuda or cuda:1 (or null)"]
        p = []
        if self.update_per_group:
            p.append("grpo.generation_device generates in a process of its own, grpo.update_per_group in the "
                     "compiled engine of the training process: choose one")
        if self.generation.startswith("vllm") or self.generation == "continuous_batching":
            p.append(f"grpo.generation_device runs salon's sampler in a process of its own, not {self.generation} "
                     "(TRL's own engine, which places itself): leave generation_device null")
        if device in ("cuda", "cuda:0") and not self.use_cpu:
            # one training process trains on the first visible card (accelerate's cuda:0); several are refused
            # when the process starts
            p.append(f"grpo.generation_device={device!r} is the card the trainer runs on (cuda:0): name another "
                     "card (cuda:1), or leave generation_device null to generate in the training process")
        if self.generation_waves > 1:
            p.append(f"grpo.generation_waves={self.generation_waves} hands each wave's paintings to the renderer "
                     "from the engine in the training process; a process of its own decodes the batch at once: "
                     "leave generation_waves 1")
        return p

    def float8_asked(self) -> list[str]:
        """The float8 sampling settings given, as `grpo.NAME=fp8` (what the refusals name)."""
        return [f"grpo.{f}=fp8" for f in ("generation_weights", "generation_kv_cache") if getattr(self, f) == "fp8"]

    @property
    def sampler_rounds(self) -> bool:
        """The compiled engine samples from float8 weights or a float8 cache: a sampler that is not the policy, so
        every step's tokens are weighed (salon.train.update.stale_correction)."""
        return bool(self.float8_asked())

    def _fp8_problems(self) -> list[str]:
        """grpo.generation_weights / generation_kv_cache fp8: the compiled engine's, and every step corrected as a
        stale one is."""
        if not self.sampler_rounds:
            return []
        p, asked = [], " and ".join(self.float8_asked())
        if self.generation not in ("auto", "compiled"):
            p.append(f"{asked} is the compiled engine's: set grpo.generation=compiled (not {self.generation})")
        if self.update_per_group:
            p.append(f"{asked} weighs each token in the overlapped rollout's correction, which grpo.update_per_group "
                     "does without: choose one")
        return p + self._one_update_a_generation(asked)

    def _staleness_problems(self) -> list[str]:
        """What grpo.max_staleness 1 or 2 cannot go with: it overlaps generations with optimiser steps."""
        sms = self.generation_sms
        if sms is not None and sms != "auto" and (isinstance(sms, bool) or not isinstance(sms, int) or sms < 1):
            return [f"grpo.generation_sms={sms!r}: give auto, null, or a number of multiprocessors (1 or more)"]
        split = isinstance(sms, int)  # asked for by number: auto splits only where it can
        if self.max_staleness in ("auto", 0):
            return [f"grpo.generation_sms={sms} splits the card between a decode and the step beside it: it "
                    "needs grpo.max_staleness 1 or 2"] if split and self.max_staleness == 0 else []
        p, asked = [], f"grpo.max_staleness={self.max_staleness}"
        if split and self.generation_device is not None:
            p.append(f"grpo.generation_sms={sms} splits the trainer's card; grpo.generation_device="
                     f"{self.generation_device!r} already gives generation a device of its own: leave "
                     "generation_sms auto or null")
        if self.generation not in ("auto", "compiled", "transformers"):
            p.append(f"{asked} generates with salon's samplers (compiled, transformers), not "
                     f"{self.generation}: TRL's own engines generate inside its step (set max_staleness=0)")
        if self.update_per_group:
            p.append(f"{asked} and grpo.update_per_group both reorder the step: choose one")
        return p + self._one_update_a_generation(asked)

    def _one_update_a_generation(self, asked: str) -> list[str]:
        """The importance weights are taken in each micro-batch's loss forward (salon.train.update.stale_correction):
        every micro-batch of a generation must be learned at the weights of one update."""
        p = []
        if self.generation_batch_size is not None or self.steps_per_generation is not None:
            p.append(f"{asked} weighs a step's tokens in its own loss's forward: leave grpo.generation_batch_size "
                     "and grpo.steps_per_generation unset")
        if self.extra.get("num_iterations", 1) != 1:
            p.append(f"{asked} learns once from each generation: grpo.extra.num_iterations must be 1")
        return p
