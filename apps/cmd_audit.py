"""`salon audit`: coverage, diversity, reward components and collapse alarms of a training run.

    salon audit RUN_DIR [--json] [--out DIR] [--window W] [--no-figures] [--suspects K]

Reads RUN_DIR/rollouts/ (written by `salon train`) and computes per step: paint coverage and
blank share, diversity within groups and across prompts, each reward component's mean and std,
bottom / median / top reward and the count under 0.3, frac_reward_zero_std; over the run and the
last window: correlation between components (flagged above 0.85) and saturation. Alarms: coverage
falling, diversity collapsing or a component (gate, judge, an image measure) falling while the reward
rises; the reward's mean or gate pass falling from its best window (audit.fall_window steps, by
audit.reward_fall / audit.gate_pass_fall), naming the last checkpoint-N before the fall and the
violation codes that failed most. The windows and limits are the run's own `audit:` section
(RUN_DIR/salon_train.yaml). Figures (audit.png, correlation.png, image grids) go to --out
(default RUN_DIR/audit/). Exit code 1 when an alarm fired.

--suspects K lists the K highest-reward rollouts an audit measure flags (blank, low coverage,
near-duplicate of another prompt's painting, text-like marks, the collapsed template; see
salon.train.eval.suspects) into RUN_DIR/audit/suspects.json with their PNGs and a grid
(suspects.png), where the app (`salon app --run RUN_DIR`, Suspects tab) opens them for a person
to mark hack or fine. Once marked, every audit reports the share of suspects marked as hacks.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from salon.apps.output import emit


def add_parser(sub) -> None:
    p = sub.add_parser("audit", help="audit a training run's rollouts (coverage, diversity, alarms)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="RUN_DIR", help="a salon train output folder")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.add_argument("--out", help="folder for figures (default RUN_DIR/audit)")
    p.add_argument("--window", type=int, help="steps per comparison window of the alarms (default: the run's audit.window)")
    p.add_argument("--grid-every", type=int, help="an image grid every N steps (default: the run's audit.grid_every)")
    p.add_argument("--no-figures", action="store_true", help="numbers only")
    p.add_argument("--suspects", type=int, metavar="K",
                   help="list the K highest-reward rollouts an audit measure flags, for review in the app")
    p.set_defaults(run=run)


def run(args) -> int:
    from salon.train.record.archive import load_rollouts
    from salon.train.record.audit import audit_run
    from salon.train.config import AuditSettings

    settings = run_audit_settings(args.run_dir)
    settings = AuditSettings(**{**vars(settings), **{k: v for k, v in (("window", args.window),
                                                                       ("grid_every", args.grid_every))
                                                     if v is not None}})
    out = None if args.no_figures else Path(args.out or Path(args.run_dir) / "audit")
    frame = load_rollouts(args.run_dir)  # read once: the audit and the suspects both go through every painting
    report = audit_run(args.run_dir, settings, out, frame=frame)
    report.update(suspect_lists(args.run_dir, args.suspects, frame))
    if args.json:
        emit(report, default=float)
    else:
        print(summary(report))
    return 1 if report["alarms"] else 0


def run_audit_settings(run_dir: str):
    """The audit section the run trained with (RUN_DIR/salon_train.yaml), so that `salon audit` raises
    the alarms the run raised live; defaults for a folder without one."""
    import yaml

    from salon.train.config import AuditSettings

    saved = Path(run_dir) / "salon_train.yaml"
    section = (yaml.safe_load(saved.read_text()) or {}).get("audit") if saved.is_file() else None
    return AuditSettings(**section) if isinstance(section, dict) else AuditSettings(grid_every=0)


def suspect_lists(run_dir: str, k: int | None, frame=None) -> dict:
    """The suspects (found now with --suspects K, else the last list) and how people marked them."""
    from salon.pool.errors import ConfigError
    from salon.train.eval.reviews import Reviews
    from salon.train.eval.suspects import find_suspects, load_suspects, review_summary

    out = {}
    if k is not None:
        if k < 1:
            raise ConfigError([f"--suspects {k}: list at least 1"], "salon audit")
        out["suspects"] = find_suspects(run_dir, k, out=Path(run_dir) / "audit", frame=frame)
    listed = out["suspects"]["suspects"] if k is not None else load_suspects(run_dir)
    if listed:
        marks = {}
        if (Path(run_dir) / "reviews.db").is_file():
            with Reviews.open(run_dir) as reviews:
                marks = reviews.current_marks()
        out["suspect_review"] = review_summary(listed, marks)
    return out


def summary(report: dict) -> str:
    steps = report["steps"]
    first, last = steps[0], steps[-1]

    def f(v):
        return "-" if v is None else f"{v:.3f}"

    # step s: the policy after s optimiser steps wrote these rollouts (checkpoint-s, `salon eval` step s)
    lines = [f"{report['run_dir']}: {report['rollouts']} rollouts over {len(steps)} steps "
             f"(steps {first['step']}..{last['step']}: step s is the policy after s updates)",
             f"{'per step':22}{'step ' + str(first['step']):>10}{'step ' + str(last['step']):>10}"]
    for key in ("reward/mean", "reward/bottom", "reward/median", "reward/top", "reward/under_0.3", "none",
                "gate_pass", "coverage", "blank_share", "diversity_within", "diversity_across",
                "frac_reward_zero_std"):
        lines.append(f"{key:22}{f(first.get(key)):>10}{f(last.get(key)):>10}")
    for c in report["components"]:
        for stat in ("mean", "std"):
            key = f"{c}/{stat}"
            lines.append(f"{key:22}{f(first.get(key)):>10}{f(last.get(key)):>10}")
    checks = report["last_window"]
    if checks["correlated"]:
        lines.append("correlated components (last window): " + ", ".join(
            f"{k} r={checks['correlation'][k]:.2f}" for k in checks["correlated"]))
    if checks["saturated"]:
        lines.append("saturated components (last window): " + ", ".join(checks["saturated"]))
    lines += [f"ALARM step {a['step']}: {a['name']}: {a['message']}" for a in report["alarms"]] or ["no alarms"]
    lines += [f"figure: {p}" for p in report["figures"]]
    if "suspects" in report:
        found = report["suspects"]
        lines.append(f"suspects: {len(found['suspects'])} of {found['flagged']} flagged rollouts, highest reward first "
                     f"(grid {found.get('grid')})")
        lines += [f"  {s['reward']:.3f} step {s['step']} {s['subject'] or ''}: {', '.join(s['flags'])}"
                  for s in found["suspects"]]
    if "suspect_review" in report:
        r = report["suspect_review"]
        share = "-" if r["hack_share"] is None else f"{r['hack_share']:.0%}"
        lines.append(f"suspects marked: {r['marked']} of {r['suspects']}; hacks: {r['hacks']} of {r['verdicts']} "
                     f"marks ({share}); mark them in `salon app --run RUN_DIR`")
    return "\n".join(lines)
