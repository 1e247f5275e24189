"""`salon train` end to end on a GPU node, one engine after another, timed by part.

    python benchmarks/bench_train_gpu.py --json benchmarks/results/bench_train_gpu_h200.json
    python benchmarks/bench_train_gpu.py --config train/configs/lora_h200_64.yaml --engines compiled \
        --json benchmarks/results/bench_train_gpu_64_h200.json   # 64 rollouts a step, the H200 recipe
    python benchmarks/bench_train_gpu.py --engines compiled --add --json FILE  # one engine per call, into FILE
    python benchmarks/bench_train_gpu.py --engines compiled,compiled_buckets --json FILE  # two attentions, one run
    python benchmarks/bench_train_gpu.py --engines compiled --add --steps 3 --json FILE \
        --profile benchmarks/results/train_step_profile_h200.json   # and two more steps, one profiled
    python benchmarks/bench_train_gpu.py --engines compiled --render-paths on,off \
        --render-json benchmarks/results/bench_train_render_h200.json   # GPU against SwiftShader rendering, one run
    python benchmarks/bench_train_gpu.py --engines compiled --set render.gl=vulkan-icd --json FILE   # any override
    python benchmarks/bench_train_gpu.py --engines compiled --variant fast grpo.generation_attention=buckets \
        grpo.gradient_checkpointing=false --json FILE   # today's defaults beside a named set of overrides, one run
    python benchmarks/bench_train_gpu.py --engines "" --variant a K=V --variant b K=V --json FILE   # variants alone
    python benchmarks/bench_train_gpu.py --cpu --tokens 32 --steps 3       # the same code on a CPU, tiny models

What runs is the real recipe (salon.train.recipe.train) from `--config` (train/configs/lora_1gpu.yaml;
lora_h200_64.yaml for 64 rollouts a step): TRL's GRPOTrainer, a peft LoRA on all linear layers, bf16,
the reward adapter with its render worker processes, the pairwise judge against k=4 references in the
same process on the same GPU, the rollout archive, with these changes:

  policy.model  random:qwen3-1.7b      judge.model  random:qwen2.5-vl-7b   (salon.models.shapes:
                the real shapes with random weights, since the node has no Hub; built
                once into OUT/models and shared by every run, and each run's output folder
                is removed once its figures are read, so a node's disk holds one copy)
  smoke.examples 1.0                    every rollout's code is a bundled example sketch, because a
                random policy writes no sketch; generation still runs on the policy's own tokens, and
                a random policy never stops, so every completion runs max_completion_length tokens
  judge.references                     six example sketches rendered here at 600x600 (love/okay)
  --prompts-per-step P                  P prompts x 8 completions generated at once per optimiser
                step (per_device_train_batch_size 8, gradient_accumulation_steps P; by default the
                config's gradient_accumulation_steps: 1 in lora_1gpu.yaml, 8 in lora_h200_64.yaml)
  --workers, --browsers                 render.workers and render.browsers (by default the config's)

Each engine (`--engines`: grpo.generation names, or compiled_ATTENTION for grpo.generation=compiled
with grpo.generation_attention=ATTENTION, e.g. compiled_buckets) runs `--steps` steps in its own
process, so peak memory and compile state are its own. So does each `--variant NAME KEY=VALUE ...`,
after the engines, in the order given: a run named NAME (in the JSON, the printout and every file)
whose overrides are its pairs alone, applied last (after --set and the CPU's settings, so a variant
can change them); its name sets no engine. `--engines ""` runs only the variants. Each run's rows are
labelled NAME@render.gpu=VALUE by the value it ran with, every override applied (a variant's own
render.gpu=off is off whatever --gpu-render or --render-paths say, and such a variant runs once). Every
file asked for is written again after each run, so a call killed at its time limit keeps the runs it finished.
Per engine or variant, the JSON holds steady-state means (`steady_steps`: the first step, which loads and
compiles, left out, and in an overlapped run the second too, whose generation ran beside the first, and the
last where a decode would have run beside it; give an overlapped run --steps 5 for two steady steps, and
one at grpo.max_staleness=2, whose first three steps are left out and whose steps alternate, --steps 8 for
two whole pairs) of:
  step_s          one optimiser step, first micro-step to after the optimizer's update
  generation_s    TRL's `_generate` (tokenize, generate, decode)
  tokens_per_s    completion tokens generated / generation_s
  generation_share_of_bound  tokens_per_s against bench_generate_gpu.py's memory-bandwidth bound for
                  the step's generation: its rows generated at once, their mean prompt (read
                  once for a group's rows) and completion lengths, the policy's weight bytes,
                  the copy bandwidth measured in the engine's process after its run
  render_wait_s   the reward's wait for paintings (salon/time/render_wait_s; rendering starts at
                  generation time, so most of it overlaps TRL's log-prob passes), over every reward
                  call of the step (several with grpo.update_per_group: one a micro-batch)
  judge_s         judging (salon/time/judge_s), over the step's reward calls likewise
  optimisation_s  step_s minus TRL's whole rollout (`_generate_and_score_completions`: generation,
                  reward, log-prob passes): the loss's forward and backward and the update
  peak_memory_gib torch.cuda.max_memory_allocated over the engine's run (0 on a CPU)
  staleness       the updates between the weights that sampled a step's completions and the step's (salon.
                  train.engine.overlap): 1 where they were generated during the step before, 2 for the second
                  step of a batch decoded for two, 0 where TRL asked for them and waited
  overlap_s       the time the generation ran while the trainer worked on the step before (0 synchronous);
                  with staleness 1 or 2 generation_s is the sampler's own time (a batch's shared by its steps)
                  and its wait is step_s's share
  rollouts_per_s  completions generated, painted, judged and learned from a second: rows / step_s
The printout (and `--steps-json`) adds, per step, pairwise_judge_s (judge_s's pairwise judge alone:
the rest of it is the CPU-side image judges, decoding and the records), judge_ahead_s (the later
calls' paintings' share of judge_s, by count in the batches that held them: grpo.update_per_group),
judge_calls (the batches the judge was called with over the step), render_max_s and ocr_max_s (the
slowest painting's time in its browser and in the text check), render_mean_s and ocr_mean_s (their
means over the step's paintings), reward_s (the reward function:
render wait, judging, the archive), logprob_s (the rest of TRL's rollout: the log-prob passes and its
bookkeeping) and host_ms_per_step (the compiled engine's host time a decode step, its waits for the
card left out), whole_card_s (how long the decode ahead ran on the whole card once the trainer waited for
it: the card split), and the cores busy on average while generating and while rewarding, the machine's
(generation_cores_machine, reward_cores_machine) and the bench's own process's (PHASE_cores_trainer: the
judge's launches, decoding the paintings), and the CUDA caching allocator's alloc_retries and device_allocs
over the step (a steady step that counts either churns memory between the judge's and the update's shapes),
so what holds a step is measured, not guessed.

`--render-paths on,off` runs each engine once per render.gpu value (the first is the one written to
--json) and writes --render-json as {device, trl, num_generations, max_completion_length, engine,
render_paths: {VALUE: {the keys above}}}: the render wait and the step on the GPU path beside
SwiftShader's, same engine, same run.
"""

