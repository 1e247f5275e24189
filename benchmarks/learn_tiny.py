"""Does the loop learn? learn_tiny.yaml over (start seed, training seed) pairs, learn_tiny_hack.yaml with its eval
and audit, and the overlapped step's learning beside the synchronous loop's.

    python benchmarks/learn_tiny.py --pairs 2:3 3:4 5:6 7:8 11:12  # 5 pairs + the hack run; writes benchmarks/results/
    python benchmarks/learn_tiny.py --pairs 0:1 --no-hack            # one pair
    python benchmarks/learn_tiny.py --pairs 2:3 3:4 5:6 7:8 11:12 13:14 17:18 19:20 --no-hack \
        --staleness 0 1 2                                                          # learn_tiny_overlap_cpu.json
    python benchmarks/learn_tiny.py --pairs 2:3 3:4 5:6 --no-hack \
        --samplers compiled compiled_fp8                                           # learn_tiny_samplers_cpu.json
    python benchmarks/learn_tiny.py --report-only ...                # recompute the results from runs/ already there
                                                                     # (a run that finished is never trained again)
    python benchmarks/learn_tiny.py --suffix h200 --parallel 3 --set grpo.use_cpu=false   # a GPU node

A pair S:T trains learn_tiny.yaml with `seed=T` from the start policy made at seed S (runs/tiny-start-sS, made by
`python -m salon.train.start.policy runs/tiny-start-sS --seed S` when missing), against the love-tier export
(runs/examples-release, as docs/learn-tiny.md makes it). Every run is the command a user types (`salon train`,
`salon eval`, `salon audit`, in subprocesses, timed by wall clock). From each run's rollout archive, per step: the
group's mean reward, its best, the gate pass, and the judge term over the paintings that passed (`reward_judge`);
the first fifth of the steps against the last fifth. Writes

    learn_tiny_<suffix>.json       {device, seeds, steps, minutes, reward_mean_first, reward_mean_last,
                                    reward_best_first, reward_best_last, gate_pass_first, gate_pass_last,
                                    judge_mean_first, judge_mean_last}   (seeds: the [start, training] pairs;
                                   the figures are means over the pairs; each pair's in learn_tiny_<suffix>_seeds.json)
    learn_tiny_overlap_<suffix>.json   with --staleness 0 1 2: {device, seeds, steps, staleness: {N: the keys above,
                                   and each pair's rise of the group mean and best (last fifth - first), each
                                   pair's falls (the step each collapse alarm first rang) and runs_that_fell; at N > 0
                                   (against_synchronous) rise: the level's, the mean over its pairs; rise_within:
                                   whether it lies within the synchronous pairs' range (synchronous_rise_range;
                                   --synchronous-pairs: more pairs than the overlapped ones); pairs_outside and
                                   pairs_outside_expected: the pairs whose own rise lies outside it, and how many
                                   would with no difference at all; rise_difference: each pair run both ways, its
                                   rises at N less those at 0, and rise_difference_mean: their mean and its 95 %
                                   interval's half-width}, and staleness 1's rise_within and rise_difference at the top}
    learn_tiny_samplers_<suffix>.json  with --samplers: {device, seeds, steps, baseline (the first sampler named),
                                   baseline_rise_range, samplers: {NAME: as a staleness level's above, each after
                                   the first set against it}}
    learn_tiny_hack_<suffix>.json  {device, steps, proxy_first, proxy_last, oracle_first, oracle_last,
                                    alarms, best_by_proxy, best_by_oracle}   (from salon eval and audit)
    learn_tiny_<suffix>_curves.png, learn_tiny_<suffix>_grid.png, learn_tiny_hack_<suffix>_curves.png,
    learn_tiny_hack_<suffix>_grid.png   (docs/learn-tiny.md's figures)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the salon beside this interpreter (a venv), else the one on PATH (a system-wide install)
SALON = str(Path(sys.executable).with_name("salon")) if Path(sys.executable).with_name("salon").exists() \
    else shutil.which("salon") or "salon"
EVAL_PROMPTS = ["sunflower", "blue iris"]


def device_label(overrides: list[str] = ()) -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    label = f"cpu: {cpu}, {os.cpu_count()} cores ({platform.machine()}), SwiftShader"
    if "grpo.use_cpu=false" in overrides:
        import torch

        label = f"policy on {torch.cuda.get_device_name(0)}; render {label}"
    return label


def run(cmd: list[str], log: Path) -> float:
    """Run a salon command, its output to `log`; minutes of wall clock."""
    t0 = time.perf_counter()
    with log.open("w") as f:
        code = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode
    if code not in (0, 1):  # eval and audit exit 1 when an alarm fired
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): see {log}")
    return (time.perf_counter() - t0) / 60


def per_step(run_dir: Path) -> list[dict]:
    """Per step: the group's mean and best reward (None counted out), the share that passed the gate, and the
    judge term's mean over the paintings that passed (NaN where none did)."""
    from salon.train.record.archive import load_rollouts

    df = load_rollouts(run_dir, images=False)
    out = []
    for step, g in df.groupby("step"):
        rewards = g["reward"].dropna()
        judged = g[g["gate_passed"].astype(bool)]["reward_judge"].dropna()
        out.append({"step": int(step), "mean": float(rewards.mean()), "best": float(rewards.max()),
                    "gate_pass": float(g["gate_passed"].mean()),
                    "judge": float(judged.mean()) if len(judged) else float("nan")})
    return out


