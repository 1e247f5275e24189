"""`grpo.generation: compiled`: GRPO's completions sampled from a merged copy of the policy, with a
static KV cache and CUDA graphs.

    salon train train/configs/lora_1gpu.yaml                      # grpo.generation=auto: this engine on CUDA
    salon train CONFIG.yaml --set grpo.generation=compiled grpo.generation_compile=off   # same path, no compile

    engine = CompiledGeneration(compile="auto", prompt_bucket=256)
    trainer = GRPOTrainer(..., rollout_func=engine)               # TRL calls engine(prompts, trainer)
    engine.attach(trainer)                                        # builds the copy now: refuses if it cannot fit

TRL's transformers path decodes through the peft model, every adapted linear adding its own small
kernels, and builds its `GenerationConfig(disable_compile=True)`: about 2 % of an H200's bandwidth
bound (shared/reference/generation-speed.md). This engine owns that path instead:

1. `MergedPolicy`: a separate plain transformers model holding base + scale * B @ A for every LoRA
   linear (computed in fp32, stored in the base weights' dtype), or, for a policy trained whole (no
   LoRA), a copy of its weights. `refresh()` writes it in place
   with `copy_`; the engine refreshes whenever the trainer's global step moved since the last
   refresh, i.e. after each optimiser step that a generation follows (TRL's vLLM path syncs the
   same way). The trained weights are only read: merging and unmerging into them would add bf16
   rounding to the base weights at every step. In-place copies keep every tensor's address, so a
   captured CUDA graph stays valid. With `grpo.generation_fuse_linears` each layer's q/k/v and gate/up
   are one product each, their weights views into one stacked tensor (fused_linears.py). With
   `grpo.generation_weights: fp8` the decoder layers' products read float8 rows made from those weights at
   each refresh (fp8_linears.py).
2. `StaticDecoder` (decode.py): a `StaticCache` (with `grpo.generation_kv_cache: fp8`, float8 rows and their
   scales: fp8_cache.py) the decoder owns (allocated once per shape, reset
   in place) and one compiled function per decode step, forward, warpers, sampling and EOS
   bookkeeping together (torch.compile, mode reduce-overhead: one CUDA graph replay per token),
   with attention that reads the KV heads as cached instead of repeating them per query head
   (`grpo.generation_attention: buckets` reads the cache up to the filled positions rounded up to
   a multiple of 256, one compiled step per length; `filled` reads only the filled positions, a
   group's prompt positions once for the group: faster than the whole cache at batch 64 on an H200 and,
   in the trainer, at batch 8 on an H100, decode_attention.py, docs/training.md's generation engines; `auto`, the
   default, reads the filled positions in calls of 8 rows or more and the whole cache below).
   Prompts are left-padded to a multiple of `prompt_bucket` tokens, so shapes repeat across steps.
3. Sampling is TRL's `GenerationConfig` (temperature, top-p, top-k, EOS ids, max_completion_length)
   with generate's own warpers and sampling rule (decode.py says how it is the same), on the
   policy's logits up to the rounding of the merge; settings the loop does not implement
   (repetition penalty, min-p, ...) run through transformers' `generate` on the copy instead.
   Completions are cut after their first EOS as TRL's transformers path cuts them, and TRL pads them.
   With `grpo.generation_waves` N the batch is generated in N waves of whole groups, and `on_wave`
   (the recipe's `reward.prefetching_generated`) starts rendering each wave but the last at once.
   With `grpo.update_per_group` the first call of an optimiser step generates every micro-batch the
   Trainer fetched for it (`ahead`, salon.train.update.update_per_group) in one batch, `on_step` starts
   rendering them all, and each later call hands TRL its micro-batch's completions. A row that ends
   (EOS) while others decode goes to `on_finished` (the recipe's `reward.prefetching_generated`) at the
   loop's next check, so its painting renders during the rest of the decode.
4. The loss is TRL's: it computes its log-probabilities with the trained peft model as always. The
   engine returns each sampled token's log-prob at the sampling temperature (`logprobs`); TRL keeps
   them as `sampling_per_token_logps`, and with `grpo.max_staleness: 1` (salon.train.engine.overlap)
   they are the sampler's side of the importance weight (salon.train.update.stale_correction).
   `generate` reads only the copy, so it may run in a thread of its own while the trainer updates;
   `refresh` is the one place the copy changes.

Compilations. A compiled decode step is specific to (batch, bucket + max_completion_length) and
the sampling settings, which are fixed within a run. With a fixed generation batch a run compiles
once per prompt bucket its prompts fall in: prompts whose lengths span S tokens touch at most
S // prompt_bucket + 2 buckets, so a 200-step run of salon's painting prompts (one subject: one
length) compiles once (about 45 s on an H200 for Qwen3-1.7B), and never more than dynamo's
recompile_limit (8) shapes. Under `generation_attention: buckets` each shape compiles one step per
attended length (max_completion_length / 256 of them), each length a torch.compile with a dynamo
cache of its own (torch 2.14's isolate_recompiles; an older torch raises the limit to hold them). Each call logs
`salon/generation/compiled_graphs` (dynamo graphs compiled so far), `salon/generation/shapes`, `salon/generation/waves` and
`salon/generation/decode_loop` (1 when the loop ran, 0 when transformers' generate did) and, from the
loop, `salon/generation/host_ms_per_step` (the host's own time a decode step, its waits for the card left
out: near the time a step, the host paces the card); a graph
compiled again for a shape and settings already seen is logged as a warning (a guard failed, which
is a bug, not a cost to accept).

Memory. The copy costs the base model's weights once more (3.4 GB for Qwen3-1.7B in bf16), each
cache batch x (bucket + max_completion_length) x layers x 2 x KV heads x head dim x 2 bytes. Both
are checked against the device's free memory before they are allocated; an older shape's cache
is dropped before a new one is refused. What does not fit is refused with what to do.

Why `rollout_func`: it is the GRPOTrainer argument TRL documents for replacing how completions are
made (it takes the process's prompts and the trainer, and returns prompt ids, completion ids and
logprobs); everything after it (decoding the text, rewards, advantages, the loss and its
log-probabilities) stays TRL's. TRL marks it experimental and warns; the recipe filters that one
warning. Replacing the private `_generate_single_turn` would also work, but nothing documents its
signature.

On a card of its own (`grpo.generation_device`): the same pieces, `merged_decoder` and `sample_merged`,
run in a process of their own on a policy rebuilt there (salon.train.engine.generation_process), which
salon.train.engine.sampler_process feeds the trainer's weights after each update.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
from collections import deque

import torch
from transformers import AutoModelForCausalLM

from salon.pool.errors import ConfigError
from salon.train.config_grpo import GENERATION_COMPILE
from salon.train.engine.decode import ATTENTION, GIB, StaticDecoder, check_fits
from salon.train.engine.fp8_linears import quantize_linears, requantize
from salon.train.engine.fused_linears import fuse_sibling_linears
from salon.train.rollout import prompt_key

log = logging.getLogger(__name__)


# ---- the merged copy --------------------------------------------------------------------------------


class MergedPolicy:
    """A plain transformers model equal to `policy` (a peft model with its LoRA folded in, or a model trained
    whole, copied); `refresh()` re-folds or copies it in place. The policy's weights are read, never written."""

    def __init__(self, policy, fuse_linears: bool = False, fp8_weights: bool = False):
        from peft import PeftModel
        from peft.tuners.lora import Linear as LoraLinear
        from peft.tuners.lora import LoraLayer

        lora = isinstance(policy, PeftModel)
        self.adapter = policy.active_adapter if lora else None
        base = policy.get_base_model() if lora else policy
        weights = [p for n, p in base.named_parameters() if ".lora_" not in n]
        self.dtype, self.device = weights[0].dtype, weights[0].device
        self.nbytes = sum(p.numel() * p.element_size() for p in weights)
        # with float8 rows: half the decoder layers' bytes again, at most
        check_fits(self.nbytes * (3 if fp8_weights else 2) // 2, self.device, "a merged copy of the policy")
        with torch.device(self.device):
            # a copy of the config: from_config sets the attention on the object it is given
            self.model = AutoModelForCausalLM.from_config(copy.deepcopy(base.config), dtype=self.dtype,
                                                          attn_implementation=ATTENTION).eval()
        self.model.requires_grad_(False)
        # q/k/v and gate/up as one product each (fused_linears.py); their weights stay by name, as views
        self.fused_groups = fuse_sibling_linears(self.model) if fuse_linears else 0
        # the decoder layers' products read from float8 rows made from the copy's weights (fp8_linears.py)
        self.fp8_products = []
        self.pairs = []  # (copy's tensor, base tensor, LoRA layer whose delta is added, or None)
        for name, dst in [*self.model.named_parameters(), *self.model.named_buffers()]:
            module_name, _, attr = name.rpartition(".")
            src = base.get_submodule(module_name)
            if isinstance(src, LoraLayer):
                if not isinstance(src, LoraLinear) or src.use_dora.get(self.adapter):
                    raise ConfigError([f"grpo.generation=compiled folds plain LoRA on linear layers; {module_name} is "
                                       f"a {type(src).__name__}{' with DoRA' if src.use_dora.get(self.adapter) else ''}:"
                                       " use grpo.generation=transformers"], "salon train")
                self.pairs.append((dst, getattr(src.get_base_layer(), attr), src if attr == "weight" else None))
            else:
                self.pairs.append((dst, getattr(src, attr), None))
        self.refresh()
        if fp8_weights:  # from the folded weights: each refresh makes them again
            self.fp8_products = quantize_linears(self.model)

    @torch.no_grad()
    def refresh(self) -> None:
        for dst, src, lora in self.pairs:
            if lora is None:
                dst.copy_(src)
            else:
                dst.copy_(src.float() + lora.get_delta_weight(self.adapter).float())
        requantize(self.fp8_products)


def cut_after_eos(completions: torch.Tensor, eos_ids: list[int]) -> list[list[int]]:
    """Each row up to and including its first EOS (all of it if none), as TRL's transformers path cuts."""
    is_eos = torch.isin(completions, torch.tensor(eos_ids, device=completions.device))
    first = torch.where(is_eos.any(dim=1), is_eos.int().argmax(dim=1), completions.size(1))
    keep = torch.arange(completions.size(1), device=completions.device)[None, :] <= first[:, None]
    return [row[m].tolist() for row, m in zip(completions.cpu(), keep.cpu())]


# ---- the TRL side -----------------------------------------------------------------------------------


class CompiledGeneration:
    """TRL's `rollout_func` for `grpo.generation: compiled` (see the module doc)."""

    def __init__(self, compile: str = "auto", prompt_bucket: int = 256, compile_config=None, attention: str = "auto",
                 fuse_linears: bool = True, waves: int = 1, fp8_weights: bool = False, fp8_cache: bool = False):
        if compile not in GENERATION_COMPILE:
            raise ConfigError([f"grpo.generation_compile={compile!r}: use {', '.join(GENERATION_COMPILE)}"],
                              "salon train")
        self.compile, self.prompt_bucket, self.compile_config = compile, prompt_bucket, compile_config
        self.attention, self.fuse_linears, self.waves, self.fp8_weights = attention, fuse_linears, waves, fp8_weights
        self.fp8_cache = fp8_cache
        # called with (prompts, completion ids) of each wave but the last, as soon as it is generated
        self.on_wave = None
        # grpo.update_per_group (salon.train.update.update_per_group): the step's micro-batches of prompts, set as
        # the Trainer fetches them; the first call generates them all, and `on_step` gets every completion
        self.ahead: list[list] | None = None
        self.on_step = None
        # called with (prompts, completion ids, their rows in the generation batch) of the rows that ended
        # (EOS) while others still decode, as the decode loop finds them (salon.train.engine.decode.SYNC_EVERY)
        self.on_finished = None
        # called before each decode step, in the decoding thread (StaticDecoder.between_steps)
        self.between_steps = None
        self.step_tokens: int | None = None  # TRL's loss tokens in the whole step (update_per_group)
        self._made: deque = deque()  # (prompts, output) of the step's micro-batches not yet asked for
        self.policy: MergedPolicy | None = None
        self.decoder: StaticDecoder | None = None
        self.refreshed_at: int | None = None
        self.refreshes = 0
        self.refresh_s: float | None = None  # the last refresh's time, logged with the generation after it

    def attach(self, trainer) -> None:
        """Build the merged copy of `trainer.model` (a peft model) now, refusing what cannot work."""
        problems = compiled_problems(trainer)
        if problems:
            raise ConfigError(problems, "salon train")
        self.policy, self.decoder = merged_decoder(trainer.model, self.compile, self.prompt_bucket, self.compile_config,
                                                   self.attention, self.fuse_linears, self.fp8_weights,
                                                   self.fp8_cache)
        self.refreshed_at = trainer.state.global_step

    def __call__(self, prompts: list, trainer) -> dict:
        if self.ahead is not None:
            self._generate_step(trainer)
        if self._made:
            expected, out = self._made.popleft()
            if prompts != expected:
                raise RuntimeError("grpo.update_per_group: TRL asked for other prompts than the micro-batch the "
                                   "step fetched next (a TRL whose training loop differs from 1.16's)")
            return out
        return self._generate(prompts, trainer)

    def _generate_step(self, trainer) -> None:
        """Every micro-batch of the optimiser step in one batch; then each waits for TRL to ask."""
        from salon.train.update.update_per_group import loss_tokens

        batches, self.ahead = self.ahead, None
        everything = [p for batch in batches for p in batch]
        made = self._generate(everything, trainer)
        self.step_tokens = loss_tokens(made["completion_ids"], trainer)
        if self.on_step is not None:
            self.on_step(everything, made["completion_ids"])
        start = 0
        for batch in batches:
            part = slice(start, start + len(batch))
            self._made.append((batch, {"prompt_ids": made["prompt_ids"][part],
                                       "completion_ids": made["completion_ids"][part],
                                       "logprobs": made["logprobs"][part]}))
            start += len(batch)

    def _finished(self, prompts: list, wave: list[int], eos: list[int], rows: list[int], ids: torch.Tensor) -> None:
        """The decoder's rows that ended, as on_finished wants them (cut as the whole batch will be)."""
        self.on_finished([prompts[r] for r in rows], cut_after_eos(ids, eos), [wave[r] for r in rows])

    def refresh(self, trainer) -> None:
        """The merged copy made equal to the trainer's weights now (nothing may be generating)."""
        if self.policy is None:
            self.attach(trainer)
        if trainer.state.global_step != self.refreshed_at:
            t0 = time.perf_counter()
            self.policy.refresh()
            self.refreshed_at, self.refreshes = trainer.state.global_step, self.refreshes + 1
            self.refresh_s = time.perf_counter() - t0

    def _generate(self, prompts: list, trainer) -> dict:
        """Refreshed, generated and logged in one go (TRL's rollout_func, update_per_group's step)."""
        self.refresh(trainer)
        out = self.generate(prompts, trainer)
        log_generation_metrics(trainer, out.pop("metrics"))
        return out

    def generate(self, prompts: list, trainer) -> dict:
        """Completions (and each token's log-prob) from the merged copy as it is: safe in a thread of its own
        while the trainer updates, since it reads nothing of the trainer's weights. The metrics come back
        under "metrics" for the caller to log in the trainer's thread."""
        prompt_ids = tokenize(prompts, trainer)
        parts = waves_of(prompts, self.waves, getattr(trainer, "num_generations", None))
        eos = trainer.eos_token_ids

        def starting(wave: list[int]) -> None:  # rows that end early go to on_finished as the wave's prompts
            self.decoder.between_steps = self.between_steps
            self.decoder.on_finished = None if self.on_finished is None else functools.partial(
                self._finished, [prompts[i] for i in wave], wave, eos)

        def generated(n: int, wave: list[int], made: list[list[int]]) -> None:
            if self.on_wave is not None and n < len(parts) - 1:
                self.on_wave([prompts[i] for i in wave], made)

        out = sample_merged(self.policy, self.decoder, prompt_ids, trainer.generation_config, eos, parts, starting,
                            generated)
        if self.refresh_s is not None:
            out["metrics"]["refresh_s"], self.refresh_s = self.refresh_s, None
        return {"prompt_ids": prompt_ids, **out}


# ---- the pieces, without a trainer (the generation process of grpo.generation_device builds them too) ------


def compiled_problems(trainer) -> list[str]:
    """Why the compiled engine cannot sample for `trainer`'s policy (nothing: an empty list)."""
    problems = []
    if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:
        problems.append("grpo.generation=compiled needs the whole policy in each process (no DeepSpeed / FSDP "
                        "sharding): use grpo.generation=transformers or vllm_*")
    if trainer.tools:
        problems.append("grpo.generation=compiled does not render tool schemas: use grpo.generation=transformers")
    return problems


def merged_decoder(policy, compile: str, prompt_bucket: int, compile_config=None, attention: str = "auto",
                   fuse_linears: bool = True, fp8_weights: bool = False,
                   fp8_cache: bool = False) -> tuple[MergedPolicy, StaticDecoder]:
    """The merged copy of `policy` (a peft model, or one trained whole) on its device and the decoder that samples
    from it (compile "auto": on CUDA only)."""
    merged = MergedPolicy(policy, fuse_linears=fuse_linears, fp8_weights=fp8_weights)
    on = compile == "on" or (compile == "auto" and merged.device.type == "cuda")
    decoder = StaticDecoder(merged.model, compile=on, prompt_bucket=prompt_bucket, compile_config=compile_config,
                            attention=attention, fp8_cache=fp8_cache)
    log.info("compiled generation: merged copy of %.2f GiB on %s (compile %s, prompts padded to multiples of %d, "
             "weights %s, KV cache %s)", merged.nbytes / GIB, merged.device, "on" if on else "off", prompt_bucket,
             "float8" if fp8_weights else "as trained", "float8" if fp8_cache else "as trained")
    return merged, decoder


def sample_merged(policy: MergedPolicy, decoder: StaticDecoder, prompt_ids: list[list[int]], generation_config,
                  eos_ids: list[int], parts: list[list[int]] | None = None, starting=None, generated=None) -> dict:
    """{"completion_ids", "logprobs", "metrics"}: completions decoded from the merged copy as it is, cut after
    their first EOS, with each token's log-prob as the decoder recorded it, in `parts` (waves of row indices;
    one wave: all rows). `starting(wave)` is called before a wave decodes, `generated(n, wave, completions)`
    after. The metrics are the caller's to log."""
    parts = parts or [list(range(len(prompt_ids)))]
    completion_ids: list = [None] * len(prompt_ids)
    logprobs: list = [None] * len(prompt_ids)
    seconds, host_pace = 0.0, []
    for n, wave in enumerate(parts):
        if starting is not None:
            starting(wave)
        made = cut_after_eos(decoder.generate([prompt_ids[i] for i in wave], generation_config), eos_ids)
        seconds += decoder.last_seconds
        if decoder.last_host_ms_per_step is not None:
            host_pace.append(decoder.last_host_ms_per_step)
        row_logps = decoder.last_logprobs.cpu()
        for k, (i, ids) in enumerate(zip(wave, made)):
            completion_ids[i], logprobs[i] = ids, row_logps[k, :len(ids)].tolist()
        if generated is not None:
            generated(n, wave, made)
    tokens = sum(len(c) for c in completion_ids)
    metrics = {"compiled_graphs": decoder.compiled_graphs, "shapes": len(decoder.shapes), "waves": len(parts),
               "decode_loop": decoder.last_path == "loop", "copy_gib": policy.nbytes / GIB,
               "kv_cache_gib": sum(decoder.cache_bytes(*k) for k in decoder.caches) / GIB,
               "tokens_per_s": tokens / max(seconds, 1e-9), "seconds": seconds}
    if host_pace:  # the host's own time a decode step (decode.py): beside the time a step, who paces whom
        metrics["host_ms_per_step"] = sum(host_pace) / len(host_pace)
    return {"completion_ids": completion_ids, "logprobs": logprobs, "metrics": metrics}


def log_generation_metrics(trainer, metrics: dict) -> None:
    """salon/generation/NAME for each figure (TRL averages what reward functions and engines log a step)."""
    for name, value in metrics.items():
        trainer._log_metric(f"salon/generation/{name}", float(value))


def waves_of(prompts: list, waves: int, group_size: int | None = None) -> list[list[int]]:
    """The prompts' indices in `waves` parts of whole groups, groups in order of first appearance, as
    even as the groups allow. A group is every completion of one prompt, or with `group_size` (TRL's
    num_generations) each run of that many of them in order: TRL puts a row's completions side by
    side, and one prompt may be several rows (one subject repeated), each its own group."""
    by_prompt: dict[str, list[int]] = {}
    for i, prompt in enumerate(prompts):
        by_prompt.setdefault(prompt_key(prompt), []).append(i)
    step = group_size or len(prompts) or 1
    members = sorted((rows[k:k + step] for rows in by_prompt.values() for k in range(0, len(rows), step)),
                     key=lambda group: group[0])
    per = -(-len(members) // max(1, min(waves, len(members))))
    return [sorted(i for group in members[k:k + per] for i in group) for k in range(0, len(members), per)]


def tokenize(prompts: list, trainer) -> list[list[int]]:
    """Prompt ids as TRL's transformers path makes them (chat template with the trainer's kwargs)."""
    from trl.data_utils import is_conversational

    tok = trainer.processing_class
    if is_conversational({"prompt": prompts[0]}):
        return tok.apply_chat_template(conversation=prompts, chat_template=trainer.chat_template,
                                       add_generation_prompt=True, tokenize=True, return_dict=True,
                                       **trainer.chat_template_kwargs)["input_ids"]
    return tok(text=prompts)["input_ids"]
