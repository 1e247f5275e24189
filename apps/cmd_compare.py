"""`salon compare`: training runs side by side, the table of the watercolour study.

    salon compare RUN_A RUN_B ... [--json] [--plot FILE]

Per run, steps split into thirds: mean reward by third; rollouts under 0.3 by third (the bottom);
paint coverage, first third against last; best-of-step gain against median gain (last third's
mean of each step's best or median reward minus the first third's: a median gain far above the
best-of-step gain means the bottom rose while the top stayed); and where `salon eval` ran, the
checkpoints best by proxy, oracle and people and the oracle there. With --plot FILE, the curves
go to FILE (nothing is written without it). A run folder that holds two runs is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from salon.apps.output import emit


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare training runs side by side (reward by thirds, coverage, eval)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="salon train output folders")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--plot", metavar="FILE", help="write the curves to FILE (a PNG); without it nothing is written")
    p.set_defaults(run=run)


def run(args) -> int:
    from salon.train.eval.compare_runs import compare_runs

    table = compare_runs(args.run_dirs, Path(args.plot) if args.plot else None)
    if args.json:
        for r in table["runs"]:
            r.pop("curve")
            if r["eval"]:
                r["eval"].pop("curve")
        emit(table)
    else:
        print(render(table))
    return 0


def render(table: dict) -> str:
    runs = table["runs"]

    def f(v, fmt=".3f"):
        return "-" if v is None else format(v, fmt)

    def ev(r, key, fmt=".3f"):
        return "-" if not r["eval"] else f(r["eval"][key], fmt)

    rows = [("steps / rollouts", [f"{r['steps']} / {r['rollouts']}" for r in runs])]
    for i, name in enumerate(("first", "middle", "last")):
        rows.append((f"mean reward, {name} third", [f(r["mean_reward"][i]) for r in runs]))
    for i, name in enumerate(("first", "middle", "last")):
        rows.append((f"under 0.3, {name} third", [f"{r['under_0.3'][i]} ({f(r['under_0.3_share'][i], '.0%')})"
                                                  for r in runs]))
    rows += [("coverage, first third", [f(r["coverage_first"]) for r in runs]),
             ("coverage, last third", [f(r["coverage_last"]) for r in runs]),
             ("best-of-step gain", [f(r["best_of_step_gain"], "+.3f") for r in runs]),
             ("median gain", [f(r["median_gain"], "+.3f") for r in runs]),
             ("eval: best by proxy", [ev(r, "best_by_proxy", "d") for r in runs]),
             ("eval: best by oracle", [ev(r, "best_by_oracle", "d") for r in runs]),
             ("eval: best by people", [ev(r, "best_by_human", "d") for r in runs]),
             ("eval: oracle at base", [ev(r, "oracle_first") for r in runs]),
             ("eval: oracle, best proxy", [ev(r, "oracle_at_best_proxy") for r in runs]),
             ("eval: oracle, last", [ev(r, "oracle_last") for r in runs]),
             ("eval: alarms", [ev(r, "alarms", "d") for r in runs])]
    names = [Path(r["run_dir"]).name for r in runs]
    width = max(14, *(len(n) + 2 for n in names))
    lines = [f"{'':28}" + "".join(f"{n:>{width}}" for n in names)]
    lines += [f"{label:28}" + "".join(f"{v:>{width}}" for v in values) for label, values in rows]
    if table["plot"]:
        lines.append(f"figure: {table['plot']}")
    return "\n".join(lines)
