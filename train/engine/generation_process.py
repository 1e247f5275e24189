"""What runs in the generation process of `grpo.generation_device` (the training process's side, and why a
process: salon.train.engine.sampler_process). It serves one request at a time from its pipe:

    build(spec)                  the policy rebuilt from the trainer's config (and LoRA), on this device
    load(flat, layout)           frozen weights from a shared buffer (salon.train.engine.shared_buffers)
    stage(flat, layout)          the trainable weights, their shared buffer kept; answers where it all lies
    refresh()                    the trainable weights copied from that buffer (the trainer wrote them)
    generate(prompt_ids, s)      completions, each token's log-prob, metrics
    score(prompt_ids, done, s)   each given completion token's log-prob under the weights held now

Two engines serve these requests:

- `Worker`: TRL's transformers generate on the rebuilt peft model, then TRL's log-prob pass on it (the fused
  LM head at the sampling temperature, per_device_train_batch_size rows at a time under the trainer's
  autocast), so an importance weight is 1 where the weights did not change.
- `CompiledWorker` (`grpo.generation: compiled`): the compiled engine's own pieces (salon.train.engine.
  generation): a merged copy of the rebuilt peft model (LoRA folded in) and a StaticDecoder on it, with the
  config's compile, prompt bucket, attention and fused linears. A refresh loads the new LoRA into the peft
  model and re-folds the copy in place (`MergedPolicy.refresh`: what the engine does in the training process,
  and nothing more). A generation is the decoder's completions cut after EOS with the log-probs it recorded
  while sampling: no second pass. The process holds the base weights twice, the peft model's and the copy's.

On CUDA the process makes its device the current one before anything else: compiled steps, CUDA graphs and
Triton kernels then run where the model is, and no CUDA context opens on the trainer's card. A CPU process
takes half the threads: with both processes on all of two cores, OpenMP threads waiting on each other made 10
tokens take 2 to 17 s instead of 0.3.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback

import torch

from salon.train.engine.generation import cut_after_eos
from salon.train.engine.shared_buffers import view


def serve(conn, device: str, compiled: dict | None = None) -> None:
    """The generation process: answer requests until `stop` or the parent goes away. `compiled`: the
    compiled engine's settings (merged_decoder's compile, prompt_bucket, attention, fuse_linears, fp8_weights,
    fp8_cache), or None for TRL's generate."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    elif device.type == "cpu":  # the training process's cores: half of them
        torch.set_num_threads(max(1, torch.get_num_threads() // 2))
    worker = Worker(device) if compiled is None else CompiledWorker(device, compiled)
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
    """The generation process's model and what it does with it: TRL's generate and log-prob pass."""

    engine = "transformers"

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

    def stage(self, flat: torch.Tensor, layout: list[tuple]) -> dict:
        """Load the trainable tensors and keep their shared buffer: each refresh copies from it. Answers where
        the policy lies (`placement`)."""
        self._stage(flat, layout)
        return self.placement()

    def _stage(self, flat: torch.Tensor, layout: list[tuple]) -> None:
        self.load(flat, layout)
        missing = sorted(set(self.tensors()) - self.loaded)
        if missing:
            raise KeyError(f"the rebuilt policy has tensors the trainer did not send: {missing[:5]}")
        own = self.tensors()
        self.staged = [(view(flat, *where), own[name]) for name, *where in layout]

    def placement(self) -> dict:
        """Where the weights that sample lie, read from the weights themselves, and which engine samples."""
        return {"device": str(next(self.model.parameters()).device), "engine": self.engine, "pid": os.getpid()}

    def refresh(self) -> None:
        self._load_staged()
        self._synchronize()

    def _load_staged(self) -> None:
        with torch.no_grad():
            for shared, target in self.staged:
                target.copy_(shared)

    def _synchronize(self) -> None:
        if self.device.type == "cuda":  # done before the parent writes the shared buffer again
            torch.cuda.synchronize(self.device)

    def generate(self, prompt_ids: list[list[int]], s: dict) -> tuple[list[list[int]], list[list[float]], dict]:
        torch.manual_seed(s["seed"])
        ids, mask = self._padded(prompt_ids, s["pad_id"], "left", s["pad_to_multiple_of"])
        with torch.no_grad():
            made = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=s["generation_config"])
        completions = cut_after_eos(made[:, ids.size(1):], s["eos_ids"])
        return completions, self._logprobs(ids, mask, completions, s), {}

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


class CompiledWorker(Worker):
    """The compiled engine in the generation process (module doc): the peft policy as Worker rebuilds it is
    only read, by the merged copy's refresh; the copy and its decoder sample."""

    engine = "compiled"

    def __init__(self, device: torch.device, settings: dict):
        super().__init__(device)
        self.settings = settings  # salon.train.engine.generation.merged_decoder's keywords
        self.policy = self.decoder = None

    def build(self, spec: dict) -> None:
        if spec["peft_config"] is None:  # the training process refuses it first; a direct caller learns here
            raise ValueError("grpo.generation=compiled samples from a merged copy of a LoRA policy: enable lora")
        self.policy = self.decoder = None  # an earlier trainer's copy and caches go first
        super().build(spec)

    def stage(self, flat: torch.Tensor, layout: list[tuple]) -> dict:
        from salon.train.engine.generation import merged_decoder

        self._stage(flat, layout)  # every weight is in: the copy folds them now
        self.policy, self.decoder = merged_decoder(self.model, **self.settings)
        return self.placement()

    def placement(self) -> dict:
        return {**super().placement(), "device": str(self.policy.device), "compile": self.decoder.compile,
                "attention": self.decoder.attention, "fused_groups": self.policy.fused_groups,
                "copy_gib": self.policy.nbytes / 2**30}

    def refresh(self) -> None:
        self._load_staged()
        self.policy.refresh()  # the new LoRA folded into the copy the decoder reads, in place
        self._synchronize()

    def generate(self, prompt_ids: list[list[int]], s: dict) -> tuple[list[list[int]], list[list[float]], dict]:
        from salon.train.engine.generation import sample_merged

        torch.manual_seed(s["seed"])
        out = sample_merged(self.policy, self.decoder, prompt_ids, s["generation_config"], s["eos_ids"])
        return out["completion_ids"], out["logprobs"], out["metrics"]

    def score(self, prompt_ids: list[list[int]], completions: list[list[int]], s: dict) -> list[list[float]]:
        """The merged copy's log-probs of given completions at the sampling temperature, as TRL's pass computes
        them (logits / temperature, no top-k or top-p): what the decoder records for the tokens it samples."""
        ids, mask = self._padded(prompt_ids, s["pad_id"], "left", s["pad_to_multiple_of"])
        tail, tail_mask = self._padded(completions, s["pad_id"], "right")
        every, every_mask, keep = torch.cat([ids, tail], 1), torch.cat([mask, tail_mask], 1), tail.size(1)
        step, out = s["batch_size"], []
        with torch.no_grad():
            for start in range(0, every.size(0), step):
                rows = slice(start, start + step)
                logits = self.policy.model(input_ids=every[rows], attention_mask=every_mask[rows],
                                           logits_to_keep=keep + 1).logits[:, :-1].float() / s["temperature"]
                out.append(logits.log_softmax(-1).gather(-1, tail[rows, :, None])[..., 0])
        logps = torch.cat(out).cpu()
        return [logps[i, :len(c)].tolist() for i, c in enumerate(completions)]