from __future__ import annotations

import argparse
import faulthandler
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_generate_gpu import bound_tokens_per_s, copy_bandwidth  # benchmarks/ is on sys.path when run as a script
from step_timings import Timings

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "curate" / "examples"
REFERENCE_SKETCHES = {"love": ["hibiscus_03_layered", "koi_02_swirl", "jellyfish_02_drifting"],
                      "okay": ["mountain_02_collapse", "still_02_teacup", "hibiscus_01_sketch"]}
KEYS = ("step_s", "generation_s", "tokens_per_s", "generation_share_of_bound", "render_wait_s", "judge_s",
        "optimisation_s", "peak_memory_gib", "staleness", "overlap_s", "rollouts_per_s")
DIGITS = {"tokens_per_s": 1, "generation_share_of_bound": 4}  # the others: 2
RUN_NAME = re.compile(r"[A-Za-z0-9_.-]+")  # a run's name names its folder and part file
NUM_GENERATIONS = 8


def render_references(folder: Path, gpu: str) -> Path:
    from salon.curate.sandbox.render import RenderConfig, render_sketches

    names = [(tier, n) for tier, ns in REFERENCE_SKETCHES.items() for n in ns]
    results = render_sketches([(EXAMPLES / f"{n}.js").read_text() for _, n in names], seeds=0,
                              config=RenderConfig(gpu=gpu, browsers=4))
    for (tier, name), r in zip(names, results):
        if r.png is None:
            raise SystemExit(f"reference {name} did not render: {r.violations} {r.js_errors[:2]}")
        (folder / tier).mkdir(parents=True, exist_ok=True)
        (folder / tier / f"{name}.png").write_bytes(r.png)
    return folder


