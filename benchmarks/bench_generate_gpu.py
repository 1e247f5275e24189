"""Generation throughput per engine, against what the card's memory bandwidth allows, on GRPO's policy.

    python benchmarks/bench_generate_gpu.py [--batches 8,64] [--tokens 512] \
        [--json benchmarks/results/bench_generate_gpu_h200.json]
    python benchmarks/bench_generate_gpu.py --cpu        # the same code on a CPU, tiny model (a check)

The policy is what GRPO samples from: `random:qwen3-1.7b` (salon.models.shapes: the real shape,
random weights) in bf16 with a peft LoRA (r=16, alpha 32, all linear layers; B drawn small, not
zero, so the adapter counts). In one run, on the same model and prompts, at each batch:
  generate             peft model + `generate`, dynamic cache (grpo.generation=transformers)
  continuous_batching  peft model + `generate_batch`, cast to bf16 as TRL casts it (grpo.generation=continuous_batching)
  compiled             salon.train.engine.generation: merged copy, static cache, compiled decode (grpo.generation=compiled),
                       attention over the filled positions only (grpo.generation_attention=filled)
  compiled_whole_cache the same, attention over the whole static cache (grpo.generation_attention=whole)
  compiled_buckets     the same, attention over the filled positions rounded up to a multiple of 256
                       (grpo.generation_attention=buckets: one compiled step per length, so its first
                       call compiles about tokens / 256 graphs)
  compiled_fused, compiled_whole_cache_fused
                       compiled and compiled_whole_cache on a copy whose q/k/v and gate/up are one
                       product each (grpo.generation_fuse_linears: the trainer's default; with
                       grpo.generation_attention=auto, `salon train` runs compiled_whole_cache_fused
                       below 64 rows and compiled_fused from 64), not in the default list
Each sequence runs `--tokens` new tokens (no EOS) after a 600-token prompt, sampling on (top-p
0.95, top-k 20); `--group N` gives N consecutive rows one prompt, as TRL hands a GRPO group to the
engine (the default 1: every row its own prompt). `compiled` is timed on its second call (the first
compiles); `generate` after a short warm-up. The bound is batch x bandwidth / (weight bytes + mean KV bytes) with the copy
bandwidth measured here. The JSON holds, per batch, each engine's tokens/s and share of that bound;
the printout adds seconds, peak memory per engine (the copy's cost is the compiled line's extra),
compilations and how far the merged copy's log-probabilities are from the peft model's.
`--profile FILE` writes, per compiled engine at each batch of `--profile-batches` (8), the kernels of one
more call (torch.profiler: CUDA time per decode step by kernel, the top 25) and the card's busy share
over that call, and from two calls before it the host's own time a decode step against the call's
time a step and the synchronisations torch saw in a call; and the host's launches a step in the
profiled call (graph replays, kernels launched outside a graph).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from pathlib import Path

PROMPT_TOKENS = 600  # the painting prompt (system + user) is about this long
# compiled first: fails fastest
ENGINES = ("compiled", "compiled_whole_cache", "compiled_buckets", "generate", "continuous_batching")
ATTENTION = {"compiled": "filled", "compiled_whole_cache": "whole", "compiled_buckets": "buckets",  # generation_attention
             "compiled_fused": "filled", "compiled_whole_cache_fused": "whole"}


def copy_bandwidth(device) -> float:
    """Bytes/s the device moves in a copy (read + write counted)."""
    import torch

    x = torch.empty(2**30 if device.type == "cuda" else 2**26, dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    sync(device)
    t0 = time.perf_counter()
    for _ in range(10):
        y.copy_(x)
    sync(device)
    return 2 * x.numel() * 10 / (time.perf_counter() - t0)


def sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def bound_tokens_per_s(cfg, weight_bytes: int, batch: int, prompt: int, tokens: int, bandwidth: float,
                       rows_per_prompt: int = 1) -> float:
    """batch tokens per decode step; a step reads the weights and the mean KV cache once, each prompt's
    keys and values once for the `rows_per_prompt` rows that share it (a GRPO group's completions)."""
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * 2  # K and V, bf16
    return batch * bandwidth / (weight_bytes + batch * (prompt / rows_per_prompt + tokens / 2) * kv_per_token)


def lora_policy(folder: str, device, dtype):
    """The base model with GRPO's LoRA; B drawn small so the merged copy differs from the base."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, device_map=device.type, use_kernels=False).eval()
    weight_bytes = sum(p.numel() * p.element_size() for p in base.parameters())
    model = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    gen = torch.Generator(device=device).manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 1e-3, generator=gen)
    return model, weight_bytes


def measure(engine: str, model, decoder, prompts, gen, device) -> tuple[int, float, float | None]:
    """(tokens produced, seconds of the timed call, seconds of the first call when it compiles)."""
    import torch

    from salon.train.engine.choice import trainable_dtypes_kept

    first = None
    decoder = decoder.get(engine) if isinstance(decoder, dict) else decoder
    with torch.no_grad():
        if engine.startswith("compiled"):
            gen.min_new_tokens = None  # no EOS: every row runs max_new_tokens, and the loop runs it (decode.py)
            t0 = time.perf_counter()
            decoder.generate(prompts, gen)
            sync(device)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            produced = decoder.generate(prompts, gen).numel()
            if decoder.last_path != "loop":
                raise RuntimeError(f"the compiled engine ran {decoder.last_path!r}, not its decode loop")
        elif engine == "generate":
            ids = torch.tensor(prompts, device=device)
            model.generate(ids[:, :32], max_new_tokens=8, do_sample=True, pad_token_id=gen.pad_token_id)  # warm-up
            sync(device)
            t0 = time.perf_counter()
            produced = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gen)[:, ids.shape[1]:].numel()
        elif engine == "continuous_batching":
            if device.type == "cuda":
                model.to(torch.bfloat16)  # as TRL casts the model before generate_batch
            generate_batch = trainable_dtypes_kept(model.generate_batch, model)  # the LoRA weights back to fp32 after
            t0 = time.perf_counter()
            outs = generate_batch(inputs=prompts, generation_config=gen, progress_bar=False)
            produced = sum(len(o.generated_tokens) for o in outs.values())
        else:
            raise ValueError(f"unknown engine {engine}")
        sync(device)
    return produced, time.perf_counter() - t0, first


def host_pace(decoder, prompts, cfg) -> dict:
    """Two more calls without the profiler: the host's own time a decode step (the decoder's
    `last_host_ms_per_step`, its waits for the card left out: when it is the call's time a step, the
    host paces the card), and the synchronisations torch reports in a call (`set_sync_debug_mode`: the
    loop asks whether every row finished every SYNC_EVERY steps, so steps / SYNC_EVERY are its own)."""
    import warnings

    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    decoder.generate(prompts, cfg)
    torch.cuda.synchronize()
    wall, host = time.perf_counter() - t0, decoder.last_host_ms_per_step
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            decoder.generate(prompts, cfg)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [str(w.message).splitlines()[0][:120] for w in caught if "synchroniz" in str(w.message)]
    return {"host_ms_per_step": host and round(host, 3), "wall_ms_per_step": round(1e3 * wall / cfg.max_new_tokens, 3),
            "syncs": len(syncs), "sync_kinds": sorted(set(syncs))[:5]}


# the host's launches in the trace: a decode step that is one captured graph is one cudaGraphLaunch and no
# kernel launch of its own (a step split around an op that cannot be captured launches that op eagerly)
LAUNCHES = ("cudaGraphLaunch", "cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx")


def decode_profile(decoder, prompts, gen) -> dict:
    """torch.profiler over one more call of a shape already compiled: CUDA time per decode step by
    kernel name (the top 25), and how much of the call's wall time the card was busy; and the host's
    pace (`host_pace`)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cfg = copy.deepcopy(gen)
    cfg.min_new_tokens = None
    pace = host_pace(decoder, prompts, cfg)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        decoder.generate(prompts, cfg)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    kernels: dict[str, float] = {}
    launches = dict.fromkeys(LAUNCHES, 0)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kernels[e.name] = kernels.get(e.name, 0.0) + e.device_time_total
        elif e.name in launches:
            launches[e.name] += 1
    busy, steps = sum(kernels.values()) / 1e6, gen.max_new_tokens
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:25]
    return {"wall_s": round(wall, 4), "decode_steps": steps, "card_busy_s": round(busy, 4),
            "card_busy_share": round(busy / wall, 4), "ms_per_step": round(1e3 * wall / steps, 3),
            **pace, "launches_per_step": {k: round(v / steps, 2) for k, v in launches.items()},
            "kernels_us_per_step": [{"kernel": k[:160], "us": round(v / steps, 2)} for k, v in top]}


