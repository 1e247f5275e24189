"""The decode loop of `grpo.generation: compiled`: a static KV cache, one captured step per token.

    decoder = StaticDecoder(model, compile=True, prompt_bucket=256)
    completions = decoder.generate(prompt_ids, trl_generation_config)   # (batch, <= max_new_tokens)

transformers' `generate` with its compile path still runs Python between steps: building inputs,
the logits processors, sampling, the stopping criteria, and a device-to-host sync per token to
ask whether every row has finished. On an H200 at batch 8 that is about half of each 5-8 ms step
(shared/reference/generation-speed.md, benchmarks/bench_generate_gpu.py). Here one compiled
function is the whole step: the model's forward on the last token, temperature / top-k / top-p,
sampling, EOS bookkeeping. With torch.compile's reduce-overhead mode it is one CUDA graph replay
per token, and the loop asks the device whether every row finished only every `SYNC_EVERY` steps.

Exactly generate's distribution and, on the same device and seed, its tokens: the same position
ids (left padding included), the same 2D attention mask growing by one position per step (a
static buffer filled in place), `logits_to_keep=1`, the same warpers in the same order (TopKTopP
stands for temperature + top-k + top-p, with the same scores), and sampling by the exponential
trick that `torch.multinomial` itself uses for one sample (argmax of p / Exp(1)), which needs no
sync. Finished rows get the pad token, as in generate. Sampling settings this loop does not
implement (repetition penalty, min-p, ...: decode_sampling.UNSUPPORTED_FIELDS) run through transformers'
`generate` on the same model and cache, slower but exact.

Attention. Under torch.compile, transformers' SDPA integration repeats the 8 KV heads of a
Qwen3-1.7B to its 16 query heads for every decode step (`repeat_kv`): at 8 x 2,648 cached tokens
that writes and reads again 4.9 GB per step, twice the cache itself. `grouped_decode_attention`
(registered as the merged copy's attention, "salon_grouped_decode") instead folds each KV head's
query heads into the query length, as transformers does itself outside compile (`pack_gqa`), and
reads the cache as it is, with two matmuls and a float32 softmax (its docstring says why not SDPA).
Prefill (more than one query) runs transformers' SDPA path. `grpo.generation_attention` picks how
much of the cache a decode step reads (decode_attention.py): `whole`, `buckets` (the filled
positions rounded up to a multiple of 256: one compiled step per length, each in its own dynamo
cache), `filled` (a Triton kernel; in the trainer faster than `whole` at batch 64 on an H200 and at batch 8
on an H100) or `auto` (the default: `filled` for calls of FILLED_FROM_ROWS rows or more, `whole` below; `filled`
at any rows over a float8 cache, fp8_cache.py).
Where an option does not apply (sliding windows, ...) the decoder reads the whole cache and says
so in the log.
"""

from __future__ import annotations

import copy
import logging
import math
import time

import torch
from transformers import AttentionInterface, Cache, CompileConfig, StaticCache
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from salon.pool.errors import ConfigError
from salon.train.engine.decode_attention import (ATTENTION, KEY_CHUNK, DecodeSpan, bucket_keys, buckets_applies,
                                          filled_applies, filled_decode_attention, isolates_recompiles)
from salon.train.engine.decode_sampling import choose, eos_ids, loop_warpers
from salon.train.engine.fp8_cache import Fp8Rows, bytes_per_position, fp8_static_cache
from salon.train.update.causal_loss import full_attention_only

# grpo.generation_attention: the filled positions rounded up to a chunk, exactly the filled ones, or all of them
ATTENTIONS = ("auto", "buckets", "filled", "whole")
# auto: the filled positions from this many rows a call on. At 2,048 new tokens, every 8 rows one prompt: at 64
# rows on an H200 filled 9,868 tokens/s against 8,152 for the whole cache (results/bench_generate_gpu_2048_
# group8_*h200.json); at 8 rows in `salon train` on an H100, 2,829-2,833 against 2,240, the step 9.55-9.66 s
# against 11.43 (results/bench_train_gpu_filled_h100.json, bench_train_gpu_carveout_h100.json: since the slices'
# merge became a kernel of its own; before it, on an H200, 1,740 against 2,384). Below 8 rows: not measured
FILLED_FROM_ROWS = 8

log = logging.getLogger(__name__)

HEADROOM_BYTES = 1 << 30  # what the allocator and the decode step's temporaries need beside the copy and cache
GIB = 2**30
SYNC_EVERY = 32  # decode steps between asking the device whether every row has finished


