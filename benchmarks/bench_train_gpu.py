"""`salon train` end to end on a GPU node, timed by part: generation, rendering, judging, the rest.

    python benchmarks/bench_train_gpu.py [--steps 5] [--tokens 1024] [--generation transformers] \
        [--out DIR] [--json FILE]

What runs is the real recipe (salon.train.recipe.train): TRL's GRPOTrainer, a peft LoRA on all
linear layers, bf16 with gradient checkpointing, the reward adapter with its render worker
processes, the pairwise judge in the same process on the same GPU, the rollout archive, every
checkpoint and the live audit, from train/configs/lora_1gpu.yaml with these changes:

  policy.model  random:qwen3-1.7b      judge.model  random:qwen2.5-vl-7b   (salon.train.shapes:
                the real shapes with random weights, since the node has no Hub)
  smoke.examples 1.0                    every rollout's code is a bundled example sketch (the
                salon.train.smoke planner), because a random policy writes no sketch and would
                leave nothing to render or judge. Generation still runs on the policy's real
                tokens; the archive's `substituted_example` column and this script's JSON record it.
  judge.references                     six example sketches rendered here at 600x600 (love/okay)

It runs --steps steps, resumes from the last checkpoint for one more step, and loads the
rollout archive with `datasets`. Per step it reports TRL's generation time (timed around the
trainer's `_generate`), the reward call with its render wait and judging (the adapter's own
`salon/time/*` metrics), and the whole step; the JSON also names the device, the engine and
the substitution.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "curate" / "examples"
REFERENCE_SKETCHES = {"love": ["hibiscus_03_layered", "koi_02_swirl", "jellyfish_02_drifting"],
                      "okay": ["mountain_02_collapse", "still_02_teacup", "hibiscus_01_sketch"]}


def render_references(folder: Path, gpu: str) -> Path:
    from salon.curate.render import RenderConfig, render_sketches

    names = [(tier, n) for tier, ns in REFERENCE_SKETCHES.items() for n in ns]
    results = render_sketches([(EXAMPLES / f"{n}.js").read_text() for _, n in names], seeds=0,
                              config=RenderConfig(gpu=gpu, browsers=4))
    for (tier, name), r in zip(names, results):
        if r.png is None:
            raise SystemExit(f"reference {name} did not render: {r.violations} {r.js_errors[:2]}")
        (folder / tier).mkdir(parents=True, exist_ok=True)
        (folder / tier / f"{name}.png").write_bytes(r.png)
    return folder


class Timings:
    """Wall time of each training step and of each `_generate` call, keyed by the step it served."""

    def __init__(self):
        self.generate: dict[int, float] = {}
        self.steps: dict[int, float] = {}

    def install(self):
        from trl import GRPOTrainer

        real_generate, real_step = GRPOTrainer._generate, GRPOTrainer.training_step
        timings = self

        def timed_generate(trainer, *a, **kw):
            t0 = time.perf_counter()
            try:
                return real_generate(trainer, *a, **kw)
            finally:
                step = trainer.state.global_step
                timings.generate[step] = timings.generate.get(step, 0.0) + time.perf_counter() - t0

        def timed_step(trainer, *a, **kw):
            t0 = time.perf_counter()
            try:
                return real_step(trainer, *a, **kw)
            finally:
                timings.steps[trainer.state.global_step] = time.perf_counter() - t0

        GRPOTrainer._generate, GRPOTrainer.training_step = timed_generate, timed_step


def step_rows(summary: dict, timings: Timings) -> list[dict]:
    logs = {int(h["step"]): h for h in summary["log_history"] if "step" in h and "salon/time/reward_s" in h}
    rows = []
    for step, wall in sorted(timings.steps.items()):
        h = logs.get(step + 1, {})
        gen = timings.generate.get(step, 0.0)
        rows.append({"step": step + 1, "step_s": round(wall, 2), "generate_s": round(gen, 2),
                     "reward_s": round(h.get("salon/time/reward_s", float("nan")), 2),
                     "render_wait_s": round(h.get("salon/time/render_wait_s", float("nan")), 2),
                     "judge_s": round(h.get("salon/time/judge_s", float("nan")), 2)})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=1024, help="max_completion_length")
    ap.add_argument("--generation", default="transformers", help="grpo.generation engine")
    ap.add_argument("--gpu-render", default="auto", help="render.gpu")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--browsers", type=int, default=4)
    ap.add_argument("--policy", default="random:qwen3-1.7b")
    ap.add_argument("--judge", default="random:qwen2.5-vl-7b")
    ap.add_argument("--cpu", action="store_true", help="a dry run of this script on a CPU (use tiny models)")
    ap.add_argument("--out", default="/tmp/salon-bench-train")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)

    import torch

    from salon.train.archive import load_rollouts_dataset
    from salon.train.config import load_config
    from salon.train.recipe import train

    out = Path(args.out)
    refs = render_references(out / "refs", args.gpu_render)
    overrides = [f"output_dir={out / 'run'}", f"policy.model={args.policy}", f"judge.model={args.judge}",
                 f"judge.references={refs}", "smoke.examples=1.0", f"grpo.max_steps={args.steps}",
                 "grpo.save_steps=1", "grpo.warmup_steps=0", "grpo.report_to=[]",
                 f"grpo.max_completion_length={args.tokens}", f"grpo.generation={args.generation}",
                 f"render.workers={args.workers}", f"render.browsers={args.browsers}", f"render.gpu={args.gpu_render}",
                 "data.repeat=16", "audit.grid_every=1"] + (["grpo.use_cpu=true", "grpo.bf16=false"] if args.cpu else [])
    timings = Timings()
    timings.install()
    t0 = time.perf_counter()
    first = train(load_config(REPO / "train/configs/lora_1gpu.yaml", overrides))
    first_s = time.perf_counter() - t0
    rows = step_rows(first, timings)
    memory_gib = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0
    timings.steps.clear()
    timings.generate.clear()
    t1 = time.perf_counter()
    resumed = train(load_config(REPO / "train/configs/lora_1gpu.yaml",
                                overrides + ["resume=latest", f"grpo.max_steps={args.steps + 1}"]))
    resumed_s = time.perf_counter() - t1
    rows += step_rows(resumed, timings)
    archive = load_rollouts_dataset(out / "run")
    steady = rows[1:args.steps] or rows
    mean = {k: round(statistics.mean(r[k] for r in steady), 2) for k in ("step_s", "generate_s", "reward_s",
                                                                          "render_wait_s", "judge_s")}
    report = {
        "device": (f"{torch.cuda.device_count()}x {torch.cuda.get_device_name()}" if torch.cuda.is_available()
                   else "CPU") + f", {os.cpu_count()} cores",
        "policy": f"{args.policy} (LoRA r=16 all-linear, bf16, gradient checkpointing)",
        "judge": f"{args.judge} (same process, same GPU, bf16)", "generation": args.generation,
        "num_generations": 8, "max_completion_length": args.tokens, "render_gpu": args.gpu_render,
        "substitution": "every rollout's code replaced by a bundled example sketch (smoke.examples=1.0); "
                        "generation timed on the policy's own tokens",
        "steps": rows, "steady_state_mean": mean,
        "render_wait_share_of_step": round(mean["render_wait_s"] / mean["step_s"], 3),
        "first_run_s": round(first_s, 1), "resumed_run_s": round(resumed_s, 1),
        "global_step_after_resume": resumed["global_step"], "checkpoints": resumed["checkpoints"],
        "peak_gpu_memory_gib": round(memory_gib, 1),
        "archive_rows": len(archive), "archive_steps": sorted(set(archive["step"])),
        "archive_substituted_rows": sum(1 for x in archive["substituted_example"] if x),
        "archive_reward_none": sum(1 for x in archive["reward"] if x is None),
    }
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