def engine_overrides(engine: str) -> list[str]:
    """The grpo settings of an --engines name: compiled_ATTENTION is the compiled engine with that attention."""
    if engine.startswith("compiled_"):
        return ["grpo.generation=compiled", f"grpo.generation_attention={engine.removeprefix('compiled_')}"]
    return [f"grpo.generation={engine}"]


def variants_of(engines: list[str], variants: list[list[str]]) -> dict[str, list[str]]:
    """Each --variant NAME KEY=VALUE ...'s name -> its salon train overrides, in the order given. A ValueError
    says what is wrong with one: a name taken by an engine or an earlier variant, a name that is not
    [A-Za-z0-9_.-], a pair without '='."""
    named: dict[str, list[str]] = {}
    for name, *pairs in variants:
        if not RUN_NAME.fullmatch(name):
            raise ValueError(f"--variant {name!r}: a name is letters, digits, '_', '.' and '-' (it names the "
                             "run's folder)")
        if name in engines or name in named:
            raise ValueError(f"--variant {name}: the name is taken by "
                             f"{'an engine' if name in engines else 'an earlier --variant'}; runs need their own")
        if bad := [pair for pair in pairs if "=" not in pair or pair.startswith("=")]:
            raise ValueError(f"--variant {name}: {', '.join(bad)}: overrides are KEY=VALUE")
        named[name] = pairs
    return named


