"""Time one GRPO step of salon's trainer, split into generation, rendering, judging and optimisation.

    python benchmarks/bench_train_gpu.py --gpu [--paintings DIR] [--tokens N] [--out DIR]   # on the H200
    python benchmarks/bench_train_gpu.py --render [--workers W] [--browsers B]              # here, on the CPU

GPU part (no Hub, no weights, no Chromium there): a randomly initialised Qwen3-1.7B-shaped policy
(bf16, LoRA r=16 on all linear layers, gradient checkpointing, AdamW) and a Qwen2.5-VL-7B-shaped
judge built by benchmarks/bench_judge_gpu.py and run through salon's TransformersPairwiseJudge
(the judges package's prefix-sharing path). One step is what the recipe's GRPO step does with
the prior art's settings (8 generations of one prompt, top-p 0.95, top-k 20, beta 0,
scale_rewards none, DAPO loss, one optimiser step):

  generation    policy.generate of 8 completions of exactly --tokens tokens (a random policy never
                stops early) after a --prompt-tokens prompt (the painting prompt is ~600 tokens)
  judging       judge_group: 8 pre-rendered paintings (PNG files carried in, from `salon render
                curate/examples/*.js`) x 4 references x 2 orders = 64 comparisons
  optimisation  forward with gradients over prompt+completion, per-token log-probs of the
                completion, the DAPO policy-gradient loss, backward, AdamW step

TRL's GRPOTrainer runs these same computations (with beta=0 and one iteration it computes no
extra log-prob passes); trl and datasets (and pyarrow) are not on the device machine, so the
step is written out here instead of importing the trainer. Rendering is measured on the CPU
side (`--render`): the same 8 example sketches through salon's render worker processes.
Results go to DIR/bench_train_gpu.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

# Qwen/Qwen3-1.7B config.json values.
POLICY = dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
              num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
              rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1e6},
              tie_word_embeddings=True, hidden_act="silu")
G, K = 8, 4  # generations per prompt, references per painting


def build_policy(device):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM._from_config(Qwen3Config(**POLICY), dtype=torch.bfloat16, attn_implementation="sdpa")
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-5)
    return model, opt


def sync():
    import torch

    torch.cuda.synchronize()
    return time.perf_counter()


def generate(model, prompt_ids, tokens):
    import torch

    model.eval()  # eval mode: gradient checkpointing stays out of the way and the KV cache is used
    with torch.no_grad():
        out = model.generate(input_ids=prompt_ids.repeat(G, 1), attention_mask=torch.ones_like(prompt_ids).repeat(G, 1),
                             do_sample=True, top_p=0.95, top_k=20, temperature=1.0, max_new_tokens=tokens,
                             min_new_tokens=tokens, pad_token_id=0, use_cache=True)
    return out


def optimise(model, opt, sequences, prompt_len, rewards):
    """DAPO loss with beta=0, one iteration: ratio = exp(logp - logp.detach()) = 1, gradient = -A * dlogp."""
    import torch

    model.train()
    adv = torch.tensor(rewards, device=sequences.device) - sum(rewards) / len(rewards)  # scale_rewards="none"
    logits = model(input_ids=sequences, logits_to_keep=sequences.shape[1] - prompt_len + 1).logits[:, :-1]
    target = sequences[:, prompt_len:]
    logp = torch.log_softmax(logits.float(), -1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
    loss = -(torch.exp(logp - logp.detach()) * adv[:, None]).sum() / target.numel()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss)


def gpu(args) -> dict:
    import torch
    from PIL import Image

    from bench_judge_gpu import build, import_salon

    import_salon()
    from salon.judges.verdict import Reference
    from salon.judges.vlm_transformers import TransformersJudgeConfig, TransformersPairwiseJudge
    from salon.judges.winrate import draw_references, judge_group

    pngs = sorted(Path(args.paintings).glob("*.png"))
    images = [Image.open(p).convert("RGB") for p in pngs]
    candidates, refs = images[:G], [Reference.from_image(im, id=p.stem, tier="love")
                                    for p, im in zip(pngs[G:], images[G:])]
    t0 = time.perf_counter()
    jmodel, processor = build("cuda")
    judge = TransformersPairwiseJudge.from_loaded(jmodel, processor,
                                                  TransformersJudgeConfig(model="qwen2.5-vl-7b-random"))
    policy, opt = build_policy("cuda")
    print(f"built models in {time.perf_counter() - t0:.1f} s; judge sharing={judge.sharing}", flush=True)
    prompt = torch.randint(1000, POLICY["vocab_size"], (1, args.prompt_tokens), device="cuda")
    steps = []
    for i, tokens in enumerate([64] + [args.tokens] * args.steps):  # step 0: warm-up, short
        t = sync()
        seqs = generate(policy, prompt, tokens)
        t_gen = sync() - t
        draw = draw_references(refs, K, seed=i)
        t = sync()
        scored = judge_group(judge, candidates, draw)
        t_judge = sync() - t
        rewards = [s if s is not None else 0.0 for s in scored.scores]
        t = sync()
        optimise(policy, opt, seqs, prompt.shape[1], rewards)
        t_opt = sync() - t
        row = {"step": i, "tokens": tokens, "generation_s": t_gen, "judging_s": t_judge, "optimisation_s": t_opt,
               "judge_none": sum(s is None for s in scored.scores),
               "peak_gib": torch.cuda.max_memory_allocated() / 2**30}
        print(json.dumps(row), flush=True)
        steps.append(row)
    timed = steps[1:]
    return {"policy": "Qwen3-1.7B shape, LoRA r16 all-linear, bf16", "judge": "Qwen2.5-VL-7B shape, bf16",
            "G": G, "K": K, "prompt_tokens": args.prompt_tokens, "completion_tokens": args.tokens, "steps": steps,
            **{f"{k}_median": statistics.median(s[k] for s in timed) for k in
               ("generation_s", "judging_s", "optimisation_s")},
            "device": torch.cuda.get_device_name()}


def render(args) -> dict:
    """One group's rendering on this machine: 8 example sketches through the render workers."""
    from salon.curate.render import RenderConfig
    from salon.train.render_workers import RenderPool

    sketches = sorted((REPO / "curate" / "examples").glob("*.js"))
    sketches = [s for s in sketches if "blank" not in s.name][:G]
    with RenderPool(RenderConfig(browsers=args.browsers), workers=args.workers) as pool:
        pool.submit("function setup(){createCanvas(600,600,WEBGL);brush.circle(0,0,10);}", 0).result()  # warm
        rounds = []
        for r in range(args.rounds):
            t = time.perf_counter()
            results = [f.result() for f in [pool.submit(s.read_text(), r) for s in sketches]]
            rounds.append({"wall_s": time.perf_counter() - t, "per_sketch_ms": [x.render_ms for x in results],
                           "ok": sum(x.ok for x in results)})
            print(json.dumps(rounds[-1]), flush=True)
    import os

    return {"cpus": os.cpu_count(), "workers": args.workers, "browsers": args.browsers, "sketches": G,
            "rounds": rounds, "wall_s_median": statistics.median(r["wall_s"] for r in rounds)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--paintings", default=str(REPO / "out" / "bench-paintings"))
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--prompt-tokens", type=int, default=600)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--browsers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    result = {}
    if args.render:
        result["render"] = render(args)
    if args.gpu:
        result["gpu"] = gpu(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "bench_train_gpu.json" if args.gpu else "bench_train_render.json"
    (out / name).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk not in ("steps", "rounds")} for k, v in result.items()},
                     indent=2))


if __name__ == "__main__":
    main()
