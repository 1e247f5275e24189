"""`grpo.generation_device`: the sampler in a process of its own, on a device of its own.

    salon train CONFIG.yaml --set grpo.generation_device=cuda:1 grpo.max_staleness=1          # two cards
    salon train train/configs/smoke.yaml --set grpo.generation_device=cpu grpo.max_staleness=1   # on a CPU

    sampler = ProcessSampler("cuda:1")          # what salon.train.engine.choice.generation_engine makes
    sampler.refresh(trainer)                    # the process's weights = the trainer's now
    out = sampler.generate(prompts, trainer)    # {"prompt_ids", "completion_ids", "logprobs", "metrics"}
    sampler.close()                             # the process ends (the overlapped rollout's close calls it)

The calls are TransformersSampler's, so the overlapped rollout (salon.train.engine.overlap) drives either: with
`grpo.max_staleness: 1` the other card decodes step n+1 while this one judges and updates step n. Why so:

- A spawned process (a forked child of a process that has touched CUDA cannot use CUDA) serves one request
  at a time over a pipe; a lock in the parent keeps the trainer's thread (refresh) and the engine's thread
  (generate) from interleaving on it.
- The policy is rebuilt there from the trainer's unwrapped model: the base model from its config, the same
  LoRA (peft's get_peft_model with the trainer's LoraConfig), then every parameter and buffer loaded from the
  trainer's, in the trainer's dtypes. The same modules on the same weights give the same numbers.
- Weights travel through shared host memory, packed into one shared buffer (one file descriptor however many
  tensors), the child copying them onto its device: one path for a CPU child and a CUDA one. CUDA IPC would
  skip the host but put both cards' contexts in both processes; nothing is measured yet to ask for it. The
  frozen weights travel once, in buffers of at most 1 GiB; the trainable ones (the LoRA; every parameter of a
  full fine-tune) keep a shared buffer of their own, and a refresh copies only them.
- Log-probs are TRL's: the child puts TRL's fused LM head (add_fused_lm_head, at the sampling temperature) on
  its model and runs the pass of GRPOTrainer._get_per_token_logps_and_entropies, per_device_train_batch_size
  rows at a time under the trainer's autocast: an importance weight is 1 where the weights did not change.
- Sampling is TRL's GenerationConfig on prompts padded as TRL pads them, cut after the first EOS; each call is
  seeded from the trainer's seed and a count of calls (a run repeats; its samples are not one process's).
- A CPU child takes half the threads: with both processes on all of two cores, OpenMP threads waiting on each
  other made 10 tokens take 2 to 17 s instead of 0.3.

An exception in the child comes back as GenerationProcessError with its traceback, and the child serves on; a
child that died is an error saying so and what to do.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
import traceback
import weakref

import torch

from salon.pool.errors import ConfigError
from salon.train.engine.generation import cut_after_eos, tokenize

CHUNK_BYTES = 1 << 30  # the frozen weights travel in shared buffers of at most this much
ALIGN = 64  # each tensor's offset in a shared buffer: a multiple of every dtype's size


class GenerationProcessError(RuntimeError):
    """What went wrong in the generation process (its traceback included), or that it is gone."""


# ---- shared buffers: many tensors in one ----------------------------------------------------------


def packed(named: list[tuple[str, torch.Tensor]]) -> tuple[torch.Tensor, list[tuple]]:
    """One shared uint8 buffer holding the tensors, and where each lies: (name, offset, dtype, shape)."""
    layout, size = [], 0
    for name, t in named:
        layout.append((name, size, t.dtype, tuple(t.shape)))
        size += -(-t.numel() * t.element_size() // ALIGN) * ALIGN
    flat = torch.empty(max(size, 1), dtype=torch.uint8).share_memory_()
    with torch.no_grad():
        for (_, *where), (_, t) in zip(layout, named):
            view(flat, *where).copy_(t)
    return flat, layout


def view(flat: torch.Tensor, offset: int, dtype: torch.dtype, shape: tuple) -> torch.Tensor:
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    return flat[offset:offset + nbytes].view(dtype).view(shape)


def chunks(named: list[tuple[str, torch.Tensor]], limit: int):
    """The tensors in groups of at most `limit` bytes (a larger tensor alone)."""
    group, size = [], 0
    for name, t in named:
        if group and size + t.numel() * t.element_size() > limit:
            yield group
            group, size = [], 0
        group.append((name, t))
        size += t.numel() * t.element_size()
    if group:
        yield group


# ---- the parent's side ----------------------------------------------------------------------------


class ProcessSampler:
    """TransformersSampler's refresh and generate, served by a process of its own on `device` (module doc)."""

    def __init__(self, device: str):
        self.device = device
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
        completions, logprobs = self._request("generate", prompt_ids, self._settings(trainer))
        seconds = time.perf_counter() - t0
        metrics = {"seconds": seconds, "tokens_per_s": sum(map(len, completions)) / max(seconds, 1e-9)}
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
        self.process = self.conn = self.built_for = None
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
            self.process = context.Process(target=serve, args=(theirs, self.device), daemon=True,
                                           name="salon-generation")
            self.process.start()
            theirs.close()
        self._request("build", spec)
        for group in chunks(frozen, CHUNK_BYTES):  # once: only the trainable tensors change
            self._request("load", *packed(group))
        flat, layout = packed(trainable)
        self._request("stage", flat, layout)
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


