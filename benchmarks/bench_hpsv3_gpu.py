"""HPSv3 on one card beside GRPO's policy and the pairwise judge: time per 8 images, the trio's memory.

    python benchmarks/bench_hpsv3_gpu.py [--steps 5] [--json benchmarks/results/bench_hpsv3_gpu_h200.json]
    python benchmarks/bench_hpsv3_gpu.py --tiny        # the same code on a CPU with tiny models (a check)

Three models on one GPU, built as `salon train` builds them (salon.models.shapes: the real shapes,
random bf16 weights, no Hub) and loaded through salon's own loaders:

  policy  random:qwen3-1.7b     AutoModelForCausalLM + a peft LoRA (r=16, alpha 32, all linear layers),
                                gradient checkpointing, AdamW: lora_1gpu.yaml's policy
  judge   random:qwen2.5-vl-7b  TransformersPairwiseJudge (prefix sharing), a group of 8 paintings x
                                4 references x 2 orders
  hpsv3   random:hpsv3          load_hpsv3: HPSv3.safetensors in the released layout through the strict
                                loader, bf16 backbone, float32 head

Each step runs, in turn, a policy training micro-step on 8 completions (a 600-token prompt plus
--completion tokens, forward and backward: it holds a training step's activations and optimiser
state), the judge on its group, and HPSv3 on the same 8 600x600 paintings (resized to 420 px:
225 image tokens plus ~550 of rubric each), in one forward pass of 8 and, apart, 8 passes of 1.
Medians over --steps after one warm-up step. The JSON has seconds per 8 images, each model's
weights, the peak memory of the trio (allocated and reserved) against the card's, whether it
fits, and HPSv3's time as a share of the steady-state step that benchmarks/bench_train_gpu.py
measured (results/bench_train_gpu_h200.json) next to the judge's share.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_judge_gpu import import_salon, paintings, sync  # noqa: E402

GIB = 2**30
PROMPT_TOKENS = 600
TRAIN_RESULT = REPO / "benchmarks" / "results" / "bench_train_gpu_h200.json"


def memory(device) -> float:
    import torch

    return torch.cuda.memory_allocated() / GIB if device == "cuda" else 0.0


def policy_step(model, optimizer, tokens: int, device):
    """One LoRA training micro-step on 8 random completions: forward, backward, AdamW."""
    import torch

    ids = torch.randint(0, model.config.vocab_size, (8, PROMPT_TOKENS + tokens), device=device)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5, help="timed steps after one warm-up (default 5)")
    ap.add_argument("--completion", type=int, default=512, help="completion tokens per policy sequence (default 512)")
    ap.add_argument("--tiny", action="store_true", help="CPU check with tiny:qwen3, tiny:qwen2_5_vl, tiny:hpsv3")
    ap.add_argument("--json", help="output file (default benchmarks/results/bench_hpsv3_gpu_h200.json; --tiny: none)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "salon-bench-hpsv3"),
                    help="where the random models are built (reused)")
    args = ap.parse_args(argv)
    import_salon()
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from salon.judges.hpsv3 import load_hpsv3
    from salon.judges.registry import load_judge
    from salon.judges.verdict import Reference
    from salon.models.names import resolve_model

    device = "cpu" if args.tiny else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --tiny for a CPU check")
    specs = {"policy": "tiny:qwen3", "judge": "tiny:qwen2_5_vl", "hpsv3": "tiny:hpsv3"} if args.tiny else \
        {"policy": "random:qwen3-1.7b", "judge": "random:qwen2.5-vl-7b", "hpsv3": "random:hpsv3"}
    dtype = torch.float32 if args.tiny else torch.bfloat16
    res = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
           "transformers": __import__("transformers").__version__, "models": specs, "steps": args.steps,
           "completion_tokens": args.completion, "images_per_step": 8}
    t = time.perf_counter()
    folders = {name: resolve_model(spec, args.cache) for name, spec in specs.items()}
    res["build_s"] = round(time.perf_counter() - t, 1)
    print(f"models built in {res['build_s']} s under {args.cache}", flush=True)

    weights = {}
    before = memory(device)
    base = AutoModelForCausalLM.from_pretrained(folders["policy"], dtype=dtype, attn_implementation="sdpa",
                                                use_kernels=False).to(device)
    (getattr(base, "activation_checkpointing_enable", None) or base.gradient_checkpointing_enable)()  # renamed in 5.x
    base.enable_input_require_grads()
    policy = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-5)
    weights["policy"], before = memory(device) - before, memory(device)
    judge = load_judge("transformers", model=folders["judge"], device=device)
    weights["judge"], before = memory(device) - before, memory(device)
    t = time.perf_counter()
    scorer = load_hpsv3(model=folders["hpsv3"], device=device, batch_size=8)
    res["hpsv3_load_s"] = round(time.perf_counter() - t, 1)
    weights["hpsv3"] = memory(device) - before
    res["weights_gib"] = {k: round(v, 2) for k, v in weights.items()}
    print(f"weights on the card (GiB): {res['weights_gib']}; HPSv3 loaded in {res['hpsv3_load_s']} s", flush=True)

    images = paintings(8, seed=0)
    refs = [Reference.from_image(im, id=f"ref-{k}") for k, im in enumerate(paintings(4, seed=1))]
    if device == "cuda":
        torch.cuda.empty_cache()  # what building and loading left cached is not the trio's
        torch.cuda.reset_peak_memory_stats()
    times = {"policy_step_s": [], "judge_group_s": [], "hpsv3_batch8_s": [], "hpsv3_8x_batch1_s": []}
    failed = 0
    for step in range(args.steps + 1):
        row = {}
        for name, run in (("policy_step_s", lambda: policy_step(policy, optimizer, args.completion, device)),
                          ("judge_group_s", lambda: judge.judge(images, refs)),
                          ("hpsv3_batch8_s", lambda: scorer.rate(images)),
                          ("hpsv3_8x_batch1_s", lambda: [scorer.rate([im]) for im in images])):
            sync()
            t = time.perf_counter()
            out = run()
            sync()
            row[name] = time.perf_counter() - t
            if name == "hpsv3_batch8_s":
                failed += sum(not r.ok for r in out)
        if step:  # the first step warms up
            for k, v in row.items():
                times[k].append(v)
        print(f"step {step}{' (warm-up)' if not step else ''}: " +
              ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    res["median_s"] = {k: round(statistics.median(v), 4) for k, v in times.items()}
    res["hpsv3_unanswered"] = failed
    res["hpsv3_images_per_s"] = round(8 / res["median_s"]["hpsv3_batch8_s"], 2)
    if device == "cuda":
        total = torch.cuda.get_device_properties(0).total_memory / GIB
        res["memory_gib"] = {"total": round(total, 1),
                             "peak_allocated": round(torch.cuda.max_memory_allocated() / GIB, 2),
                             "peak_reserved": round(torch.cuda.max_memory_reserved() / GIB, 2)}
        res["fits"] = res["memory_gib"]["peak_reserved"] < 0.95 * total
    if device == "cuda" and TRAIN_RESULT.is_file():  # the same card's measured step
        step_s = json.loads(TRAIN_RESULT.read_text())["engines"]["compiled"]["step_s"]  # the defaults
        res["share_of_train_step"] = {"train_step_s": step_s, "source": str(TRAIN_RESULT.relative_to(REPO)),
                                      "hpsv3": round(res["median_s"]["hpsv3_batch8_s"] / step_s, 4),
                                      "judge": round(res["median_s"]["judge_group_s"] / step_s, 4)}
    print(json.dumps(res, indent=2))
    target = args.json or (None if args.tiny else str(REPO / "benchmarks" / "results" / "bench_hpsv3_gpu_h200.json"))
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(json.dumps(res, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