def falls(run_dir: Path) -> dict[str, int]:
    """The steps where the run's collapse alarms first fired (salon.train.record.audit_collapse: the reward or the
    gate's pass rate fell from its best window), by alarm, from the last checkpoint's log; {} where none did."""
    from salon.train.checkpoints import latest_checkpoint

    last = latest_checkpoint(run_dir)
    first: dict[str, int] = {}
    for row in json.loads((Path(last) / "trainer_state.json").read_text())["log_history"] if last else []:
        for key in row:
            if key.startswith("salon/alarm/") and key.endswith("_falls_from_best"):
                first.setdefault(key[len("salon/alarm/"):], int(row["step"]))
    return first


def fifths(steps: list[dict]) -> dict:
    n = max(1, len(steps) // 5)
    first, last = steps[:n], steps[-n:]

    def m(rows, key):
        values = [r[key] for r in rows if r[key] == r[key]]  # NaN: a step where nothing passed
        return sum(values) / len(values) if values else float("nan")

    return {"reward_mean_first": m(first, "mean"), "reward_mean_last": m(last, "mean"),
            "reward_best_first": m(first, "best"), "reward_best_last": m(last, "best"),
            "gate_pass_first": m(first, "gate_pass"), "gate_pass_last": m(last, "gate_pass"),
            "judge_mean_first": m(first, "judge"), "judge_mean_last": m(last, "judge")}


KEYS = ("reward_mean_first", "reward_mean_last", "reward_best_first", "reward_best_last", "gate_pass_first",
        "gate_pass_last", "judge_mean_first", "judge_mean_last")


def grid_by_step(run_dir: Path, path: Path, rows: int = 5, thumb: int = 112) -> None:
    """A line of paintings per chosen step (evenly spaced from the first to the last), from the archive."""
    from PIL import Image

    from salon.train.record.archive import load_rollouts
    from salon.train.record.image_grid import image_grid

    df = load_rollouts(run_dir)
    steps = sorted(df["step"].unique())
    chosen = sorted({steps[round(i * (len(steps) - 1) / (rows - 1))] for i in range(rows)})
    lines = []
    for s in chosen:
        g = df[df["step"] == s]
        cells = [(Image.open(io.BytesIO(r["image"])).convert("RGB") if r["image"] else None,
                  "gate failed" if not r["gate_passed"] else f"{r['reward']:.2f}") for _, r in g.iterrows()]
        lines.append((f"step {s}", cells))
    image_grid(lines, path, thumb)


def curves(seed_steps: dict[str, list[dict]], path: Path, title: str, keys=("mean", "best")) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(keys) + 1, figsize=(5 * (len(keys) + 1), 3.6))
    for seed, steps in seed_steps.items():
        x = [s["step"] for s in steps]
        for ax, key in zip(axes, (*keys, "gate_pass")):
            ax.plot(x, [s[key] for s in steps], label=str(seed), alpha=0.8)
            ax.set_title({"gate_pass": "gate pass", "judge": f"{title}: judge term over passed"}.get(
                key, f"{title}: group {key}"))
            ax.set_xlabel("step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def start_policy(start: int) -> Path:
    """The start policy made at seed `start` (made now when missing)."""
    folder = ROOT / "runs" / f"tiny-start-s{start}"
    if not (folder / "config.json").is_file():
        minutes = run([sys.executable, "-m", "salon.train.start.policy", str(folder), "--seed", str(start)],
                      folder.parent / f"tiny-start-s{start}.log")
        print(f"start s{start}: {minutes:.1f} min", flush=True)
    return folder


# --samplers: what each sampler sets. learn_tiny.yaml trains every weight, so `auto` generates with TRL's
# transformers generate; the compiled engine (a copy of the policy) is asked for by name, as are float8 weights
# and KV cache (salon.train.engine.fp8_linears, fp8_cache: the sampler off the policy, every step weighed)
SAMPLERS = {"compiled": ["grpo.generation=compiled"],
            "compiled_fp8": ["grpo.generation=compiled", "grpo.generation_weights=fp8", "grpo.generation_kv_cache=fp8"]}


def run_name(pair: tuple[int, int], staleness: int | None, sampler: str | None = None) -> str:
    """learn-tiny-pS-T; -staleN for the overlapped step at staleness N (learn_tiny.yaml's auto staleness is 0: its
    policy has no LoRA, so it generates with TRL's transformers generate, overlapped only when asked); -SAMPLER for
    a sampler of SAMPLERS."""
    return (f"learn-tiny-p{pair[0]}-{pair[1]}" + (f"-stale{staleness}" if staleness else "")
            + (f"-{sampler}" if sampler else ""))


def train_pairs(pairs: list[tuple[int, int]], staleness: int | None, report_only: bool, overrides: list[str],
                parallel: int, sampler: str | None = None) -> tuple[dict, dict]:
    """Each pair's per-step figures and its fifths (with minutes and steps), by "sS-tT"."""
    from concurrent.futures import ThreadPoolExecutor

    def train(pair: tuple[int, int]) -> None:
        run_dir = ROOT / "runs" / run_name(pair, staleness, sampler)
        sets = [f"seed={pair[1]}", f"policy.model={start_policy(pair[0])}", *overrides,
                *([] if staleness is None else [f"grpo.max_staleness={staleness}"]), *SAMPLERS.get(sampler, [])]
        minutes = run([SALON, "train", "train/configs/learn_tiny.yaml", "--output-dir", str(run_dir), "--overwrite",
                       *(a for kv in sets for a in ("--set", kv))], run_dir.parent / f"{run_dir.name}.log")
        (run_dir / "minutes.txt").write_text(f"{minutes:.2f}\n")

    # a run that finished (its minutes written) is read, not trained again: a long benchmark can be resumed
    todo = [] if report_only else [p for p in pairs
                                   if not (ROOT / "runs" / run_name(p, staleness, sampler) / "minutes.txt").is_file()]
    for pair in todo:
        start_policy(pair[0])  # one at a time: each takes the cores
    with ThreadPoolExecutor(max(1, parallel)) as pool:  # side by side, each one's minutes are its own wall clock
        list(pool.map(train, todo))
    steps, figures = {}, {}
    for pair in pairs:
        run_dir = ROOT / "runs" / run_name(pair, staleness, sampler)
        key = f"s{pair[0]}-t{pair[1]}"
        steps[key] = per_step(run_dir)
        figures[key] = {**fifths(steps[key]), "minutes": float((run_dir / "minutes.txt").read_text()),
                        "steps": len(steps[key]), "falls": falls(run_dir)}
        label = ('' if staleness is None else f' staleness {staleness}') + ('' if sampler is None else f' {sampler}')
        print(f"{key}{label}: " + json.dumps({k: v if k == "falls" else round(v, 4) for k, v in figures[key].items()}),
              flush=True)
    return steps, figures


def means(figures: dict) -> dict:
    return {k: sum(f[k] for f in figures.values()) / len(figures) for k in (*KEYS, "minutes")}


def learn(pairs: list[tuple[int, int]], out: Path, suffix: str, report_only: bool, overrides: list[str],
          parallel: int) -> dict:
    steps, figures = train_pairs(pairs, None, report_only, overrides, parallel)
    first = next(iter(steps))
    result = {"device": device_label(overrides), "seeds": [list(p) for p in pairs], "steps": figures[first]["steps"],
              **means(figures)}
    (out / f"learn_tiny_{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"learn_tiny_{suffix}_seeds.json").write_text(json.dumps(figures, indent=2) + "\n")
    curves(steps, out / f"learn_tiny_{suffix}_curves.png", "learn_tiny", keys=("mean", "best", "judge"))
    grid_by_step(ROOT / "runs" / run_name(pairs[0], None), out / f"learn_tiny_{suffix}_grid.png")
    return result


# two-sided 95 % points of Student's t by degrees of freedom; past 10, the normal's with a 1/df correction
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def rise_range(rises: dict[str, dict]) -> dict[str, tuple[float, float]]:
    """The lowest and highest rise of the group mean and of the best over the pairs."""
    return {m: (min(r[m] for r in rises.values()), max(r[m] for r in rises.values())) for m in ("mean", "best")}


def against_synchronous(sync: dict[str, dict], rises: dict[str, dict]) -> dict:
    """One overlapped level's rises against the synchronous pairs' (each {pair: {"mean": rise, "best": rise}}).

    rise_within: the level's rise (the mean over its pairs) lies within the synchronous pairs' range, as
    issue 57 asks. pairs_outside counts the pairs whose own rise lies outside that range, beside what no
    difference at all would give: a draw from the synchronous runs' own distribution falls outside the range
    of n of them with chance 2/(n+1), so 5 pairs against 5 leave 1.7 outside on average, and all 5 lie
    within only 22 % of the time (a per-pair rule fails a loop that learns exactly alike). rise_difference:
    each pair run both ways, its rise here less the synchronous one; rise_difference_mean: their mean and
    the half-width of its 95 % interval (Student's t), the size of difference these pairs can tell apart.
    """
    span = rise_range(sync)
    level = {m: sum(r[m] for r in rises.values()) / len(rises) for m in ("mean", "best")}
    both = sorted(sync.keys() & rises.keys())
    diffs = {k: {m: rises[k][m] - sync[k][m] for m in ("mean", "best")} for k in both}
    summary = {}
    for m in ("mean", "best"):
        d = [diffs[k][m] for k in both]
        mean = sum(d) / len(d) if d else None
        df = len(d) - 1
        sd = (sum((x - mean) ** 2 for x in d) / df) ** 0.5 if df > 0 else None
        t = T95.get(df, 1.96 + 2.4 / max(df, 1))
        summary[m] = {"mean": mean, "ci95": t * sd / len(d) ** 0.5 if df > 0 else None}
    return {"rise": level,
            "rise_within": {m: span[m][0] <= level[m] <= span[m][1] for m in ("mean", "best")},
            "pairs_outside": {m: sum(not span[m][0] <= r[m] <= span[m][1] for r in rises.values())
                              for m in ("mean", "best")},
            "pairs_outside_expected": len(rises) * 2 / (len(sync) + 1),
            "rise_difference": diffs, "rise_difference_mean": summary}


def overlap(pairs: list[tuple[int, int]], levels: list[int], out: Path, suffix: str, report_only: bool,
            overrides: list[str], parallel: int, synchronous: list[tuple[int, int]] | None = None) -> dict:
    """learn_tiny at each grpo.max_staleness in `levels`, every pair (level 0: the `synchronous` pairs, by
    default the same); the rises (last fifth - first) of the group mean and best at each level, whether the
    overlapped ones lie within the synchronous pairs' range, and each pair's rise overlapped less synchronous."""
    by_level = {}
    for level in levels:
        _, figures = train_pairs((synchronous or pairs) if level == 0 else pairs, level, report_only, overrides,
                                 parallel)
        rises = {k: {"mean": f["reward_mean_last"] - f["reward_mean_first"],
                     "best": f["reward_best_last"] - f["reward_best_first"]} for k, f in figures.items()}
        by_level[str(level)] = {**means(figures), "pairs": figures, "rises": rises,
                                "runs_that_fell": sorted(k for k, f in figures.items() if f["falls"])}
    result = {"device": device_label(overrides), "seeds": [list(p) for p in pairs],
              "steps": next(iter(by_level.values()))["pairs"][f"s{pairs[0][0]}-t{pairs[0][1]}"]["steps"],
              "staleness": by_level}
    if "0" in by_level:
        sync = by_level["0"]["rises"]
        result["synchronous_rise_range"] = rise_range(sync)
        for level in (k for k in by_level if k != "0"):  # each overlapped level against the synchronous pairs
            by_level[level].update(against_synchronous(sync, by_level[level]["rises"]))
        if "1" in by_level:  # the first overlapped level's, at the top as this file has always had them
            result["rise_within"] = by_level["1"]["rise_within"]
            result["rise_difference"] = by_level["1"]["rise_difference"]
    (out / f"learn_tiny_overlap_{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def samplers(pairs: list[tuple[int, int]], names: list[str], out: Path, suffix: str, report_only: bool,
             overrides: list[str], parallel: int) -> dict:
    """learn_tiny with each sampler of SAMPLERS in `names`, every pair; the first is the baseline the others'
    rises are set against, as the overlapped levels' are against the synchronous ones."""
    by_sampler = {}
    for name in names:
        _, figures = train_pairs(pairs, None, report_only, overrides, parallel, name)
        rises = {k: {"mean": f["reward_mean_last"] - f["reward_mean_first"],
                     "best": f["reward_best_last"] - f["reward_best_first"]} for k, f in figures.items()}
        by_sampler[name] = {**means(figures), "pairs": figures, "rises": rises,
                            "runs_that_fell": sorted(k for k, f in figures.items() if f["falls"])}
    baseline = by_sampler[names[0]]["rises"]
    for name in names[1:]:
        by_sampler[name].update(against_synchronous(baseline, by_sampler[name]["rises"]))
    result = {"device": device_label(overrides), "seeds": [list(p) for p in pairs],
              "steps": by_sampler[names[0]]["pairs"][f"s{pairs[0][0]}-t{pairs[0][1]}"]["steps"],
              "baseline": names[0], "baseline_rise_range": rise_range(baseline), "samplers": by_sampler}
    (out / f"learn_tiny_samplers_{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def hack(out: Path, suffix: str, report_only: bool, overrides: list[str]) -> dict:
    run_dir = ROOT / "runs" / "learn-tiny-hack"
    if not report_only:
        run_dir.mkdir(parents=True, exist_ok=True)
        sets = [a for kv in overrides for a in ("--set", kv)]
        minutes = run([SALON, "train", "train/configs/learn_tiny_hack.yaml", "--output-dir", str(run_dir), *sets],
                      run_dir.parent / "learn-tiny-hack.log")
        print(f"hack run: {minutes:.1f} min", flush=True)
        run([SALON, "eval", str(run_dir), "--prompts", *EVAL_PROMPTS, "--samples", "4", "--oracle", "measures"],
            run_dir.parent / "learn-tiny-hack-eval.log")
        run([SALON, "audit", str(run_dir), "--json"], run_dir.parent / "learn-tiny-hack-audit.json")
    report = json.loads((run_dir / "eval" / "report.json").read_text())
    audit = json.loads((run_dir.parent / "learn-tiny-hack-audit.json").read_text())
    rows = report["checkpoints"]
    steps = per_step(run_dir)
    result = {"device": device_label(overrides), "steps": len(steps),
              "proxy_first": rows[0]["proxy_mean"], "proxy_last": rows[-1]["proxy_mean"],
              "oracle_first": rows[0]["oracle_mean"], "oracle_last": rows[-1]["oracle_mean"],
              "alarms": {"audit": sorted({a["name"] for a in audit["alarms"]}),
                         "audit_correlated": audit["last_window"]["correlated"],
                         "eval": sorted({a["name"] for a in report["alarms"]})},
              "best_by_proxy": report["best_by_proxy"], "best_by_oracle": report["best_by_oracle"]}
    (out / f"learn_tiny_hack_{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    hack_curves(rows, steps, out / f"learn_tiny_hack_{suffix}_curves.png")
    grid_by_step(run_dir, out / f"learn_tiny_hack_{suffix}_grid.png")
    print("checkpoints: " + "; ".join(f"{r['step']}: proxy {r['proxy_mean']:.3f} oracle {r['oracle_mean']:.3f}"
                                      for r in rows))
    return result


def hack_curves(rows: list[dict], steps: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    a.plot([s["step"] for s in steps], [s["mean"] for s in steps], label="training reward (colourfulness)")
    a.set_title("learn_tiny_hack: the proxy in training")
    a.set_xlabel("step")
    a.legend()
    x = [r["step"] for r in rows]
    b.plot(x, [r["proxy_mean"] for r in rows], "o-", label="proxy (held-out prompts)")
    b.plot(x, [r["oracle_mean"] for r in rows], "s-", label="oracle: measures judge")
    b.plot(x, [r["coverage"] for r in rows], "^--", label="coverage", alpha=0.6)
    b.set_title("salon eval: proxy up, oracle down")
    b.set_xlabel("checkpoint step")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def parse_pairs(texts: list[str], flag: str) -> list[tuple[int, int]]:
    try:
        pairs = [tuple(int(x) for x in t.split(":")) for t in texts]
    except ValueError:
        pairs = []
    if not pairs or any(len(p) != 2 for p in pairs):  # a check, not an assert: python -O keeps it
        raise SystemExit(f"{flag} {' '.join(texts)}: each is START:TRAIN, two integers (e.g. 2:3)")
    return pairs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", nargs="+", default=["2:3", "3:4", "5:6", "7:8", "11:12"], metavar="START:TRAIN",
                   help="start-policy seed : training seed, one run each")
    p.add_argument("--staleness", type=int, nargs="+", metavar="N",
                   help="compare grpo.max_staleness levels (e.g. 0 1): learn_tiny_overlap_SUFFIX.json, not learn_tiny_")
    p.add_argument("--synchronous-pairs", nargs="+", metavar="START:TRAIN",
                   help="with --staleness: the pairs whose synchronous runs set the range (default: --pairs)")
    p.add_argument("--samplers", nargs="+", choices=list(SAMPLERS), metavar="NAME",
                   help=f"compare samplers ({', '.join(SAMPLERS)}; the first is the baseline): "
                        "learn_tiny_samplers_SUFFIX.json, not learn_tiny_")
    p.add_argument("--no-learn", action="store_true", help="only the hack run")
    p.add_argument("--no-hack", action="store_true", help="only the learning runs")
    p.add_argument("--report-only", action="store_true", help="read runs/ already made; run nothing")
    p.add_argument("--suffix", default="cpu", help="results file suffix (cpu, h200)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="passed to every salon train (e.g. grpo.use_cpu=false on a GPU node)")
    p.add_argument("--parallel", type=int, default=1, help="seeds trained side by side (a many-core node)")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs = parse_pairs(args.pairs, "--pairs")
    if args.staleness:
        synchronous = parse_pairs(args.synchronous_pairs, "--synchronous-pairs") if args.synchronous_pairs else None
        print(json.dumps(overlap(pairs, args.staleness, out, args.suffix, args.report_only, args.overrides,
                                 args.parallel, synchronous), indent=2))
    elif args.samplers:
        print(json.dumps(samplers(pairs, args.samplers, out, args.suffix, args.report_only, args.overrides,
                                  args.parallel), indent=2))
    elif not args.no_learn:
        print(json.dumps(learn(pairs, out, args.suffix, args.report_only, args.overrides, args.parallel), indent=2))
    if not args.no_hack:
        print(json.dumps(hack(out, args.suffix, args.report_only, args.overrides), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
