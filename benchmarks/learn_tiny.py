"""Does the loop learn? learn_tiny.yaml over several seeds, and learn_tiny_hack.yaml with its eval and audit.

    python benchmarks/learn_tiny.py                       # 3 seeds + the hack run; writes benchmarks/results/
    python benchmarks/learn_tiny.py --seeds 0 --no-hack   # one seed
    python benchmarks/learn_tiny.py --report-only         # recompute the results from runs/ already there
    python benchmarks/learn_tiny.py --suffix h200 --parallel 3 --set grpo.use_cpu=false   # a GPU node

Needs the start policy (runs/tiny-start: `python -m salon.train.start.policy runs/tiny-start`) and the
love-tier export (runs/examples-release), as docs/learn-tiny.md makes them. Every run is the
command a user types (`salon train`, `salon eval`, `salon audit`, in subprocesses, timed by wall
clock). From each run's rollout archive: per step the group's mean reward, its best, and the gate
pass; the first fifth of the steps against the last fifth. Writes

    learn_tiny_<suffix>.json       {device, seeds, steps, minutes, reward_mean_first, reward_mean_last,
                                    reward_best_first, reward_best_last, gate_pass_first, gate_pass_last}
                                   (means over the seeds; each seed's figures are printed)
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
    """Per step: the group's mean and best reward (None counted out) and the share that passed the gate."""
    from salon.train.record.archive import load_rollouts

    df = load_rollouts(run_dir, images=False)
    out = []
    for step, g in df.groupby("step"):
        rewards = g["reward"].dropna()
        out.append({"step": int(step), "mean": float(rewards.mean()), "best": float(rewards.max()),
                    "gate_pass": float(g["gate_passed"].mean())})
    return out


def fifths(steps: list[dict]) -> dict:
    n = max(1, len(steps) // 5)
    first, last = steps[:n], steps[-n:]

    def m(rows, key):
        return sum(r[key] for r in rows) / len(rows)

    return {"reward_mean_first": m(first, "mean"), "reward_mean_last": m(last, "mean"),
            "reward_best_first": m(first, "best"), "reward_best_last": m(last, "best"),
            "gate_pass_first": m(first, "gate_pass"), "gate_pass_last": m(last, "gate_pass")}


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


def curves(seed_steps: dict[int, list[dict]], path: Path, title: str, keys=("mean", "best")) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(keys) + 1, figsize=(5 * (len(keys) + 1), 3.6))
    for seed, steps in seed_steps.items():
        x = [s["step"] for s in steps]
        for ax, key in zip(axes, (*keys, "gate_pass")):
            ax.plot(x, [s[key] for s in steps], label=f"seed {seed}", alpha=0.8)
            ax.set_title(f"{title}: group {key}" if key != "gate_pass" else "gate pass")
            ax.set_xlabel("step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def learn(seeds: list[int], out: Path, suffix: str, report_only: bool, overrides: list[str],
          parallel: int) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    def train(seed: int) -> float:
        run_dir = ROOT / "runs" / f"learn-tiny-s{seed}"
        run_dir.mkdir(parents=True, exist_ok=True)
        sets = [a for kv in (f"seed={seed}", *overrides) for a in ("--set", kv)]
        minutes = run([SALON, "train", "train/configs/learn_tiny.yaml", "--output-dir", str(run_dir), *sets],
                      run_dir.parent / f"learn-tiny-s{seed}.log")
        (run_dir / "minutes.txt").write_text(f"{minutes:.2f}\n")
        return minutes

    if not report_only:  # seeds side by side share the machine: each one's minutes are its own wall clock
        with ThreadPoolExecutor(max(1, parallel)) as pool:
            list(pool.map(train, seeds))
    seed_steps, minutes, per_seed = {}, {}, {}
    for seed in seeds:
        run_dir = ROOT / "runs" / f"learn-tiny-s{seed}"
        minutes[seed] = float((run_dir / "minutes.txt").read_text())
        seed_steps[seed] = per_step(run_dir)
        per_seed[seed] = {**fifths(seed_steps[seed]), "minutes": minutes[seed], "steps": len(seed_steps[seed])}
        print(f"seed {seed}: " + json.dumps({k: round(v, 4) for k, v in per_seed[seed].items()}), flush=True)
    keys = ("reward_mean_first", "reward_mean_last", "reward_best_first", "reward_best_last", "gate_pass_first",
            "gate_pass_last")
    result = {"device": device_label(overrides), "seeds": seeds, "steps": per_seed[seeds[0]]["steps"],
              "minutes": sum(minutes.values()) / len(seeds),
              **{k: sum(p[k] for p in per_seed.values()) / len(seeds) for k in keys}}
    (out / f"learn_tiny_{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"learn_tiny_{suffix}_seeds.json").write_text(json.dumps(per_seed, indent=2) + "\n")
    curves(seed_steps, out / f"learn_tiny_{suffix}_curves.png", "learn_tiny")
    grid_by_step(ROOT / "runs" / f"learn-tiny-s{seeds[0]}", out / f"learn_tiny_{suffix}_grid.png")
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
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
    if not args.no_learn:
        print(json.dumps(learn(args.seeds, out, args.suffix, args.report_only, args.overrides, args.parallel), indent=2))
    if not args.no_hack:
        print(json.dumps(hack(out, args.suffix, args.report_only, args.overrides), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
