"""Generation throughput on a GPU, per engine, against what the card's memory bandwidth allows.

    python benchmarks/bench_generate_gpu.py [--model random:qwen3-1.7b] [--batch 8] [--tokens 1024] [--json OUT]

GRPO's step is dominated by generating G completions of up to max_completion_length tokens.
Decoding one token for the whole batch reads every weight once and each sequence's KV cache,
so its floor is (weight bytes + KV bytes) / memory bandwidth; tokens/s can be at most
batch / that floor. This script measures, in one run on the same model and prompts:
  generate             transformers' `generate` (grpo.generation=transformers)
  continuous_batching  transformers' paged engine, `generate_batch` (grpo.generation=continuous_batching)
and prints each engine's tokens/s beside the bandwidth bound (measured with a device copy).
vLLM (grpo.generation=vllm_server / vllm_colocate) is measured the same way where it is
installed. The model is `random:` (salon.train.shapes) so no weights are needed; a random
policy never stops early, so every sequence runs its full length.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

PROMPT_TOKENS = 600  # the painting prompt (system + user) is about this long


def copy_bandwidth() -> float:
    """Bytes/s the card moves in a device-to-device copy (read + write counted)."""
    import torch

    x = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        y.copy_(x)
    torch.cuda.synchronize()
    return 2 * x.numel() * 10 / (time.perf_counter() - t0)


def bound_tokens_per_s(model, batch: int, tokens: int, bandwidth: float) -> float:
    """batch tokens per decode step; a step reads the weights and the mean KV cache once."""
    cfg = model.config
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    kv_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 2  # K and V, bf16
    mean_kv = batch * (PROMPT_TOKENS + tokens / 2) * kv_per_token
    return batch * bandwidth / (weight_bytes + mean_kv)


def main(argv: list[str] | None = None) -> int:
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    from salon.train.tiny import resolve_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="random:qwen3-1.7b")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--engines", default="generate,continuous_batching")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)

    folder = resolve_model(args.model, Path(tempfile.gettempdir()) / f"salon-{args.model.replace(':', '-')}")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16, device_map="cuda").eval()
    bandwidth = copy_bandwidth()
    bound = bound_tokens_per_s(model, args.batch, args.tokens, bandwidth)
    rng = torch.Generator().manual_seed(0)
    prompts = torch.randint(10, 300, (args.batch, PROMPT_TOKENS), generator=rng)
    gen = GenerationConfig(max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=True, top_p=0.95,
                           top_k=20, temperature=1.0, eos_token_id=None, pad_token_id=model.config.pad_token_id)
    report = {"device": torch.cuda.get_device_name(), "model": args.model, "batch": args.batch,
              "new_tokens": args.tokens, "prompt_tokens": PROMPT_TOKENS, "copy_bandwidth_gb_s": round(bandwidth / 1e9),
              "bandwidth_bound_tokens_per_s": round(bound), "engines": {}}
    print(f"{report['device']}: copy bandwidth {bandwidth / 1e12:.2f} TB/s; bound for batch {args.batch}: "
          f"{bound:,.0f} tokens/s", flush=True)
    for engine in args.engines.split(","):
        try:
            with torch.no_grad():
                if engine == "generate":
                    model.generate(prompts[:, :32].cuda(), max_new_tokens=8, do_sample=True)  # warm-up
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    out = model.generate(prompts.cuda(), generation_config=gen)
                    torch.cuda.synchronize()
                    produced = (out.shape[1] - PROMPT_TOKENS) * args.batch
                elif engine == "continuous_batching":
                    t0 = time.perf_counter()
                    outs = model.generate_batch(inputs=prompts.tolist(), generation_config=gen)
                    torch.cuda.synchronize()
                    produced = sum(len(o.generated_tokens) for o in outs.values())
                else:
                    raise ValueError(f"unknown engine {engine}")
            seconds = time.perf_counter() - t0
        except Exception as e:
            report["engines"][engine] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            print(f"  {engine:22s} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        rate = produced / seconds
        report["engines"][engine] = {"seconds": round(seconds, 2), "tokens": produced,
                                     "tokens_per_s": round(rate, 1), "share_of_bound": round(rate / bound, 4)}
        print(f"  {engine:22s} {produced:7d} tokens in {seconds:7.2f} s = {rate:9.1f} tokens/s "
              f"({rate / bound:.1%} of the bound)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
