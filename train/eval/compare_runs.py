"""Runs side by side: the table the watercolour study published for its three reward mixes.

    salon compare RUN_A RUN_B ... [--json] [--plot FILE]
    table = compare_runs(["runs/a", "runs/b"])      # {"runs": [...], "plot": ...}

Per run, from its rollout archive (steps split into thirds, first to last):

    mean_reward         mean reward of the rollouts of each third (missing ones left out)
    under_0.3           how many rollouts of each third scored under 0.3 (the "bottom"), and
                        their share of the third's scored rollouts
    coverage            mean paint coverage of the rendered rollouts, first third and last
    best_of_step_gain   mean of each step's best reward, last third minus first
    median_gain         mean of each step's median reward, last third minus first: when it is far
                        above the best-of-step gain, the run's gains are the bottom rising
    eval                from RUN_DIR/eval/report.json when `salon eval` ran: the best checkpoint by
                        proxy, by oracle and by people, and the oracle at the base, at the proxy's
                        best and at the last checkpoint
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def per_step(df):
    """Reward mean, top, median, rollouts under 0.3 and mean coverage of each step (pandas)."""
    scored = df[df["reward"].notna()]
    g = scored.groupby("step")["reward"]
    out = g.agg(mean="mean", top="max", median="median").join(
        scored.assign(under=scored["reward"] < 0.3).groupby("step")["under"].sum().rename("under_0.3"))
    return out.join(df.groupby("step")["coverage"].mean(), how="outer").sort_index()


def _f(v):
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)


def run_summary(run_dir: str | Path) -> dict:
    from salon.train.record.archive import load_rollouts

    df = load_rollouts(run_dir, images=False)
    steps = per_step(df)
    thirds = [list(t) for t in np.array_split(np.array(sorted(df["step"].unique())), 3)]
    part = [df[df["step"].isin(t)] for t in thirds]
    scored = [p[p["reward"].notna()] for p in part]

    def gain(key):
        first, last = steps.loc[thirds[0], key].mean(), steps.loc[thirds[-1], key].mean()
        return _f(last - first)

    return {
        "run_dir": str(run_dir), "steps": int(len(steps)), "rollouts": int(len(df)),
        "thirds": [[int(t[0]), int(t[-1])] if len(t) else None for t in thirds],
        "mean_reward": [_f(s["reward"].mean()) if len(s) else None for s in scored],
        "under_0.3": [int((s["reward"] < 0.3).sum()) for s in scored],
        "under_0.3_share": [_f((s["reward"] < 0.3).mean()) if len(s) else None for s in scored],
        "missing": [int(p["reward"].isna().sum()) for p in part],
        "coverage_first": _f(part[0]["coverage"].mean()), "coverage_last": _f(part[-1]["coverage"].mean()),
        "best_of_step_gain": gain("top"), "median_gain": gain("median"),
        "curve": {"step": [int(s) for s in steps.index], **{k: [_f(v) for v in steps[k]] for k in steps.columns}},
        "eval": eval_figures(run_dir),
    }


def eval_figures(run_dir: str | Path) -> dict | None:
    path = Path(run_dir) / "eval" / "report.json"
    if not path.is_file():
        return None
    report = json.loads(path.read_text())
    rows = {r["step"]: r for r in report["checkpoints"]}
    if not rows:
        return None

    def oracle_at(step):
        return rows[step]["oracle_mean"] if step in rows else None

    first, last = min(rows), max(rows)
    return {"best_by_proxy": report["best_by_proxy"], "best_by_oracle": report["best_by_oracle"],
            "best_by_human": report.get("best_by_human"), "oracle_first": oracle_at(first),
            "oracle_at_best_proxy": oracle_at(report["best_by_proxy"]), "oracle_last": oracle_at(last),
            "oracle_best": oracle_at(report["best_by_oracle"]), "alarms": len(report["alarms"]),
            "curve": {"step": sorted(rows), "proxy": [rows[s]["proxy_mean"] for s in sorted(rows)],
                      "oracle": [rows[s]["oracle_mean"] for s in sorted(rows)]}}


def compare_runs(run_dirs: list[str], plot: Path | None = None) -> dict:
    runs = [run_summary(r) for r in run_dirs]
    out = {"runs": runs, "plot": None}
    if plot is not None:
        out["plot"] = str(plot_curves(runs, plot))
    return out


def plot_curves(runs: list[dict], path: Path) -> Path:
    from salon.train.eval.plots import as_floats, pyplot, save_figure

    plt = pyplot()
    with_eval = [r for r in runs if r["eval"]]
    fig, ax = plt.subplots(1, 4 if with_eval else 3, figsize=(18 if with_eval else 14, 4.2))
    for i, r in enumerate(runs):
        c, name = f"C{i}", Path(r["run_dir"]).name
        x = r["curve"]["step"]
        ax[0].plot(x, as_floats(r["curve"]["mean"]), color=c, label=name)
        ax[0].plot(x, as_floats(r["curve"]["top"]), color=c, linestyle=":", alpha=0.6)
        ax[0].plot(x, as_floats(r["curve"]["median"]), color=c, linestyle="--", alpha=0.6)
        ax[1].plot(x, as_floats(r["curve"]["under_0.3"]), color=c, label=name)
        ax[2].plot(x, as_floats(r["curve"]["coverage"]), color=c, label=name)
        if r["eval"]:
            e = r["eval"]["curve"]
            ax[3].plot(e["step"], as_floats(e["oracle"]), "o-", color=c, label=name)
    titles = ["reward per step (solid mean, dotted best, dashed median)", "rollouts under 0.3 per step",
              "paint coverage per step", "eval: oracle by checkpoint"]
    for axis, title in zip(ax, titles):
        axis.set_title(title, fontsize=9)
        axis.set_xlabel("step")
        axis.legend(fontsize=7)
    return save_figure(fig, path)