# ---- the child's side -----------------------------------------------------------------------------


def serve(conn, device: str) -> None:
    """The generation process: answer requests until `stop` or the parent goes away."""
    worker = Worker(torch.device(device))
    if worker.device.type == "cpu":  # the training process's cores: half of them (module doc)
        torch.set_num_threads(max(1, torch.get_num_threads() // 2))
    ops = {"build": worker.build, "load": worker.load, "stage": worker.stage, "refresh": worker.refresh,
           "generate": worker.generate, "score": worker.score}
    while True:
        try:
            op, args = conn.recv()
        except (EOFError, OSError):  # the training process is gone
            op = "stop"
        if op == "stop":
            sys.stdout.flush(), sys.stderr.flush()
            os._exit(0)  # nothing to tear down that the exit does not free; an interpreter's teardown took 3 s
        try:
            answer = ("ok", ops[op](*args))
        except Exception as e:  # it goes back to the parent, which raises it; this process serves on
            answer = ("error", f"{type(e).__name__}: {e}", traceback.format_exc())
        conn.send(answer)


class Worker:
    """The generation process's model and what it does with it."""

    def __init__(self, device: torch.device):
        self.device, self.model, self.temperature = device, None, None
        self.staged: list[tuple[torch.Tensor, torch.Tensor]] = []  # (shared view, the model's tensor)
        self.loaded: set[str] = set()

    def tensors(self) -> dict[str, torch.Tensor]:
        return dict(self.model.named_parameters()) | dict(self.model.named_buffers())

    def build(self, spec: dict) -> None:
        from transformers import AutoModelForCausalLM

        importlib.import_module("trl.trainer.utils")  # here, not in the first generate: it takes seconds

        self.model = self.temperature = None  # an earlier trainer's model goes first
        with torch.device(self.device):
            model = AutoModelForCausalLM.from_config(spec["config"], dtype=spec["dtype"])
            if spec["peft_config"] is not None:
                from peft import get_peft_model

                model = get_peft_model(model, spec["peft_config"], adapter_name=spec["adapter"])
        self.model = model.eval().requires_grad_(False)
        self.staged, self.loaded = [], set()

    def load(self, flat: torch.Tensor, layout: list[tuple]) -> None:
        """Copy each tensor of a shared buffer into the model, in the trainer's dtype."""
        own = self.tensors()
        for name, *where in layout:
            if name not in own:
                raise KeyError(f"the trainer's {name} has no counterpart in the rebuilt policy")
            source, target = view(flat, *where), own[name]
            if target.dtype != source.dtype or target.shape != source.shape:
                target.data = torch.empty_like(source, device=self.device)
            target.data.copy_(source)
            self.loaded.add(name)

    def stage(self, flat: torch.Tensor, layout: list[tuple]) -> None:
        """Load the trainable tensors and keep their shared buffer: each refresh copies from it."""
        self.load(flat, layout)
        missing = sorted(set(self.tensors()) - self.loaded)
        if missing:
            raise KeyError(f"the rebuilt policy has tensors the trainer did not send: {missing[:5]}")
        own = self.tensors()
        self.staged = [(view(flat, *where), own[name]) for name, *where in layout]

    def refresh(self) -> None:
        with torch.no_grad():
            for shared, target in self.staged:
                target.copy_(shared)
        if self.device.type == "cuda":  # done before the parent writes the shared buffer again
            torch.cuda.synchronize(self.device)

    def generate(self, prompt_ids: list[list[int]], s: dict) -> tuple[list[list[int]], list[list[float]]]:
        torch.manual_seed(s["seed"])
        ids, mask = self._padded(prompt_ids, s["pad_id"], "left", s["pad_to_multiple_of"])
        with torch.no_grad():
            made = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=s["generation_config"])
        completions = cut_after_eos(made[:, ids.size(1):], s["eos_ids"])
        return completions, self._logprobs(ids, mask, completions, s)

    def score(self, prompt_ids: list[list[int]], completions: list[list[int]], s: dict) -> list[list[float]]:
        return self._logprobs(*self._padded(prompt_ids, s["pad_id"], "left", s["pad_to_multiple_of"]), completions, s)

    def _padded(self, rows: list[list[int]], pad_id: int, side: str, multiple: int | None = None):
        """Ids and attention mask on the device, padded as TRL pads prompts (left) and completions (right)."""
        from trl.trainer.utils import pad

        rows = [torch.tensor(r, dtype=torch.long) for r in rows]
        ids = pad(rows, padding_value=pad_id, padding_side=side, pad_to_multiple_of=multiple)
        mask = pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side=side, pad_to_multiple_of=multiple)
        return ids.to(self.device), mask.to(self.device)

    def _logprobs(self, ids: torch.Tensor, mask: torch.Tensor, completions: list[list[int]],
                  s: dict) -> list[list[float]]:
        """TRL's log-prob pass (GRPOTrainer._get_per_token_logps_and_entropies) on prompt + completion."""
        from trl.trainer.utils import add_fused_lm_head

        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        if self.temperature != s["temperature"]:
            vars(base).pop("forward", None)  # an earlier temperature's head: back to the class's forward
            add_fused_lm_head(base, temperature=s["temperature"], cast_lm_head_to_fp32=s["cast_lm_head_to_fp32"])
            self.temperature = s["temperature"]
        tail, tail_mask = self._padded(completions, s["pad_id"], "right")
        every, every_mask, keep = torch.cat([ids, tail], 1), torch.cat([mask, tail_mask], 1), tail.size(1)
        step, out = s["batch_size"], []
        autocast = torch.autocast(self.device.type, dtype=s["autocast"], enabled=s["autocast"] is not None)
        with torch.no_grad(), autocast:
            for start in range(0, every.size(0), step):
                chunk, chunk_mask = every[start:start + step], every_mask[start:start + step]
                labels = chunk.masked_fill(chunk_mask == 0, -100)
                labels[:, :-keep] = -100  # only the completion's tokens are scored, as TRL scores them
                out.append(self.model(input_ids=chunk, attention_mask=chunk_mask, labels=labels,
                                      fused_lm_head=True).log_probs[:, -keep:])
        logps = torch.cat(out).float().cpu()
        return [logps[i, :len(c)].tolist() for i, c in enumerate(completions)]