def main(argv: list[str] | None = None) -> int:
    import torch
    from transformers import GenerationConfig
    from torch._dynamo.utils import counters

    from salon.train.engine.decode import GIB, StaticDecoder
    from salon.train.engine.generation import MergedPolicy
    from salon.models.names import resolve_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="random:qwen3-1.7b")
    ap.add_argument("--batches", default="8,64")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--cpu", action="store_true", help="a check of this script on a CPU: tiny model, compile off")
    ap.add_argument("--fail-fast", action="store_true", help="stop at the first engine that fails")
    ap.add_argument("--json", default="")
    ap.add_argument("--add", action="store_true", help="keep the engines already in --json that this run does not "
                    "measure (same device, batch and new tokens)")
    ap.add_argument("--group", type=int, default=1, help="consecutive rows sharing a prompt (GRPO's num_generations)")
    ap.add_argument("--profile", default="", help="the kernels of one more call per compiled engine, as JSON")
    ap.add_argument("--profile-batches", default="8", help="the batches --profile profiles")
    args = ap.parse_args(argv)

    device = torch.device("cpu" if args.cpu else "cuda")
    model_spec, prompt_tokens = ("tiny:qwen3", 32) if args.cpu else (args.model, PROMPT_TOKENS)
    folder = resolve_model(model_spec, Path(tempfile.gettempdir()) / "salon-models")
    model, weight_bytes = lora_policy(folder, device, torch.float32 if args.cpu else torch.bfloat16)
    bandwidth = copy_bandwidth(device)
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    print(f"{name}: copy bandwidth {bandwidth / 1e12:.2f} TB/s; {model_spec} + LoRA r=16, prompt {prompt_tokens}, "
          f"{args.tokens} new tokens", flush=True)

    policy = MergedPolicy(model) if "compiled" in args.engines else None
    fused = MergedPolicy(model, fuse_linears=True) if "_fused" in args.engines else None  # a copy of its own
    decoder = {engine: StaticDecoder((fused if engine.endswith("_fused") else policy).model,
                                     compile=device.type == "cuda", attention=ATTENTION[engine])
               for engine in args.engines.split(",") if engine.startswith("compiled")} if policy else {}
    if policy:
        probe = torch.randint(10, 300, (2, prompt_tokens), device=device)
        with torch.no_grad():
            lp = [torch.log_softmax(m(probe).logits.float(), -1) for m in (model, policy.model)]
        sync(device)
        t0 = time.perf_counter()
        policy.refresh()
        sync(device)
        print(f"  merged copy: {policy.nbytes / GIB:.2f} GiB, refreshed in {time.perf_counter() - t0:.3f} s; max "
              f"|log-prob difference| to the peft model over {probe.numel()} positions: "
              f"{(lp[0] - lp[1]).abs().max().item():.2e}", flush=True)
        del lp
    gen = GenerationConfig(max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=True, top_p=0.95,
                           top_k=20, temperature=1.0, eos_token_id=None, pad_token_id=model.config.pad_token_id,
                           disable_compile=True)  # TRL's own setting; the compiled engine turns compile on
    report = {"device": name, "runs": []}
    earlier = {}  # --add: (batch, new tokens) -> the engines measured before, kept unless measured again
    if args.add and args.json and Path(args.json).is_file():
        before = json.loads(Path(args.json).read_text())
        if before.get("device") != name:
            raise SystemExit(f"--add: {args.json} was measured on {before.get('device')}; write a new file")
        earlier = {(r["batch"], r["new_tokens"]): r["engines"] for r in before["runs"]}
    profiles = []
    for batch in [int(b) for b in args.batches.split(",")]:
        bound = bound_tokens_per_s(model.config, weight_bytes, batch, prompt_tokens, args.tokens, bandwidth)
        group = min(args.group, batch)
        distinct = torch.randint(10, 300, (-(-batch // group), prompt_tokens),
                                 generator=torch.Generator().manual_seed(batch)).tolist()
        prompts = [distinct[i // group] for i in range(batch)]  # consecutive rows share a prompt (--group)
        run = {"batch": batch, "new_tokens": args.tokens, "bound_tokens_per_s": round(bound),
               "engines": dict(earlier.get((batch, args.tokens), {}))}
        report["runs"].append(run)
        print(f" batch {batch}: bound {bound:,.0f} tokens/s", flush=True)
        for engine in args.engines.split(","):
            if device.type == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            graphs = counters["stats"]["unique_graphs"]
            try:
                produced, seconds, first = measure(engine, model, decoder, prompts, copy.deepcopy(gen), device)
            except Exception as e:  # one engine failing leaves the others measured
                print(f"  {engine:20s} failed: {type(e).__name__}: {str(e)[:400]}", flush=True)
                if args.fail_fast:
                    raise
                continue
            rate = produced / seconds
            run["engines"][engine] = {"tokens_per_s": round(rate, 1), "share_of_bound": round(rate / bound, 4)}
            if args.json:  # after every engine, so a run cut short keeps what it measured
                Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
            peak = torch.cuda.max_memory_allocated() / GIB if device.type == "cuda" else float("nan")
            extra = (f"; first call {first:.1f} s, {counters['stats']['unique_graphs'] - graphs} graph(s) compiled"
                     if first is not None else "")
            print(f"  {engine:20s} {produced:7d} tokens in {seconds:6.2f} s = {rate:8.1f} tokens/s "
                  f"({rate / bound:.1%} of the bound), peak {peak:.1f} GiB{extra}", flush=True)
            profiled = str(batch) in args.profile_batches.split(",")
            if args.profile and engine in decoder and device.type == "cuda" and profiled:
                profiles.append({"batch": batch, "engine": engine, **decode_profile(decoder[engine], prompts, gen)})
                Path(args.profile).write_text(json.dumps(profiles, indent=1) + "\n")
        rates = run["engines"]
        if "compiled" in rates and "generate" in rates:
            print(f"  compiled / generate: {rates['compiled']['tokens_per_s'] / rates['generate']['tokens_per_s']:.1f}x",
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
