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
   linear (computed in fp32, stored in the base weights' dtype). `refresh()` writes it in place
   with `copy_`; the engine refreshes whenever the trainer's global step moved since the last
   refresh, i.e. after each optimiser step that a generation follows (TRL's vLLM path syncs the
   same way). The trained weights are only read: merging and unmerging into them would add bf16
   rounding to the base weights at every step. In-place copies keep every tensor's address, so a
   captured CUDA graph stays valid.
2. `StaticDecoder`: transformers' own `generate` on that copy with a `StaticCache` the decoder owns
   (allocated once per shape, reset in place) and transformers' compile path for the decode step
   (torch.compile, mode reduce-overhead: CUDA graphs). Prompts are left-padded to a multiple of
   `prompt_bucket` tokens, so shapes repeat across steps.
3. Sampling is TRL's `GenerationConfig` (temperature, top-p, top-k, min-p, repetition penalty,
   EOS ids, max_completion_length), so the logits processors are the ones TRL's path runs, on the
   policy's logits up to the rounding of the merge, except that temperature, top-k and top-p (when
   top-k is on and no other warper is) run as one `TopKTopP`, which gives the same scores without
   sorting the whole vocabulary each step; completions are cut after their first EOS as TRL's
   transformers path cuts them, and TRL pads them.
4. The loss is untouched: TRL computes its log-probabilities with the trained peft model as
   always, and this engine returns no sampling log-probs (`logprobs: None`, as TRL's own
   transformers path), so no importance-sampling term enters.

Compilations. A compiled decode step is specific to (batch, bucket + max_completion_length). With
a fixed generation batch a run compiles once per prompt bucket its prompts fall in: prompts whose
lengths span S tokens touch at most S // prompt_bucket + 2 buckets, so a 200-step run of salon's
painting prompts (one subject: one length) compiles once, and never more than dynamo's
recompile_limit (8) shapes. Each call logs `salon/generation/compiled_graphs` (dynamo graphs
compiled so far) and `salon/generation/shapes`; a graph compiled again for a shape already seen is
logged as a warning (a guard failed, which is a bug, not a cost to accept).

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
"""

from __future__ import annotations

import copy
import logging
import math
import time

import torch
from transformers import AutoModelForCausalLM, CompileConfig, LogitsProcessor, LogitsProcessorList, StaticCache

from salon.pool.errors import ConfigError
from salon.train.config import GENERATION_COMPILE

log = logging.getLogger(__name__)

HEADROOM_BYTES = 1 << 30  # what the allocator and the decode step's temporaries need beside the copy and cache
GIB = 2**30


# ---- the merged copy --------------------------------------------------------------------------------


class MergedPolicy:
    """A plain transformers model equal to `peft_model` with its LoRA folded in; `refresh()` re-folds it
    in place. The peft model's weights are read, never written."""

    def __init__(self, peft_model):
        from peft.tuners.lora import Linear as LoraLinear
        from peft.tuners.lora import LoraLayer

        self.adapter = peft_model.active_adapter
        base = peft_model.get_base_model()
        weights = [p for n, p in base.named_parameters() if ".lora_" not in n]
        self.dtype, self.device = weights[0].dtype, weights[0].device
        self.nbytes = sum(p.numel() * p.element_size() for p in weights)
        check_fits(self.nbytes, self.device, "a merged copy of the policy")
        with torch.device(self.device):
            self.model = AutoModelForCausalLM.from_config(base.config, dtype=self.dtype).eval()
        self.model.requires_grad_(False)
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

    @torch.no_grad()
    def refresh(self) -> None:
        for dst, src, lora in self.pairs:
            if lora is None:
                dst.copy_(src)
            else:
                dst.copy_(src.float() + lora.get_delta_weight(self.adapter).float())


# ---- static cache + compiled decode ------------------------------------------------------------------