def grouped_decode_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                             is_causal=None, **kwargs):
    """Attention of one query token without repeating the KV heads: query (B, H, 1, D) becomes
    (B, KV, H/KV, D) against key/value (B, KV, L, D); a mask shared by all heads broadcasts. A
    `DecodeSpan` in place of the mask (attention "filled") reads only the filled positions; a mask
    shorter than the cache (attention "buckets") reads the positions it covers.

    Two matmuls and a float32 softmax between them (transformers' eager attention), not SDPA: a
    fused kernel gives one program to a (row, KV head) and walks its L positions alone, which at
    batch 8 is 64 programs on a card of 132 multiprocessors, while cuBLAS tiles the positions too.
    On an H200, 28 layers at batch 8 and 1,792 keys: 0.72 ms against SDPA's 1.25
    (benchmarks/results/probe_decode_attention_h200.json)."""
    if isinstance(attention_mask, DecodeSpan):
        return filled_decode_attention(query, key, value, attention_mask, scaling), None
    if isinstance(key, Fp8Rows):  # a float8 cache read whole or in buckets: widened, what the mask covers of it
        end = key.rows.shape[2] if attention_mask is None else attention_mask.shape[-1]
        key, value = (Fp8Rows(t.rows[:, :, :end], t.scales[:, :, :end]).widened(query.dtype) for t in (key, value))
    if attention_mask is not None and attention_mask.shape[-1] < key.shape[2]:
        key, value = key[:, :, :attention_mask.shape[-1]], value[:, :, :attention_mask.shape[-1]]
    groups = getattr(module, "num_key_value_groups", 1)
    shared_mask = attention_mask is None or attention_mask.shape[1] == 1
    if query.shape[2] != 1 or groups == 1 or not shared_mask or kwargs.get("position_bias") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    batch, heads, _, dim = query.shape
    scores = torch.matmul(query.reshape(batch, heads // groups, groups, dim), key.transpose(-1, -2)).float()
    scores = scores * (dim ** -0.5 if scaling is None else scaling)
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask, -math.inf) if attention_mask.dtype == torch.bool \
            else scores + attention_mask
    out = torch.matmul(torch.softmax(scores, -1).to(value.dtype), value)
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION, grouped_decode_attention)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)