def weight_bytes(folder: Path, itemsize: int) -> int:
    """The policy's parameter bytes at `itemsize` bytes each (a model on the meta device: nothing loaded)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder))
    return sum(p.numel() for p in model.parameters()) * itemsize


def generation_bound(timings: Timings, step: int, cfg, nbytes: int, bandwidth: float,
                     whole_step: bool = False) -> float:
    """bench_generate_gpu's bound for one step's generation: its rows generated at once (a call's, or
    with grpo.update_per_group, `whole_step`, every row of the step: the first call generates them all),
    their mean prompt and completion lengths, each prompt read once for its group's rows (the least any
    engine reads; the `filled` kernel reads it so: a bound counting it once a row was passed)."""
    rows = timings.rows.get(step, 0)
    if not rows:
        return float("nan")
    at_once = rows if whole_step else rows / timings.calls[step]
    return bound_tokens_per_s(cfg, nbytes, at_once, timings.prompt_tokens[step] / rows, timings.tokens[step] / rows,
                              bandwidth, rows_per_prompt=min(NUM_GENERATIONS, at_once))


def run_dir(args, engine: str, gpu_render: str) -> Path:
    return Path(args.out) / f"{engine}-{gpu_render}"


def steps_to_run(args) -> int:
    """--steps, and with --profile two more: the profiled step (left out of the means) and one after it, so that
    an overlapped run's profiled step has the next step's decode beside it, as its steady steps have."""
    return args.steps + (2 if args.profile else 0)


def run_overrides(args, engine: str, variant: list[str] | None, gpu_render: str,
                  models: tuple[str, ...] = ()) -> list[str]:
    """One run's salon train overrides in the order load_config applies them (a key's last value wins): the
    bench's, an engine's settings, --set, the CPU's, then a variant's pairs (`variant`; None for an engine)."""
    steps_run = steps_to_run(args)
    engine_part = engine_overrides(engine) if variant is None else []  # a variant's name sets nothing
    overrides = [f"output_dir={run_dir(args, engine, gpu_render)}", *models,
                 f"judge.references={Path(args.out) / 'refs'}", "smoke.examples=1.0", f"grpo.max_steps={steps_run}",
                 f"grpo.save_steps={steps_run}", "grpo.warmup_steps=0", "grpo.report_to=[]", "grpo.logging_steps=1",
                 f"grpo.max_completion_length={args.tokens}", *engine_part,
                 f"grpo.num_generations={NUM_GENERATIONS}", f"grpo.per_device_train_batch_size={NUM_GENERATIONS}",
                 f"grpo.gradient_accumulation_steps={args.prompts_per_step}",
                 f"render.workers={args.workers}", f"render.browsers={args.browsers}", f"render.gpu={gpu_render}",
                 "data.repeat=64", "audit.grid_every=0", *args.set]
    if args.cpu:
        # render.gl='': a recipe's GPU flag set (lora_h200_64.yaml's) has no meaning with render.gpu=off
        overrides += ["grpo.use_cpu=true", "grpo.bf16=false", "grpo.gradient_checkpointing=false", "render.gl=''",
                      "lora.r=4", "lora.alpha=8"]
    return overrides + (variant or [])  # last, so a variant can change what --set and the CPU's settings say


def ran_with(overrides: list[str], key: str) -> str:
    """The value `key` took under these overrides: the last that sets it (as load_config reads them)."""
    return [v for k, _, v in (pair.partition("=") for pair in overrides) if k == key][-1]


def run_label(args, name: str, variant: list[str] | None, gpu_render: str) -> str:
    """A run's name in the printout and the files, by what it ran with: NAME@render.gpu=VALUE, the value its
    overrides left (a variant's own render.gpu=off beats --gpu-render auto)."""
    return f"{name}@render.gpu={ran_with(run_overrides(args, name, variant, gpu_render), 'render.gpu')}"


def run_engine(args, engine: str, variant: list[str] | None, gpu_render: str) -> dict:
    """One engine's run in this process, or a variant's (`variant`: its overrides; None for an engine):
    {"steps": [per-step rows], "peak_memory_gib": x}."""
    import torch
    from transformers import AutoConfig

    from salon.train.record.archive import load_rollouts
    from salon.train.config import load_config
    from salon.train.recipe import train
    from salon.models.names import resolve_model

    # built once into the bench's folder and shared by every run (a random 7B judge is 15 GB on disk)
    policy = resolve_model(args.policy, Path(args.out) / "models")
    judge = resolve_model(args.judge, Path(args.out) / "models")
    steps_run = steps_to_run(args)
    overrides = run_overrides(args, engine, variant, gpu_render, (f"policy.model={policy}", f"judge.model={judge}"))
    profiled = None
    if args.profile:
        from step_profile import ProfiledStep, StepRanges

        StepRanges().install()
        profiled = ProfiledStep(steps_run - 2)
    timings = Timings(profiled)
    timings.install()
    config = load_config(args.config, overrides)
    summary = train(config)
    logs = {int(h["step"]): h for h in summary["log_history"] if "salon/time/reward_s" in h}
    steps = []
    for step in sorted(timings.step):
        if profiled and step == profiled.step:
            continue
        h = logs.get(step + 1, {})
        generate_call = timings.generation.get(step, float("nan"))  # TRL's _generate: with overlap, mostly a wait
        # the sampler's own time where the overlapped rollout logged it (its decode ran beside the step before)
        generation = h.get("salon/overlap/generation_s", generate_call)
        rollout = timings.rollout.get(step, float("nan"))
        part = functools.partial(timings.reward_part, step)
        reward = part("reward_s")
        steps.append({"step": step + 1, "step_s": timings.step[step], "generation_s": generation,
                      "tokens_per_s": timings.tokens.get(step, 0) / generation,
                      "staleness": h.get("salon/overlap/staleness", 0.0),
                      "overlap_s": h.get("salon/overlap/overlap_s", 0.0),
                      "wait_s": h.get("salon/overlap/wait_s", generate_call),
                      "importance_weight_mean": h.get("salon/overlap/importance_weight_mean", float("nan")),
                      "rollouts_per_s": timings.rows.get(step, 0) / timings.step[step],
                      **{name: part(name) for name in ("render_wait_s", "judge_s", "judge_ahead_s", "pairwise_judge_s",
                                                       "render_max_s", "ocr_max_s", "render_mean_s", "ocr_mean_s",
                                                       "judge_calls")},
                      "optimisation_s": timings.step[step] - rollout, "reward_s": reward,
                      "logprob_s": rollout - generate_call - reward,
                      "host_ms_per_step": h.get("salon/generation/host_ms_per_step", float("nan")),
                      # how long the decode ahead ran on the whole card, the trainer waiting for it (overlap.py)
                      "whole_card_s": h.get("salon/generation/whole_card_s", 0.0),
                      **timings.cores.get(step, {}), **timings.allocator.get(step, {})})
    memory = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else 0.0
    # after the peak is read: the copy's 2 GiB buffers stay out of it
    bandwidth = copy_bandwidth(torch.device("cpu" if args.cpu else "cuda"))
    cfg, nbytes = AutoConfig.from_pretrained(policy), weight_bytes(policy, 4 if args.cpu else 2)  # float32 / bf16
    for row in steps:
        row["generation_share_of_bound"] = row["tokens_per_s"] / generation_bound(
            timings, row["step"] - 1, cfg, nbytes, bandwidth, whole_step=config.grpo.update_per_group)
    # the GL path the reward's paintings were drawn on, as the archive recorded it
    gl = load_rollouts(run_dir(args, engine, gpu_render), images=False)["render_gl"].dropna().unique()
    # each reward call's wait for paintings (several a step with grpo.update_per_group): the first group's
    # wait against the later ones', printed beside the step
    waits = {str(step + 1): timings.reward_values(step, "render_wait_s") for step in sorted(timings.step)}
    return {"steps": steps, "peak_memory_gib": memory, "render_gl": sorted(map(str, gl)), "render_waits": waits,
            "profile": profiled.result if profiled else None, "render_gpu": config.render.gpu}


def steady_steps(steps: list[dict]) -> list[dict]:
    """The steps a run's means are taken over. The first loads and compiles. In an overlapped run so are the
    steps generated beside it left out, as many as its staleness (the batch started at the first step): they
    hardly wait for their completions (on an H100 at 8 x 2,048, staleness 1: 7.6-7.9 s against 9.5-9.6 for the
    third). At staleness 2 the steps alternate, one beside the decode of the next two steps' rows (its staleness
    2) and one with the card to itself: whole pairs are kept, the earliest odd step left out. A last step that
    would have had a decode beside it (staleness 1 at 1, 2 at 2) is left out too: nothing decodes beside it,
    there being no step after it to generate for (on an H100 at 64 x 2,048, staleness 1: 23.3 s against 40.1
    for the step before, whose judge and update shared the card with a decode)."""
    stale = int(max((s["staleness"] for s in steps), default=0))
    warmup = 1 + stale
    alone_at_the_end = bool(stale) and steps[-1]["staleness"] == stale
    steady = steps[warmup:len(steps) - alone_at_the_end]
    if not steady:
        print(f"warning: {len(steps)} steps hold no steady one (at staleness {stale} the first {warmup} warm up"
              f"{', and the last ran alone' if alone_at_the_end else ''}): the means include warm-up steps",
              flush=True)
        return steps[-1:]
    return steady[len(steady) % stale:] if stale > 1 and len(steady) >= stale else steady


def steady_mean(part: dict) -> dict:
    steady = steady_steps(part["steps"])
    means = {k: statistics.mean(s[k] for s in steady) for k in KEYS if k != "peak_memory_gib"}
    return {k: round(means[k] if k in means else part["peak_memory_gib"], DIGITS.get(k, 2)) for k in KEYS}


@dataclass
class Finished:
    """What the runs finished so far measured, by the file that holds it."""
    engines: dict = field(default_factory=dict)  # name -> steady means on the first render path (--json)
    by_path: dict = field(default_factory=dict)  # name -> {render.gpu: steady means} (--render-json)
    render_gl: dict = field(default_factory=dict)  # name -> {render.gpu: the GL paths the archive recorded}
    profiles: dict = field(default_factory=dict)  # label -> step_profile's result (--profile)
    steps: dict = field(default_factory=dict)  # label -> per-step rows (--steps-json)


def write_json(path: str, data: dict) -> None:
    """Whole or not at all: a process killed mid-write leaves the file it had."""
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def write_reports(args, head: dict, earlier: dict, finished: Finished, echo: bool = False) -> None:
    """Every file asked for, from the runs finished so far; called after each run, so a call killed at its time
    limit keeps them. head: --json's keys but "engines"; earlier: the engines --add keeps from --json."""
    report = {**head, "engines": {**earlier, **finished.engines}}
    if echo:
        print(json.dumps(report, indent=1))
    if args.json:
        write_json(args.json, report)
    if args.render_json and args.render_paths:
        for engine, runs in finished.by_path.items():
            side = {**head, "engine": engine, "render_paths": runs, "render_gl": finished.render_gl[engine]}
            if echo:
                print(json.dumps(side, indent=1))
            write_json(args.render_json, side)
    if args.profile:
        write_json(args.profile, {"device": head["device"], "num_generations": NUM_GENERATIONS,
                                  "max_completion_length": args.tokens,
                                  "rollouts_per_step": NUM_GENERATIONS * args.prompts_per_step,
                                  "engines": finished.profiles})
    if args.steps_json:
        write_json(args.steps_json, {"device": head["device"], "runs": finished.steps})


def recipe_defaults(args) -> None:
    """--prompts-per-step, --workers and --browsers not given: the config's own values."""
    from salon.train.config import load_config

    config = load_config(args.config)
    if args.prompts_per_step is None:
        args.prompts_per_step = config.grpo.gradient_accumulation_steps
    if args.workers is None:
        args.workers = config.render.workers
    if args.browsers is None:
        args.browsers = config.render.sandbox.browsers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="transformers,compiled", help="grpo.generation engines, in order; "
                    "compiled_ATTENTION: compiled with that grpo.generation_attention (compiled_buckets)")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=2048, help="max_completion_length")
    ap.add_argument("--config", default=str(REPO / "train/configs/lora_1gpu.yaml"), help="the recipe's YAML")
    ap.add_argument("--prompts-per-step", type=int, help="prompts x 8 completions per optimiser step (default: "
                    "the config's grpo.gradient_accumulation_steps)")
    ap.add_argument("--gpu-render", default="auto", help="render.gpu (of the references, and of the runs without "
                    "--render-paths)")
    ap.add_argument("--render-paths", default="", help="render.gpu values to run each engine with, e.g. on,off")
    ap.add_argument("--render-json", default="", help="with --render-paths: write the paths side by side here")
    ap.add_argument("--steps-json", default="", help="every run's per-step rows, with reward_s and logprob_s")
    ap.add_argument("--profile", default="", help="two more steps per engine, the second to last under torch.profiler "
                    "(left out of the means): the card's busy and idle time per phase and its top kernels, as "
                    "JSON (step_profile.py)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="more salon train overrides, for "
                    "every engine (e.g. render.gl=vulkan-icd grpo.gradient_checkpointing=false)")
    ap.add_argument("--variant", action="append", nargs="+", default=[], metavar=("NAME", "KEY=VALUE"),
                    help="one more run after the engines, named NAME, with these overrides alone, applied last "
                    "(repeatable; e.g. fast grpo.generation_attention=buckets grpo.gradient_checkpointing=false)")
    ap.add_argument("--workers", type=int, help="render.workers (default: the config's)")
    ap.add_argument("--browsers", type=int, help="render.browsers (default: the config's)")
    ap.add_argument("--policy", default="random:qwen3-1.7b")
    ap.add_argument("--judge", default="random:qwen2.5-vl-7b")
    ap.add_argument("--cpu", action="store_true", help="a check of this script on a CPU: tiny models")
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "salon-bench-train"))
    ap.add_argument("--json", default="")
    ap.add_argument("--add", action="store_true", help="keep the other engines already in --json (same shape): "
                    "one engine per call where a call's time is limited")
    ap.add_argument("--one", default="", help=argparse.SUPPRESS)  # internal: run one engine or variant, write --part
    ap.add_argument("--part", default="", help=argparse.SUPPRESS)
    ap.add_argument("--one-render", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    from salon.pool.errors import ConfigError

    try:
        recipe_defaults(args)
    except ConfigError as e:
        ap.error(str(e))
    engines = [e for e in args.engines.split(",") if e]  # --engines "": only the variants
    try:
        variants = variants_of(engines, args.variant)
    except ValueError as e:
        ap.error(str(e))
    if not engines and not variants:
        ap.error("nothing to run: --engines is empty and there is no --variant")
    if args.cpu and args.policy.startswith("random:"):
        args.policy, args.judge, args.gpu_render, args.workers, args.browsers = "tiny:qwen3", "tiny:qwen2_5_vl", "off", 1, 1

    refs = Path(args.out) / "refs"
    if args.one:
        faulthandler.enable()  # a run that dies of a signal leaves every thread's Python stack in its output
        Path(args.part).write_text(json.dumps(run_engine(args, args.one, variants.get(args.one), args.one_render)))
        return 0

    import torch
    import trl

    device = (f"{torch.cuda.device_count()}x {torch.cuda.get_device_name()}" if torch.cuda.is_available() and not args.cpu
              else "CPU") + f", {os.cpu_count()} cores"
    head = {"device": device, "trl": trl.__version__, "num_generations": NUM_GENERATIONS,
            "max_completion_length": args.tokens}
    earlier = {}
    if args.add and args.json and Path(args.json).is_file():  # read once, before this call's runs rewrite it
        written = json.loads(Path(args.json).read_text())
        if {k: v for k, v in written.items() if k != "engines"} != head:
            raise SystemExit(f"--add: {args.json} was measured elsewhere or in another shape; write a new file")
        earlier = written["engines"]
        for row in earlier.values():  # rows from before the overlapped step: synchronous, by construction
            row.setdefault("staleness", 0.0)
            row.setdefault("overlap_s", 0.0)
            row.setdefault("rollouts_per_s", round(NUM_GENERATIONS * args.prompts_per_step / row["step_s"], 2))
    render_references(refs, args.gpu_render)
    paths = args.render_paths.split(",") if args.render_paths else [args.gpu_render]
    finished, failed = Finished(), []
    for engine in [*engines, *variants]:
        for gpu_render in paths:
            label = run_label(args, engine, variants.get(engine), gpu_render)  # by what it runs with
            ran = label.partition("@render.gpu=")[2]
            if ran in finished.by_path.get(engine, {}) or label in failed:
                print(f"{label}: its overrides set render.gpu, whatever --render-paths says: run once", flush=True)
                continue
            part = Path(args.out) / f"{engine}-{gpu_render}.json"
            cmd = [sys.executable, __file__, *(argv if argv is not None else sys.argv[1:]), "--one", engine,
                   "--one-render", gpu_render, "--part", str(part), "--out", args.out]
            t0 = time.perf_counter()
            part.unlink(missing_ok=True)
            code = subprocess.run(cmd).returncode
            if code != 0 and not part.is_file():
                print(f"{label}: the run failed (its output is above)", flush=True)
                failed.append(label)
                continue
            if code != 0:  # its figures were written: they are kept, and the exit is told
                print(f"{label}: the run wrote its figures, then its process exited with {code} (its output is "
                      "above)", flush=True)
                failed.append(label)
            shutil.rmtree(run_dir(args, engine, gpu_render), ignore_errors=True)  # its checkpoint and archive
            result = json.loads(part.read_text())
            if result["render_gpu"] != ran:  # the config as the run loaded it has the last word
                ran = result["render_gpu"]
                label = f"{engine}@render.gpu={ran}"
            finished.steps[label] = result["steps"]
            if result.get("profile"):
                finished.profiles[label] = result["profile"]
            finished.render_gl.setdefault(engine, {})[ran] = result["render_gl"]
            for row in result["steps"]:
                print(f"  {label} step {row['step']}: " + ", ".join(
                    f"{k} {v:.2f}" for k, v in row.items() if k != "step"), flush=True)
                waits = result["render_waits"].get(str(row["step"]), [])
                print(f"  {label} step {row['step']}: waits for paintings, call by call: "
                      + " ".join(f"{w:.2f}" for w in waits), flush=True)
            finished.by_path.setdefault(engine, {})[ran] = steady_mean(result)
            finished.engines.setdefault(engine, finished.by_path[engine][ran])  # its first run, for --json
            print(f"{label}: {finished.by_path[engine][ran]} ({time.perf_counter() - t0:.0f} s in all)", flush=True)
            write_reports(args, head, earlier, finished)
    write_reports(args, head, earlier, finished, echo=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
