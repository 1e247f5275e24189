"""`grpo.generation: transformers` as the overlapped rollout drives it: TRL's own generate call, from the
trained model itself (synchronous) or from a copy of it (`grpo.max_staleness: 1`), with each token's log-prob.

    sampler = TransformersSampler(copy=True)
    sampler.refresh(trainer)                    # the copy = the trainer's weights now (nothing generating)
    out = sampler.generate(prompts, trainer)    # {"prompt_ids", "completion_ids", "logprobs", "metrics"}

`generate` is TRL 1.16's transformers path step for step (GRPOTrainer._generate_single_turn): the prompts
tokenized as TRL tokenizes them, left-padded to `pad_to_multiple_of`, `unwrap_model_for_generation` with the
trainer's generation kwargs, `generate` with its GenerationConfig, completions cut after their first EOS.
On the same weights and random state it makes TRL's completions token for token (tests/test_train_overlap.py).

The log-probs are TRL's own log-prob pass (`_get_per_token_logps_and_entropies`, temperature included) run on
the sampler's model right after generating: the same computation that gives the loss its "old" log-probs, so
an importance weight is exactly 1 where the weights did not change. `output_logits` would save the pass but
holds batch x vocabulary x tokens floats (20 GB for 8 x 4,096 tokens of a 152k vocabulary).

The copy is a deep copy of the unwrapped model (the LoRA, if any, with it), refreshed by copying every
parameter and buffer in place. Without a copy (`copy=False`) the sampler reads the trained model: only
for a loop that generates while nothing updates.
"""

from __future__ import annotations

import copy as copying
import time

import torch

from salon.pool.errors import ConfigError
from salon.train.engine.generation import cut_after_eos, tokenize


class TransformersSampler:
    """Completions and their log-probs from TRL's transformers generate (see the module doc)."""

    def __init__(self, copy: bool):
        self.copy = copy
        self.model = None  # the copy, built at the first refresh
        self.pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.refreshed_at: int | None = None
        self.refresh_s: float | None = None

    def refresh(self, trainer) -> None:
        if not self.copy or trainer.state.global_step == self.refreshed_at and self.model is not None:
            return
        t0 = time.perf_counter()
        if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:
            raise ConfigError(["grpo.max_staleness 1 or 2 samples from a whole copy of the policy: not with DeepSpeed or "
                               "FSDP sharding (use grpo.max_staleness=0)"], "salon train")
        trained = trainer.accelerator.unwrap_model(trainer.model)
        with torch.no_grad():
            if self.model is None:
                self.model = copying.deepcopy(trained).eval().requires_grad_(False)
                mine = dict(self.model.named_parameters()) | dict(self.model.named_buffers())
                theirs = dict(trained.named_parameters()) | dict(trained.named_buffers())
                self.pairs = [(mine[name], theirs[name]) for name in mine]
            else:
                for dst, src in self.pairs:
                    dst.copy_(src)
        self.refreshed_at = trainer.state.global_step
        self.refresh_s = time.perf_counter() - t0

    def generate(self, prompts: list, trainer) -> dict:
        from trl.models import unwrap_model_for_generation
        from trl.trainer.utils import pad

        t0 = time.perf_counter()
        prompt_ids = tokenize(prompts, trainer)
        device = trainer.accelerator.device
        rows = [torch.tensor(ids) for ids in prompt_ids]
        pad_id, multiple = trainer._tokenizer.pad_token_id, trainer.pad_to_multiple_of
        ids = pad(rows, padding_value=pad_id, padding_side="left", pad_to_multiple_of=multiple).to(device)
        mask = pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side="left",
                   pad_to_multiple_of=multiple).to(device)
        source = self.model if self.copy else trainer.model_wrapped
        with (unwrap_model_for_generation(source, trainer.accelerator,
                                          gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                                          generation_kwargs=trainer.generation_kwargs,
                                          gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs)
              as model, torch.no_grad()):
            made = model.generate(input_ids=ids, attention_mask=mask, generation_config=trainer.generation_config)
            completions = cut_after_eos(made[:, ids.size(1):], trainer.eos_token_ids)
            logprobs = sampler_logprobs(trainer, model, ids, mask, completions, pad_id)
        seconds = time.perf_counter() - t0
        tokens = sum(len(c) for c in completions)
        metrics = {"seconds": seconds, "tokens_per_s": tokens / max(seconds, 1e-9)}
        if self.refresh_s is not None:
            metrics["refresh_s"], self.refresh_s = self.refresh_s, None
        return {"prompt_ids": prompt_ids, "completion_ids": completions, "logprobs": logprobs, "metrics": metrics}


def sampler_logprobs(trainer, model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                     completions: list[list[int]], pad_id: int) -> list[list[float]]:
    """Each completion token's log-prob under `model`, by TRL's log-prob pass (as its loss computes them)."""
    from trl.trainer.utils import pad

    device = prompt_ids.device
    rows = [torch.tensor(c, dtype=torch.long) for c in completions]
    ids = pad(rows, padding_value=pad_id, padding_side="right").to(device)
    mask = pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side="right").to(device)
    logps, _, _ = trainer._get_per_token_logps_and_entropies(
        model, torch.cat([prompt_ids, ids], 1), torch.cat([prompt_mask, mask], 1), ids.size(1),
        batch_size=trainer.args.per_device_train_batch_size)
    logps = logps.float().cpu()
    return [logps[i, :len(c)].tolist() for i, c in enumerate(completions)]
