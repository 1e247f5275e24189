"""Audit metrics of a GRPO run: coverage, diversity, reward components, and the collapse alarms.

    salon audit RUN_DIR [--json]            # after the fact, from the rollout archive (figures too)
    report = audit_run("runs/x")            # the same, as a dict

The same functions run live inside the reward adapter (`batch_stats` per reward call, `alarms`
on the per-step history, `window_checks` on the recent rollouts) and after the fact on the
archive, so the numbers a person sees in trackio and in `salon audit` are the same numbers.

Why these: a run of the prior art collapsed into one template (sky band, small sun, tiny
subject, blank lower canvas) while its reward rose, and the signs were in the logs from about
step 100. So we watch paint coverage (share of a 4x4 grid holding paint) and the blank share,
diversity within groups and across prompts, every component's mean and std, correlation between
components (above 0.85 one is a proxy of the other), saturation (a component with almost no
variance gives no signal), the bottom / median / top reward and the count under 0.3, and
`frac_reward_zero_std`. An alarm fires when coverage falls, diversity collapses or any logged
component (gate pass, the judge, an image measure) falls while the reward rises (the last window
of steps against the one before), and when the reward's mean or gate pass falls from its best window
(salon.train.record.audit_collapse: it names the checkpoint before the fall and what failed most).
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from salon.pool.paint import BLANK_FRACTION
from salon.train.config import AuditSettings
from salon.train.record.audit_collapse import NOISE_SE, falls_from_best

MIN_SAMPLES = 8  # fewer rollouts than this say nothing about correlation or saturation


def mean_present(values) -> float | None:
    """The mean of the values that are there (None and NaN left out); None when none are."""
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(values)) if values else None


def is_blank(row: dict) -> bool:
    """A rendered rollout whose canvas is blank: under BLANK_FRACTION paint, or the gate said so."""
    return (row.get("paint_fraction") or 0) < BLANK_FRACTION or "blank_canvas" in (row.get("violations") or [])


def batch_stats(rows: list[dict], images: list, components: list[str]) -> dict:
    """Statistics of one step's rollouts (rows as archived; images as PIL or None)."""
    from salon.judges.image_judges import distance_matrix

    n = len(rows)
    rewards = [r["reward"] for r in rows if r["reward"] is not None]
    missing = [set(r.get("missing") or []) for r in rows]
    rendered = [r for r, im in zip(rows, images) if im is not None]
    out = {
        "rollouts": n,
        "gate_pass": mean_present([float(bool(r["gate_passed"])) for r in rows]),
        "none": sum(r["reward"] is None for r in rows),
        "none_frac": sum(r["reward"] is None for r in rows) / n if n else None,
        "render_unavailable": sum(bool(r["render_unavailable"]) for r in rows),
        "judge_missing": sum("judge" in m for m in missing),
        "absolute_missing": sum("absolute" in m for m in missing),
        "reward/mean": mean_present(rewards),
        "reward/bottom": float(np.min(rewards)) if rewards else None,
        "reward/median": float(np.median(rewards)) if rewards else None,
        "reward/top": float(np.max(rewards)) if rewards else None,
        "reward/under_0.3": sum(v < 0.3 for v in rewards),
        "coverage": mean_present([r.get("coverage") for r in rendered]),
        "blank_share": mean_present([float(is_blank(r)) for r in rendered]),
    }
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r["group"], []).append(i)
    zero_std = [float(np.std(v) < 1e-8) for v in ([rows[i]["reward"] for i in idx if rows[i]["reward"] is not None]
                                                  for idx in groups.values()) if len(v) >= 2]
    out["frac_reward_zero_std"] = mean_present(zero_std)
    painted = [i for i, (r, im) in enumerate(zip(rows, images)) if im is not None and r["gate_passed"]]
    if len(painted) >= 2:
        d = distance_matrix([images[i] for i in painted])
        same = np.array([[rows[a]["group"] == rows[b]["group"] for b in painted] for a in painted])
        off = ~np.eye(len(painted), dtype=bool)
        out["diversity_within"] = float(d[same & off].mean()) if (same & off).any() else None
        out["diversity_across"] = float(d[~same].mean()) if (~same).any() else None
    for c in components:
        values = [r.get(f"reward_{c}") for r in rows if r.get(f"reward_{c}") is not None]
        out[f"{c}/mean"] = float(np.mean(values)) if values else None
        out[f"{c}/std"] = float(np.std(values)) if values else None
    for code in sorted({v for r in rows for v in (r.get("violations") or [])}):
        out[f"violations/{code}"] = sum(code in (r.get("violations") or []) for r in rows) / n
    return out