class StaticDecoder:
    """`generate` on `model` with a static KV cache it owns and, when `compile`, transformers'
    compiled decode step; prompts are left-padded to a multiple of `prompt_bucket`."""

    def __init__(self, model, *, compile: bool, prompt_bucket: int = 256, compile_config=None):
        self.model, self.compile, self.prompt_bucket = model, compile, prompt_bucket
        self.compile_config = compile_config or CompileConfig(fullgraph=False, dynamic=False, mode="reduce-overhead")
        if compile and model.device.type != "cuda":
            self.compile_config._compile_all_devices = True  # transformers compiles on CUDA only unless told
        self.caches: dict[tuple[int, int], object] = {}
        self.shapes: set[tuple[int, int]] = set()
        self.compiled_graphs = 0
        self.last_seconds = 0.0

    def cache_bytes(self, batch: int, length: int) -> int:
        cfg = self.model.config.get_text_config(decoder=True)
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        itemsize = torch.empty((), dtype=self.model.dtype).element_size()
        return batch * length * cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * head_dim * itemsize

    def _cache(self, batch: int, length: int):
        key = (batch, length)
        if key not in self.caches:
            need = self.cache_bytes(batch, length)
            if self.caches and not fits(need, self.model.device):
                log.info("compiled generation: dropping the KV caches of shapes %s for %s", list(self.caches), key)
                self.caches.clear()
                if self.model.device.type == "cuda":
                    torch.cuda.empty_cache()
            check_fits(need, self.model.device, f"a static KV cache for {batch} x {length} tokens")
            self.caches[key] = StaticCache(config=self.model.config, max_cache_len=length)
        cache = self.caches[key]
        cache.reset()
        return cache

    def generation_config(self, base):
        """`base` (TRL's GenerationConfig) with this decoder's cache and compile settings, and the
        logits processors that replace its sampling warpers (see `TopKTopP`)."""
        cfg = copy.deepcopy(base)
        cfg.cache_implementation = None  # the cache is passed in
        cfg.disable_compile = not self.compile
        cfg.compile_config = self.compile_config if self.compile else None
        others = [getattr(cfg, name, None) for name in ("top_h", "min_p", "epsilon_cutoff", "eta_cutoff")]
        if not (cfg.do_sample and cfg.top_k and all(x is None for x in others)
                and cfg.typical_p in (None, 1.0) and (cfg.num_beams or 1) == 1):
            return cfg, []
        warper = TopKTopP(cfg.temperature or 1.0, cfg.top_k, cfg.top_p or 1.0)
        cfg.temperature, cfg.top_k, cfg.top_p = 1.0, 0, 1.0  # generate adds none of its own warpers
        return cfg, [warper]

    @torch.no_grad()
    def generate(self, prompt_ids: list[list[int]], generation_config) -> torch.Tensor:
        """Completion ids (batch, <= max_new_tokens), pad after a sequence finished, as `generate` returns."""
        from torch._dynamo.utils import counters

        cfg, warpers = self.generation_config(generation_config)
        batch, longest = len(prompt_ids), max(len(p) for p in prompt_ids)
        bucket = math.ceil(longest / self.prompt_bucket) * self.prompt_bucket
        ids = torch.full((batch, bucket), cfg.pad_token_id, dtype=torch.long)
        mask = torch.zeros((batch, bucket), dtype=torch.long)
        for i, p in enumerate(prompt_ids):
            ids[i, bucket - len(p):] = torch.tensor(p, dtype=torch.long)
            mask[i, bucket - len(p):] = 1
        shape = (batch, bucket + cfg.max_new_tokens)
        cache = self._cache(*shape)
        self.model.generation_config = copy.deepcopy(cfg)  # transformers fills unset fields from the model's
        graphs = counters["stats"]["unique_graphs"]
        t0 = time.perf_counter()
        out = self.model.generate(input_ids=ids.to(self.model.device), attention_mask=mask.to(self.model.device),
                                  generation_config=cfg, logits_processor=LogitsProcessorList(warpers),
                                  **{cache_argument(self.model): cache})
        self.last_seconds = time.perf_counter() - t0
        new = counters["stats"]["unique_graphs"] - graphs
        if new and shape in self.shapes:
            log.warning("compiled generation: %d graph(s) compiled again for a shape already seen %s", new, shape)
        elif new:
            log.info("compiled generation: %d graph(s) compiled for batch %d x cache %d", new, *shape)
        self.compiled_graphs += new
        self.shapes.add(shape)
        return out[:, bucket:]


class TopKTopP(LogitsProcessor):
    """transformers' temperature, top-k and top-p warpers, in their order, with top-p computed over the
    top-k candidates instead of a sort of the whole vocabulary (151,936 wide for Qwen3) per row and
    step. The same scores come out: the k best scaled scores, every score tied with the k-th kept
    as TopKLogitsWarper keeps it (up to 2k in all), then TopPLogitsWarper's rule on their ascending
    cumulative probabilities, the most likely token always kept; -inf elsewhere. generate then
    samples from their softmax exactly as it samples from its own warpers' output."""

    def __init__(self, temperature: float, top_k: int, top_p: float):
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.temperature != 1.0:
            scores = scores / self.temperature
        k = min(self.top_k, scores.size(-1))
        values, indices = scores.topk(min(2 * k, scores.size(-1)), dim=-1)  # descending
        values = values.masked_fill(values < values[..., k - 1:k], -math.inf)
        if self.top_p < 1.0:
            ascending = values.flip(-1)
            remove = ascending.softmax(dim=-1).cumsum(dim=-1) <= 1 - self.top_p
            remove[..., -1] = False
            values = values.masked_fill(remove.flip(-1), -math.inf)
        return torch.full_like(scores, -math.inf).scatter(-1, indices, values)


def cache_argument(model) -> str:
    """generate's keyword for a cache: `cache` (transformers >= 5.2x), `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def cut_after_eos(completions: torch.Tensor, eos_ids: list[int]) -> list[list[int]]:
    """Each row up to and including its first EOS (all of it if none), as TRL's transformers path cuts."""
    is_eos = torch.isin(completions, torch.tensor(eos_ids, device=completions.device))
    first = torch.where(is_eos.any(dim=1), is_eos.int().argmax(dim=1), completions.size(1))
    keep = torch.arange(completions.size(1), device=completions.device)[None, :] <= first[:, None]
    return [row[m].tolist() for row, m in zip(completions.cpu(), keep.cpu())]