class StaticDecoder:
    """Completions from `model` with a static KV cache it owns, one compiled step per token when
    `compile`; prompts are left-padded to a multiple of `prompt_bucket` so shapes repeat."""

    def __init__(self, model, *, compile: bool, prompt_bucket: int = 256, compile_config=None,
                 attention: str = "auto", key_chunk: int = KEY_CHUNK, fp8_cache: bool = False):
        if attention not in ATTENTIONS:
            raise ConfigError([f"grpo.generation_attention={attention!r}: use {', '.join(ATTENTIONS)}"], "salon train")
        if fp8_cache and not full_attention_only(model):
            raise ConfigError([f"grpo.generation_kv_cache=fp8 keeps full-attention layers; {type(model).__name__} "
                               "has others (sliding windows, ...): leave generation_kv_cache as_trained"],
                              "salon train")
        self.model, self.compile, self.prompt_bucket, self.key_chunk = model, compile, prompt_bucket, key_chunk
        self.fp8_cache = fp8_cache  # the KV cache as float8 rows and their scales (fp8_cache.py)
        applies = {"auto": True, "whole": True, "filled": filled_applies(model), "buckets": buckets_applies(model)}
        self.attention = attention if applies[attention] else "whole"
        if self.attention != attention:
            log.info("compiled generation: attention %r does not apply to %s (sliding windows, head shapes, another "
                     "attention than %s); reading the whole cache",
                     attention, type(model).__name__, ATTENTION)
        cc = compile_config or CompileConfig(fullgraph=True, dynamic=False, mode="reduce-overhead")
        self.compile_config = cc
        self.compile_options = {"backend": cc.backend, "fullgraph": cc.fullgraph, "dynamic": cc.dynamic,
                                **({"mode": cc.mode} if cc.mode else {})}
        self.step = torch.compile(self._step, **self.compile_options) if compile else self._step
        self.keyed_steps: dict[int, object] = {}  # buckets: the compiled step per attended length
        self.cache_kw = cache_argument(model)
        self.caches: dict[tuple[int, int], Cache] = {}
        self.compiled_for: set[tuple] = set()  # (shape, sampling settings): what one compiled step is specific to
        self.compiled_graphs = 0
        self.last_seconds = 0.0
        # the host's own time a decode step in the last call (its waits for the card left out): near the
        # call's time a step, the host (Python, the launches) paces the card rather than the card's work
        self.last_host_ms_per_step: float | None = None
        self.last_path = ""  # "loop" or "generate": which ran the last call
        # (batch, tokens): each generated token's log-prob at the sampling temperature, from the last call
        self.last_logprobs: torch.Tensor | None = None
        # called at the loop's checks (every SYNC_EVERY steps) with the rows that finished since the last
        # check and their tokens so far (EOS and the pad after it included), so their paintings can start
        # while the other rows decode; the check reads which rows are going anyway (one small copy more)
        self.on_finished = None
        # called before each decode step, in the decoding thread, with nothing: it may change the thread's
        # current CUDA stream (the overlapped step moves the decode's rest onto the whole card once it is free)
        self.between_steps = None
        self.loop_error: str | None = None  # why the compiled loop was given up, if it was

    @property
    def shapes(self) -> set[tuple[int, int]]:
        """(batch, cache length) of every call so far."""
        return {settings[0] for settings in self.compiled_for}

    def cache_bytes(self, batch: int, length: int) -> int:
        cfg = self.model.config.get_text_config(decoder=True)
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        itemsize = torch.empty((), dtype=self.model.dtype).element_size()
        head_bytes = bytes_per_position(head_dim) if self.fp8_cache else head_dim * itemsize
        return batch * length * cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * head_bytes

    def _cache(self, batch: int, length: int) -> Cache:
        key = (batch, length)
        if key not in self.caches:
            need = self.cache_bytes(batch, length)
            if self.caches and not fits(need, self.model.device):
                log.info("compiled generation: dropping the KV caches of shapes %s for %s", list(self.caches), key)
                self.caches.clear()
                if self.model.device.type == "cuda":
                    torch.cuda.empty_cache()
            check_fits(need, self.model.device, f"a static KV cache for {batch} x {length} tokens")
            made = fp8_static_cache if self.fp8_cache else StaticCache
            self.caches[key] = made(config=self.model.config, max_cache_len=length)
        cache = self.caches[key]
        cache.reset()
        return cache

    def keyed_step(self, keys: int, length: int):
        """The step attending `keys` positions (attention "buckets"), compiled when the decoder compiles.
        Each length is a torch.compile of its own: with `isolate_recompiles` its graphs (one per shape
        and sampling settings) sit in a dynamo cache of their own, so the lengths do not add up against
        dynamo's recompile_limit (8 per cache). A torch without it (before 2.14) keeps them all in one
        cache for the step's code, so the limit is raised to hold 8 shapes of every length a cache of
        `length` positions has."""
        if not self.compile:
            return self._step
        if keys not in self.keyed_steps:
            if isolates_recompiles():
                self.keyed_steps[keys] = torch.compile(self._step, **self.compile_options, isolate_recompiles=True)
            else:
                import torch._dynamo.config as dynamo_config

                lengths = -(-length // self.key_chunk)
                if dynamo_config.recompile_limit < 8 * lengths:
                    log.info("compiled generation: dynamo's recompile_limit %d -> %d for one step per attended length",
                             dynamo_config.recompile_limit, 8 * lengths)
                    dynamo_config.recompile_limit = 8 * lengths
                self.keyed_steps[keys] = torch.compile(self._step, **self.compile_options)
        return self.keyed_steps[keys]

    def _step(self, token, position, mask, unfinished, cache, warpers: list, do_sample: bool, eos, pad: int,
              temperature: float = 1.0, keys: int | None = None):
        """One token per row: the forward on `token` at `position`, the warpers, a sample (or argmax);
        rows already finished get `pad`. Returns (tokens, still unfinished, their log-probs at `temperature`).
        With `keys`, attention
        reads the cache's first `keys` positions: the 2D mask cut there becomes the full-attention
        layers' prepared mask (what transformers builds from the 2D mask on a static cache, causal
        and padding, is the same for one query token: the 2D mask has no 1 past the current position)."""
        if keys is not None:
            mask = {"full_attention": mask[:, None, None, :keys].bool()}
        logits = self.model(input_ids=token, attention_mask=mask, position_ids=position, use_cache=True,
                            logits_to_keep=1, **{self.cache_kw: cache}).logits[:, -1].float()
        chosen = choose(logits, warpers, do_sample)
        chosen = torch.where(unfinished, chosen, pad)
        # the chosen token's log-prob as TRL's loss computes it (logits / temperature, no top-k / top-p): the
        # sampler's side of an importance weight (salon.train.update.stale_correction)
        scaled = logits / temperature
        logp = scaled.gather(-1, chosen[:, None])[:, 0] - scaled.logsumexp(-1)
        return chosen, unfinished & ~(chosen[:, None] == eos[None, :]).any(-1), logp

    @torch.no_grad()
    def generate(self, prompt_ids: list[list[int]], generation_config) -> torch.Tensor:
        """Completion ids (batch, <= max_new_tokens), pad after a row finished, as `generate` returns."""
        from torch._dynamo.utils import counters

        cfg = copy.deepcopy(generation_config)
        batch, longest = len(prompt_ids), max(len(p) for p in prompt_ids)
        bucket = math.ceil(longest / self.prompt_bucket) * self.prompt_bucket
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
        device = self.model.device
        ids = torch.full((batch, bucket), pad, dtype=torch.long)
        mask = torch.zeros((batch, bucket + cfg.max_new_tokens), dtype=torch.long)
        for i, p in enumerate(prompt_ids):
            ids[i, bucket - len(p):] = torch.tensor(p, dtype=torch.long)
            mask[i, bucket - len(p):bucket] = 1
        ids, mask = ids.to(device), mask.to(device)
        shape = (batch, bucket + cfg.max_new_tokens)
        cache = self._cache(*shape)
        graphs = counters["stats"]["unique_graphs"]
        warpers = loop_warpers(cfg)
        attention = self.attention_for(batch)
        settings = (shape, cfg.do_sample, pad, repr([vars(w) for w in warpers or []]), attention)
        if self.compile and settings not in self.compiled_for:  # a first step sits silent otherwise
            log.info("compiled generation: compiling the decode step for batch %d x cache %d (once per shape and "
                     "sampling settings: about half a minute to a few minutes on a GPU)", *shape)
        t0 = time.perf_counter()
        out, self.last_host_ms_per_step = None, None
        if warpers is not None and self.loop_error is None and attention != "whole":
            try:
                out = self._loop(ids, mask, cfg, warpers, cache, pad, prompt_ids, attention)
            except Exception as e:  # the kernel, a compile or a capture failed: the loop as before, on the whole cache
                if not self.compile:
                    raise
                log.warning("compiled generation: attention %r failed (%s: %s); reading the whole cache from now on",
                            attention, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
                self.attention = "whole"
                cache.reset()
                mask[:, bucket:] = 0
        if out is None and warpers is not None and self.loop_error is None:
            try:
                out = self._loop(ids, mask, cfg, warpers, cache, pad, prompt_ids, "whole")
            except Exception as e:  # a compile or capture failure must not end a training run
                if not self.compile:
                    raise
                self.loop_error = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
                log.warning("compiled generation: the decode loop failed (%s); generating with transformers' "
                            "generate and a compiled forward from now on. grpo.generation_compile=off runs the loop "
                            "uncompiled", self.loop_error)
                cache.reset()
        self.last_path = "generate" if out is None else "loop"
        if out is None:
            out = self._generate(ids, mask[:, :bucket], cfg, cache)
        self.last_seconds = time.perf_counter() - t0
        new = counters["stats"]["unique_graphs"] - graphs
        if new and settings in self.compiled_for:
            log.warning("compiled generation: %d graph(s) compiled again for a shape and sampling settings already "
                        "seen %s", new, settings)
        elif new:
            log.info("compiled generation: %d graph(s) compiled for batch %d x cache %d", new, *shape)
        self.compiled_graphs += new
        self.compiled_for.add(settings)
        return out

    def attention_for(self, rows: int) -> str:
        """The attention a call of `rows` rows runs (`auto`: `filled` from FILLED_FROM_ROWS rows on, where
        it applies; at any rows over a float8 cache, which only the kernel reads without widening it)."""
        if self.attention != "auto":
            return self.attention
        return "filled" if (rows >= FILLED_FROM_ROWS or self.fp8_cache) and filled_applies(self.model) else "whole"

    def _loop(self, ids, mask, cfg, warpers, cache, pad: int, prompt_ids: list[list[int]],
              attention: str) -> torch.Tensor:
        """The decode loop, each step's attention as `attention` says."""
        batch, bucket = ids.shape
        prompt_mask = mask[:, :bucket]
        span = DecodeSpan.start(mask, bucket, prompt_ids) if attention == "filled" else None
        # what each step's attention gets: the 2D mask (transformers builds SDPA's mask from it; under
        # buckets the step cuts it first), or the span itself in place of every layer's mask
        # (transformers passes a dict of masks through)
        step_mask = mask if span is None else {kind: span for kind in set(self.model.config.layer_types)}
        position = (prompt_mask.cumsum(-1) - 1).masked_fill(prompt_mask == 0, 0)
        eos = torch.tensor(eos_ids(cfg) or [-1], dtype=torch.long, device=ids.device)
        unfinished = torch.ones(batch, dtype=torch.bool, device=ids.device)
        out = torch.full((batch, cfg.max_new_tokens), pad, dtype=torch.long, device=ids.device)
        # prefill, eager: its shape changes with the bucket, and it runs once per call
        temperature = float(cfg.temperature or 1.0)
        token, unfinished, logp = self._step(ids, position, prompt_mask, unfinished, cache, warpers, cfg.do_sample,
                                             eos, pad, temperature)
        out[:, 0] = token
        logps = torch.zeros((batch, cfg.max_new_tokens), dtype=torch.float32, device=ids.device)
        logps[:, 0] = logp
        position = position[:, -1:]
        steps = 1
        # the host's own time: from the first decode step's call to the latest, less its waits for the card
        # (the launches queue, so between two waits the host runs ahead of the card or paces it)
        first = last = None
        waited = 0.0
        handed: set[int] = set()  # rows given to on_finished
        for i in range(1, cfg.max_new_tokens):
            if i % SYNC_EVERY == 0:
                t = time.perf_counter()
                going = unfinished.tolist() if self.on_finished is not None else [bool(unfinished.any())]
                if not any(going):
                    break
                waited += time.perf_counter() - t
                ended = [r for r, g in enumerate(going) if not g and r not in handed] if self.on_finished else []
                if ended:
                    handed.update(ended)
                    self.on_finished(ended, out[ended, :i])
            if self.between_steps is not None:
                self.between_steps()
            mask[:, bucket + i - 1].fill_(1)  # the token fed now is attended from here on (fill_: no host copy)
            step, keys = self.step, None
            if span is not None:
                span.advance(bucket + i)
            elif attention == "buckets":  # every row has bucket + i positions filled now
                keys = bucket_keys(bucket + i, mask.shape[1], self.key_chunk)
                step = self.keyed_step(keys, mask.shape[1])
            position = position + 1
            if self.compile:
                torch.compiler.cudagraph_mark_step_begin()  # the last replay's outputs are read: copied below
            last = time.perf_counter()
            first = first or last
            token, unfinished, logp = step(out[:, i - 1:i], position, step_mask, unfinished, cache, warpers,
                                           cfg.do_sample, eos, pad, temperature, keys)
            out[:, i] = token
            logps[:, i] = logp
            unfinished = unfinished.clone()
            steps = i + 1
        self.last_host_ms_per_step = 1e3 * (last - first - waited) / (steps - 2) if steps > 2 else None
        self.last_logprobs = logps[:, :steps]
        return out[:, :steps]

    def _generate(self, ids, prompt_mask, cfg, cache) -> torch.Tensor:
        """transformers' generate on the same model and cache, for settings the loop does not run (its
        compile path, when on, compiles the forward alone, with graph breaks allowed as transformers
        allows them)."""
        cfg.cache_implementation = None  # the cache is passed in
        cfg.disable_compile = not self.compile
        if self.compile:
            cfg.compile_config = copy.copy(self.compile_config)
            cfg.compile_config.fullgraph = False
            if self.model.device.type != "cuda":
                cfg.compile_config._compile_all_devices = True  # transformers compiles on CUDA only unless told
        self.model.generation_config = copy.deepcopy(cfg)  # transformers fills unset fields from the model's
        out = self.model.generate(input_ids=ids, attention_mask=prompt_mask, generation_config=cfg,
                                  output_logits=True, return_dict_in_generate=True, **{self.cache_kw: cache})
        completions = out.sequences[:, ids.shape[1]:]
        self.last_logprobs = chosen_logprobs(out.logits, completions, float(cfg.temperature or 1.0))
        return completions


def chosen_logprobs(logits: tuple, tokens: torch.Tensor, temperature: float) -> torch.Tensor:
    """(batch, tokens) log-probs of `tokens` under generate's raw `logits` (one (batch, vocab) tensor a
    step) at `temperature`, as TRL's loss computes them."""
    scaled = torch.stack(logits, dim=1).float() / temperature
    return scaled.gather(-1, tokens[..., None])[..., 0] - scaled.logsumexp(-1)


def cache_argument(model) -> str:
    """The forward's keyword for a cache: `cache` (transformers >= 5.2x), `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


# ---- memory (the merged copy and the caches) ----------------------------------------------------------


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