def window_checks(rows: list[dict], components: list[str], settings: AuditSettings) -> dict:
    """Correlations between components (flag > correlation_max) and saturation (std < saturation_std)."""
    corr, flagged, saturated = {}, [], []
    cols = {c: np.array([np.nan if r.get(f"reward_{c}") is None else r[f"reward_{c}"] for r in rows], dtype=float)
            for c in components}
    for c, v in cols.items():
        present = v[~np.isnan(v)]
        if len(present) >= MIN_SAMPLES and present.std() < settings.saturation_std:
            saturated.append(c)
    names = list(cols)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            x, y = cols[names[a]], cols[names[b]]
            both = ~np.isnan(x) & ~np.isnan(y)
            if both.sum() >= MIN_SAMPLES and x[both].std() > 0 and y[both].std() > 0:
                r = float(np.corrcoef(x[both], y[both])[0, 1])
                corr[f"{names[a]}~{names[b]}"] = r
                if abs(r) > settings.correlation_max:
                    flagged.append(f"{names[a]}~{names[b]}")
    return {"correlation": corr, "correlated": flagged, "saturated": saturated}


def alarms(history: list[dict], settings: AuditSettings) -> list[dict]:
    """Every step where coverage fell, within-group diversity collapsed or a component fell while the
    reward rose.

    At each step, the mean of the last `w` steps is compared with the `w` before them
    (w = settings.window, shrunk to half the history when shorter, never below 3 steps).
    """
    out = []
    w_full = settings.window
    for i in range(len(history)):
        w = min(w_full, (i + 1) // 2)
        if w < max(3, w_full // 4):
            continue
        late, early = history[i - w + 1:i + 1], history[i - 2 * w + 1:i - w + 1]

        def m(rows, key):
            return mean_present([r.get(key) for r in rows])

        r_late, r_early = m(late, "reward/mean"), m(early, "reward/mean")
        if r_late is None or r_early is None or r_late - r_early <= settings.reward_rise:
            continue
        step = history[i]["step"]
        # a component (gate pass, the judge, an image measure) that falls while the reward rises: the
        # reward is climbing on something that component does not see, whether or not it is weighted
        measures = sorted({k[:-len("/mean")] for r in history for k in r if k.endswith("/mean") and k != "reward/mean"})
        watched = [("coverage", "coverage_falls_while_reward_rises", settings.coverage_drop, "a template"),
                   ("diversity_within", "diversity_collapses_while_reward_rises", settings.diversity_drop,
                    "a template")]
        watched += [(f"{c}/mean", f"{c}_falls_while_reward_rises", settings.component_fall, f"what {c} penalises")
                    for c in measures]
        for key, name, limit, look in watched:
            a, b = m(early, key), m(late, key)
            if a is None or b is None:
                continue
            if key.endswith("/mean"):  # a component: its fall must also stand out of the steps' own noise
                fall, noise = a - b, NOISE_SE * standard_error(early, late, key)
                limit = max(limit, noise)
            else:
                fall = (a - b) / a if a else 0.0
            if fall > limit:
                out.append({"name": name, "step": step, "message": (
                    f"{key} {a:.3f} -> {b:.3f} ({(b - a) / a:+.0%}) while reward {r_early:.3f} -> {r_late:.3f} "
                    f"over steps {early[0]['step']}..{late[-1]['step']}: look at the image grids for {look}")})
    return out


def standard_error(early: list[dict], late: list[dict], key: str) -> float:
    """The standard error of the difference of two windows' means of `key`, from its per-step values."""
    def var_over_n(rows):
        v = [r[key] for r in rows if r.get(key) is not None]
        return float(np.var(v, ddof=1)) / len(v) if len(v) > 1 else 0.0
    return math.sqrt(var_over_n(early) + var_over_n(late))


def reward_caption(row: dict) -> str:
    """A rollout's reward as a grid caption: "none" when missing, the gate's first violation after it."""
    label = "none" if row["reward"] is None else f"{row['reward']:.3f}"
    if not row["gate_passed"] and row.get("violations"):
        label += " " + row["violations"][0]
    return label


def save_grid(images: list, rows: list[dict], path: Path, thumb: int = 128) -> Path:
    """Rollout thumbnails, one line per group, captioned with reward (or the gate's first violation)."""
    from salon.train.record.image_grid import image_grid

    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r["group"], []).append(i)
    lines = [("", [(images[i], reward_caption(rows[i])) for i in idx]) for idx in groups.values()]
    return image_grid(lines, path, thumb)


# ---- after the fact: salon audit ------------------------------------------------------------------


def components_of(df) -> list[str]:
    return [c[len("reward_"):] for c in df.columns if c.startswith("reward_")]


def records_of(df) -> list[dict]:
    """Archive rows (a DataFrame from load_rollouts) as dicts: NaN as None, arrays as lists, no image."""
    records = df.drop(columns=["image"], errors="ignore").to_dict("records")
    for r in records:
        for k, v in r.items():
            if isinstance(v, float) and math.isnan(v):
                r[k] = None
            elif isinstance(v, np.ndarray):
                r[k] = list(v)
    return records


def by_step_of(frame) -> tuple[list[dict], list, dict[int, list[int]]]:
    """A frame's rows as records, their images decoded (None where missing), and the row indexes
    of each step, in step order."""
    from PIL import Image

    records = records_of(frame)
    images = [Image.open(io.BytesIO(b)).convert("RGB") if b else None for b in frame["image"]]
    by_step: dict[int, list[int]] = {}
    for i, r in enumerate(records):
        by_step.setdefault(int(r["step"]), []).append(i)
    return records, images, dict(sorted(by_step.items()))


def audit_run(run_dir: str | Path, settings: AuditSettings | None = None, figures: Path | None = None,
              frame=None) -> dict:
    """Per-step statistics, window checks and alarms from a run's archive (`frame`: the archive
    already loaded with its images); figures into `figures`."""
    from salon.train.record.archive import load_rollouts
    from salon.train.record.run_folder import rollouts_folder

    settings = settings or AuditSettings()
    df = load_rollouts(run_dir) if frame is None else frame
    components = components_of(df)
    records, pil, by_step = by_step_of(df)
    steps, history = list(by_step), []
    for step, idx in by_step.items():
        history.append({"step": int(step), **batch_stats([records[i] for i in idx], [pil[i] for i in idx],
                                                         components)})
    last = [r for r in records if r["step"] > steps[-1] - settings.window]
    # RUN_DIR or RUN_DIR/rollouts: the checkpoint-N folders are beside rollouts/
    falls = falls_from_best({step: [records[i] for i in idx] for step, idx in by_step.items()}, settings,
                            rollouts_folder(run_dir).parent)
    report = {"run_dir": str(run_dir), "rollouts": len(records), "steps": history, "components": components,
              "overall": window_checks(records, components, settings),
              "last_window": window_checks(last, components, settings),
              "alarms": sorted(alarms(history, settings) + falls, key=lambda a: a["step"]), "figures": []}
    if figures is not None:
        report["figures"] = plot(report, figures)
        every = settings.grid_every or max(1, len(steps) // 8)
        for step in steps[::every] if len(steps) > 1 else steps:
            idx = by_step[int(step)]
            path = save_grid([pil[i] for i in idx], [records[i] for i in idx],
                             figures / "grids" / f"step-{int(step):06d}.png")  # where training puts them
            report["figures"].append(str(path))
    return report


def plot(report: dict, folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    h = report["steps"]
    x = [s["step"] for s in h]

    def series(key):
        return [np.nan if s.get(key) is None else s[key] for s in h]

    fig, ax = plt.subplots(2, 3, figsize=(15, 8))
    for key in ("reward/bottom", "reward/median", "reward/top", "reward/mean"):
        ax[0, 0].plot(x, series(key), label=key.split("/")[1])
    ax[0, 0].set_title("reward per step")
    ax[0, 0].legend()
    ax[0, 1].plot(x, series("reward/under_0.3"), label="rollouts under 0.3")
    ax[0, 1].plot(x, series("none"), label="missing (None)")
    ax[0, 1].set_title("counts")
    ax[0, 1].legend()
    for key in ("coverage", "blank_share", "gate_pass"):
        ax[0, 2].plot(x, series(key), label=key)
    ax[0, 2].set_title("paint coverage")
    ax[0, 2].legend()
    for key in ("diversity_within", "diversity_across"):
        ax[1, 0].plot(x, series(key), label=key)
    ax[1, 0].set_title("diversity")
    ax[1, 0].legend()
    for c in report["components"]:
        mean, std = np.array(series(f"{c}/mean"), dtype=float), np.array(series(f"{c}/std"), dtype=float)
        ax[1, 1].plot(x, mean, label=c)
        ax[1, 1].fill_between(x, mean - std, mean + std, alpha=0.15)
    ax[1, 1].set_title("reward components (mean ± std)")
    ax[1, 1].legend(fontsize=7)
    ax[1, 2].plot(x, series("frac_reward_zero_std"))
    ax[1, 2].set_title("frac_reward_zero_std")
    for a in report["alarms"]:
        for axis in ax.flat:
            axis.axvline(a["step"], color="red", alpha=0.2)
    fig.tight_layout()
    paths = [folder / "audit.png"]
    fig.savefig(paths[0], dpi=90)
    plt.close(fig)
    corr = report["overall"]["correlation"]
    if corr:
        comps = report["components"]
        m = np.eye(len(comps))
        for key, r in corr.items():
            a, b = key.split("~")
            m[comps.index(a), comps.index(b)] = m[comps.index(b), comps.index(a)] = r
        fig, axis = plt.subplots(figsize=(6, 5))
        im = axis.imshow(m, vmin=-1, vmax=1, cmap="RdBu_r")
        axis.set_xticks(range(len(comps)), comps, rotation=45, ha="right")
        axis.set_yticks(range(len(comps)), comps)
        fig.colorbar(im)
        axis.set_title("correlation between components")
        fig.tight_layout()
        paths.append(folder / "correlation.png")
        fig.savefig(paths[-1], dpi=90)
        plt.close(fig)
    return [str(p) for p in paths]