# ---- memory -----------------------------------------------------------------------------------------


def free_bytes(device) -> int | None:
    """What the device can still give: free memory plus what torch's allocator holds unused; None off CUDA."""
    if torch.device(device).type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def fits(need: int, device, free: int | None = None) -> bool:
    free = free_bytes(device) if free is None else free
    return free is None or need + HEADROOM_BYTES <= free


def check_fits(need: int, device, what: str, free: int | None = None) -> None:
    """Refuse, before allocating, what the device cannot hold (`free` given: tests and estimates)."""
    free = free_bytes(device) if free is None else free
    if not fits(need, device, free):
        raise ConfigError([f"grpo.generation=compiled needs {need / GIB:.1f} GiB for {what} (+{HEADROOM_BYTES / GIB:.0f} "
                           f"GiB headroom), and {device} has {free / GIB:.1f} GiB free: use grpo.generation=transformers "
                           "(samples from the trained weights, no copy), or lower grpo.max_completion_length or the "
                           "generation batch (grpo.per_device_train_batch_size x grpo.steps_per_generation)"],
                          "salon train")


# ---- the TRL side -----------------------------------------------------------------------------------


class CompiledGeneration:
    """TRL's `rollout_func` for `grpo.generation: compiled` (see the module doc)."""

    def __init__(self, compile: str = "auto", prompt_bucket: int = 256, compile_config=None):
        if compile not in GENERATION_COMPILE:
            raise ConfigError([f"grpo.generation_compile={compile!r}: use {', '.join(GENERATION_COMPILE)}"],
                              "salon train")
        self.compile, self.prompt_bucket, self.compile_config = compile, prompt_bucket, compile_config
        self.policy: MergedPolicy | None = None
        self.decoder: StaticDecoder | None = None
        self.refreshed_at: int | None = None
        self.refreshes = 0

    def attach(self, trainer) -> None:
        """Build the merged copy of `trainer.model` (a peft model) now, refusing what cannot work."""
        from peft import PeftModel

        problems = []
        if not isinstance(trainer.model, PeftModel):
            problems.append("grpo.generation=compiled samples from a merged copy of a LoRA policy: enable lora, or "
                            "use grpo.generation=transformers")
        if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:
            problems.append("grpo.generation=compiled needs the whole policy in each process (no DeepSpeed / FSDP "
                            "sharding): use grpo.generation=transformers or vllm_*")
        if trainer.tools:
            problems.append("grpo.generation=compiled does not render tool schemas: use grpo.generation=transformers")
        if problems:
            raise ConfigError(problems, "salon train")
        self.policy = MergedPolicy(trainer.model)
        on = self.compile == "on" or (self.compile == "auto" and self.policy.device.type == "cuda")
        self.decoder = StaticDecoder(self.policy.model, compile=on, prompt_bucket=self.prompt_bucket,
                                     compile_config=self.compile_config)
        self.refreshed_at = trainer.state.global_step
        log.info("compiled generation: merged copy of %.2f GiB on %s (compile %s, prompts padded to multiples of %d)",
                 self.policy.nbytes / GIB, self.policy.device, "on" if on else "off", self.prompt_bucket)

    def __call__(self, prompts: list, trainer) -> dict:
        if self.policy is None:
            self.attach(trainer)
        if trainer.state.global_step != self.refreshed_at:
            t0 = time.perf_counter()
            self.policy.refresh()
            self.refreshed_at, self.refreshes = trainer.state.global_step, self.refreshes + 1
            trainer._log_metric("salon/generation/refresh_s", time.perf_counter() - t0)
        prompt_ids = tokenize(prompts, trainer)
        completion_ids = cut_after_eos(self.decoder.generate(prompt_ids, trainer.generation_config),
                                       trainer.eos_token_ids)
        tokens = sum(len(c) for c in completion_ids)
        for name, value in (("compiled_graphs", self.decoder.compiled_graphs), ("shapes", len(self.decoder.shapes)),
                            ("copy_gib", self.policy.nbytes / GIB),
                            ("kv_cache_gib", sum(self.decoder.cache_bytes(*k) for k in self.decoder.caches) / GIB),
                            ("tokens_per_s", tokens / max(self.decoder.last_seconds, 1e-9))):
            trainer._log_metric(f"salon/generation/{name}", float(value))  # what TRL hands reward functions
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}


def tokenize(prompts: list, trainer) -> list[list[int]]:
    """Prompt ids as TRL's transformers path makes them (chat template with the trainer's kwargs)."""
    from trl.data_utils import is_conversational

    tok = trainer.processing_class
    if is_conversational({"prompt": prompts[0]}):
        return tok.apply_chat_template(conversation=prompts, chat_template=trainer.chat_template,
                                       add_generation_prompt=True, tokenize=True, return_dict=True,
                                       **trainer.chat_template_kwargs)["input_ids"]
    return tok(text=prompts)["input_ids"]
