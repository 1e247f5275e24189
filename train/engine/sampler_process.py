"""`grpo.generation_device`: the sampler in a process of its own, on a device of its own.

    salon train train/configs/lora_2gpu_64.yaml                # two cards: the compiled engine on cuda:1
    salon train CONFIG.yaml --set grpo.generation_device=cuda:1 grpo.max_staleness=1          # TRL's generate there
    salon train train/configs/smoke.yaml --set grpo.generation_device=cpu grpo.max_staleness=1   # on a CPU

    sampler = ProcessSampler("cuda:1", compiled=None)  # what salon.train.engine.choice.generation_engine makes
    sampler.refresh(trainer)                    # the process's weights = the trainer's now
    out = sampler.generate(prompts, trainer)    # {"prompt_ids", "completion_ids", "logprobs", "metrics"}
    sampler.placement                           # where the process's weights lie, which engine samples
    sampler.close()                             # the process ends (the overlapped rollout's close calls it)

The calls are TransformersSampler's and CompiledGeneration's, so the overlapped rollout (salon.train.engine.
overlap) drives it: with `grpo.max_staleness: 1` the other card decodes step n+1 while this one judges and
updates step n. What runs in the process is salon.train.engine.generation_process: TRL's generate and TRL's
log-prob pass, or with `compiled` (the settings of salon.train.engine.generation.merged_decoder) the compiled
engine: a merged copy of the policy and its static decoder, the log-probs those it records while sampling.
Why so:

- A spawned process (a forked child of a process that has touched CUDA cannot use CUDA) serves one request
  at a time over a pipe; a lock in the parent keeps the trainer's thread (refresh) and the engine's thread
  (generate) from interleaving on it.
- A refresh never interrupts a decode, and a decode stops for the weights only while they are copied: the
  overlapped rollout refreshes in the trainer's thread only between generations (after it has taken the
  generation running ahead, before it starts the next), so a refresh finds the process idle, and the next
  generation starts as soon as the copy is done (the trainer's trainable tensors into the shared buffer, then,
  in the process, into its model; the compiled engine also re-folds its merged copy).
- The policy is rebuilt there from the trainer's unwrapped model: the base model from its config, the same
  LoRA (peft's get_peft_model with the trainer's LoraConfig), then every parameter and buffer loaded from the
  trainer's, in the trainer's dtypes. The same modules on the same weights give the same numbers.
- Weights travel through shared host memory, packed into one shared buffer (salon.train.engine.shared_buffers),
  the process copying them onto its device: one path for a CPU process and a CUDA one. CUDA IPC would skip
  the host but put both cards' contexts in both processes; nothing is measured yet to ask for it. The frozen
  weights travel once, in buffers of at most 1 GiB; the trainable ones (the LoRA; every parameter of a full
  fine-tune) keep a shared buffer of their own, and a refresh copies only them.
- Each generation is seeded from the trainer's seed and a count of calls (a run repeats; its samples are not
  one process's).
- The process's device may not be the trainer's card: two CUDA contexts and two copies of the policy on one
  card, for nothing. Refused here where the trainer's device is known, in the config where it can be told.

An exception in the process comes back as GenerationProcessError with its traceback, and the process serves
on; a process that died is an error saying so and what to do.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref

import torch

from salon.pool.errors import ConfigError
from salon.train.engine.generation import compiled_problems, tokenize
from salon.train.engine.generation_process import serve
from salon.train.engine.shared_buffers import chunks, packed, view

CHUNK_BYTES = 1 << 30  # the frozen weights travel in shared buffers of at most this much

log = logging.getLogger(__name__)


class GenerationProcessError(RuntimeError):
    """What went wrong in the generation process (its traceback included), or that it is gone."""


class ProcessSampler:
    """A sampler's refresh and generate, served by a process of its own on `device` (module doc): TRL's generate,
    or with `compiled` (merged_decoder's compile, prompt_bucket, attention, fuse_linears, fp8_weights, fp8_cache)
    the compiled engine."""

    def __init__(self, device: str, compiled: dict | None = None):
        self.device, self.compiled = device, compiled
        self.placement: dict | None = None  # what the process answered when it staged the weights
        self.process = self.conn = None
        self.lock = threading.Lock()
        self.built_for = None  # a weak reference to the trainer whose model the child holds
        self.pairs: list[tuple[torch.Tensor, torch.Tensor]] = []  # (shared view, the trainer's tensor)
        self.refreshed_at: int | None = None
        self.refresh_s: float | None = None
        self.calls = 0

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def refresh(self, trainer) -> None:
        built = self.built_for is not None and self.built_for() is trainer
        if built and trainer.state.global_step == self.refreshed_at:
            return
        t0 = time.perf_counter()
        if not built:
            self._build(trainer)
        with torch.no_grad():
            for shared, tensor in self.pairs:
                shared.copy_(tensor)
        self._request("refresh")
        self.refreshed_at, self.refresh_s = trainer.state.global_step, time.perf_counter() - t0

    def generate(self, prompts: list, trainer) -> dict:
        t0 = time.perf_counter()
        prompt_ids = tokenize(prompts, trainer)
        self.calls += 1
        completions, logprobs, theirs = self._request("generate", prompt_ids, self._settings(trainer))
        seconds = time.perf_counter() - t0
        metrics = {"seconds": seconds, "tokens_per_s": sum(map(len, completions)) / max(seconds, 1e-9)}
        # the compiled engine's own figures (its rate, its shapes...; its decode's time as decode_s): "seconds"
        # stays the whole call's, what the overlapped rollout counts as the generation's time
        metrics |= {("decode_s" if name == "seconds" else name): value for name, value in theirs.items()}
        if self.refresh_s is not None:
            metrics["refresh_s"], self.refresh_s = self.refresh_s, None
        return {"prompt_ids": prompt_ids, "completion_ids": completions, "logprobs": logprobs, "metrics": metrics}

    def score(self, prompt_ids: list[list[int]], completions: list[list[int]], trainer) -> list[list[float]]:
        """Each completion token's log-prob under the process's weights (what generate records)."""
        return self._request("score", prompt_ids, completions, self._settings(trainer))

    def close(self) -> None:
        if self.process is None:
            return
        with self.lock:
            try:
                self.conn.send(("stop", ()))
            except OSError:  # it had died
                pass
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=10)
        self.conn.close()
        self.process = self.conn = self.built_for = self.placement = None
        self.pairs = []

    # ---- internals -------------------------------------------------------------------------------
    def _build(self, trainer) -> None:
        trained = trainer.accelerator.unwrap_model(trainer.model)
        adapter = getattr(trained, "active_adapter", None) if hasattr(trained, "get_base_model") else None
        base = trained.get_base_model() if adapter is not None else trained
        if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled or trainer.accelerator.num_processes > 1 \
                or getattr(base, "hf_quantizer", None) is not None:
            raise ConfigError([f"grpo.generation_device={self.device!r} rebuilds the policy from its config in one "
                               "process: one training process, no DeepSpeed or FSDP sharding, no quantized base "
                               "(leave generation_device null)"], "salon train")
        if self.compiled is not None and compiled_problems(trainer):
            raise ConfigError(compiled_problems(trainer), "salon train")
        if same_card(self.device, trainer.accelerator.device):
            raise ConfigError([f"grpo.generation_device={self.device!r} is the card the trainer runs on "
                               f"({trainer.accelerator.device}): name another card, or leave generation_device "
                               "null to generate in the training process"], "salon train")
        named = [*trained.named_parameters(), *trained.named_buffers()]
        trainable = [(n, t.detach()) for n, t in named if t.requires_grad]
        frozen = [(n, t.detach()) for n, t in named if not t.requires_grad]
        spec = {"config": base.config, "dtype": next((t.dtype for _, t in frozen), torch.float32),
                "peft_config": trained.peft_config[adapter] if adapter is not None else None, "adapter": adapter}
        if self.process is None:
            import torch.multiprocessing as mp

            context = mp.get_context("spawn")
            self.conn, theirs = context.Pipe()
            # daemonic: it ends with the training process, however that one ends
            self.process = context.Process(target=serve, args=(theirs, self.device, self.compiled), daemon=True,
                                           name="salon-generation")
            self.process.start()
            theirs.close()
        self._request("build", spec)
        for group in chunks(frozen, CHUNK_BYTES):  # once: only the trainable tensors change
            self._request("load", *packed(group))
        flat, layout = packed(trainable)
        self.placement = self._request("stage", flat, layout)
        log.info("generation process %d: %s on %s", self.process.pid, self.placement["engine"],
                 self.placement["device"])
        self.pairs = [(view(flat, *where), t) for (_, *where), (_, t) in zip(layout, trainable)]
        self.built_for, self.refreshed_at = weakref.ref(trainer), None

    def _settings(self, trainer) -> dict:
        autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(str(trainer.accelerator.mixed_precision))
        return {"generation_config": trainer.generation_config, "eos_ids": list(trainer.eos_token_ids),
                "pad_id": trainer._tokenizer.pad_token_id, "pad_to_multiple_of": trainer.pad_to_multiple_of,
                "temperature": trainer.temperature, "batch_size": trainer.args.per_device_train_batch_size,
                "cast_lm_head_to_fp32": trainer.args.cast_lm_head_to_fp32, "autocast": autocast,
                "seed": trainer.args.seed * 1_000_003 + self.calls}

    def _request(self, op: str, *args):
        if self.process is None:
            raise GenerationProcessError(f"the generation process on {self.device} was closed (or never started: "
                                         "refresh the sampler first)")
        with self.lock:
            try:
                self.conn.send((op, args))
                while not self.conn.poll(1.0):  # a dead child never answers: look at it each second
                    if not self.process.is_alive():
                        raise EOFError
                answer = self.conn.recv()
            except (EOFError, OSError):
                self.process.join(timeout=5)
                raise GenerationProcessError(
                    f"the generation process on {self.device} (pid {self.process.pid}) ended during {op!r}, exit "
                    f"code {self.process.exitcode} (-9: killed, often for host memory; its own messages are above "
                    "in this log). Run again, from the last checkpoint with --set resume=latest; or generate in "
                    "the training process with grpo.generation_device=null") from None
        if answer[0] == "error":
            raise GenerationProcessError(f"{answer[1]} (in the generation process on {self.device}; its traceback:)"
                                         f"\n{answer[2]}")
        return answer[1]


def same_card(device: str, trainer_device: torch.device) -> bool:
    """Whether `device` is the CUDA card the trainer runs on ("cuda" is the current card)."""
    mine, theirs = torch.device(device), torch.device(trainer_device)
    if mine.type != "cuda" or theirs.type != "cuda":
        return False
    # the current card only where an index is missing (the trainer's process uses CUDA already: no new context)
    indices = [torch.cuda.current_device() if d.index is None else d.index for d in (mine, theirs)]
    return indices[0] == indices[1]
