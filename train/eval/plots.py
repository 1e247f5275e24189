"""The eval's figures (matplotlib, PNG) in RUN_DIR/eval/plots/.

    proxy_oracle.png   the proxy and every oracle by step on one chart (oracles on the right axis,
                       their own scale), the human win rate with its Wilson interval, alarms as
                       red bands, the best checkpoints by proxy and by oracle as dotted lines
    craft.png          coverage, blank share, gate pass, within-prompt diversity and cross-prompt
                       similarity by step; colourfulness on its own panel
    grid.png           every checkpoint's paintings (a line each) of the same prompts and seeds
                       (a column each), captioned with the proxy and first oracle
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np


def as_floats(values) -> np.ndarray:
    """Values to plot, a missing one (None) as NaN: a gap in the line, not a zero."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _series(rows: list[dict], key: str, sub: str | None = None):
    return as_floats((r.get(key) or {}).get(sub) if sub else r.get(key) for r in rows)


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_proxy_oracle(report: dict, path: Path) -> Path:
    plt = pyplot()
    rows = report["checkpoints"]
    x = [r["step"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot(x, _series(rows, "proxy_mean"), "o-", color="tab:blue", label="proxy (the run's reward)")
    human = _series(rows, "human_win_rate")
    if not np.isnan(human).all():
        low, high = _series(rows, "human_low"), _series(rows, "human_high")
        ax.errorbar(x, human, yerr=np.clip([human - low, high - human], 0, None), fmt="s--", color="tab:green", capsize=4,
                    label="human win rate (Wilson 95%)")
    ax.set_xlabel("step")
    ax.set_ylabel("proxy, human win rate")
    right = ax.twinx()
    for i, label in enumerate(rows[0]["oracles"] if rows else {}):
        right.plot(x, _series(rows, "oracles", label), "^-", color=f"C{i + 3}", label=f"oracle: {label}")
    right.set_ylabel("oracle")
    _at_least(ax, 0.1)
    _at_least(right, 0.05)
    ax.set_xticks(x)
    for a in report["alarms"]:
        ax.axvline(a["step"], color="red", alpha=0.25)
    for key, style in (("best_by_proxy", "tab:blue"), ("best_by_oracle", "C3")):
        if report.get(key) is not None:
            ax.axvline(report[key], color=style, linestyle=":", alpha=0.7)
    lines = ax.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="best")
    ax.set_title("proxy and oracle by checkpoint (red: alarm, dotted: best)")
    return save_figure(fig, path)


def plot_craft(report: dict, path: Path) -> Path:
    plt = pyplot()
    rows = report["checkpoints"]
    x = [r["step"] for r in rows]
    fig, (ax, colour) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [2, 1]})
    for key in ("coverage", "blank_share", "gate_pass", "diversity_within", "cross_prompt_similarity"):
        ax.plot(x, _series(rows, key), "o-", label=key)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("step")
    ax.legend(fontsize=8)
    ax.set_title("craft measures by checkpoint")
    colour.plot(x, _series(rows, "colourfulness"), "o-", color="tab:purple")
    _at_least(colour, 5.0)
    ax.set_xticks(x)
    colour.set_xticks(x)
    colour.set_xlabel("step")
    colour.set_title("colourfulness (Hasler-Suesstrunk)")
    for a in report["alarms"]:
        for axis in (ax, colour):
            axis.axvline(a["step"], color="red", alpha=0.25)
    return save_figure(fig, path)


def plot_grid(frame, report: dict, path: Path, columns: int) -> Path:
    """One line per checkpoint, one column per (prompt, seed): the first sample of every prompt,
    then the second, ... up to `columns`."""
    from PIL import Image

    from salon.train.record.image_grid import image_grid

    keys = frame.sort_values(["position", "group"], kind="stable")[["prompt", "seed", "subject"]]
    keys = keys.drop_duplicates(["prompt", "seed"]).head(columns)
    first = next(iter(report["checkpoints"][0]["oracles"]), None) if report["checkpoints"] else None
    cells = {(int(r.step), r.prompt, int(r.seed)): r for r in frame.itertuples()}
    lines = []
    for row in report["checkpoints"]:
        step, line = row["step"], []
        for k in keys.itertuples():
            r = cells.get((step, k.prompt, int(k.seed)))
            if r is None:
                line.append((None, "not evaluated"))
                continue
            image = Image.open(io.BytesIO(r.image)).convert("RGB") if r.image else None
            caption = "none" if _nan(r.reward) else f"{r.reward:.2f}"
            if first is not None:
                value = getattr(r, f"oracle_{first}")
                caption += " / " + ("-" if _nan(value) else f"{value:.2f}")
            if not r.gate_passed and len(r.violations):
                caption += " " + r.violations[0]
            line.append((image, caption))
        lines.append(("base" if step == 0 else f"step {step}", line))
    names = [f"{k.subject or 'prompt'} #{k.seed % 1000}" for k in keys.itertuples()]
    return image_grid(lines, path, thumb=128, columns=names)


def _at_least(axis, span: float) -> None:
    """Widen an axis to `span` around its data: equal values must not look like a trend."""
    low, high = axis.get_ylim()
    if high - low < span:
        mid = (low + high) / 2
        axis.set_ylim(mid - span / 2, mid + span / 2)


def _nan(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def save_figure(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def plot_all(frame, report: dict, folder: Path, columns: int = 8) -> list[str]:
    return [str(p) for p in (plot_proxy_oracle(report, folder / "proxy_oracle.png"),
                             plot_craft(report, folder / "craft.png"),
                             plot_grid(frame, report, folder / "grid.png", columns))]
