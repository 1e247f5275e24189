"""`salon eval`: every checkpoint of a run on held-out prompts, by the proxy, oracles, craft and people.

    salon eval RUN_DIR [--prompts FILE|SUBJECT ...] [--samples K] [--every N] [--oracle SPEC ...]
               [--resume] [--no-base] [--seed S] [--json]

For the base policy and each kept checkpoint (or every N steps): K paintings per held-out prompt
(subject names, a subjects YAML or a text file of names; default: the bundled subjects the run
never trained on), rendered and gated, scored by the run's own reward recomputed with its config
and pinned references (the proxy), by each --oracle (an ImageJudge by registry name such as
paint_fraction or hpsv3, or a pairwise judge: see salon.train.eval.oracles), and by craft
measures (coverage, blank share, colourfulness, diversity within and across prompts). Blind
checkpoint choices made in the app (`salon app --run RUN_DIR`, Compare, checkpoints mode) become
a win rate per checkpoint with a Wilson interval. Writes RUN_DIR/eval/: data/ (one parquet row
per sample), report.json, plots/. Exit code 1 when an alarm fired (the proxy rose while an
oracle or a craft measure fell).

Every --oracle is checked before anything is generated, in seconds (its arguments, its model,
whether its server answers): problems are listed together and the command exits 2. A score an
oracle could not give during the run is missing, never 0: the output ends with the counts and
their reasons (`missing_reasons` in --json).
"""

from __future__ import annotations

import argparse

from salon.apps.output import emit


def add_parser(sub) -> None:
    p = sub.add_parser("eval", help="evaluate a run's checkpoints on held-out prompts (proxy, oracles, craft)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", metavar="RUN_DIR", help="a salon train output folder")
    p.add_argument("--prompts", nargs="+", default=[], metavar="FILE|SUBJECT",
                   help="held-out subjects, a subjects YAML or a text file of names (default: the bundled "
                        "subjects the run never trained on)")
    p.add_argument("--samples", type=int, default=4, help="paintings per prompt and checkpoint (default 4)")
    p.add_argument("--every", type=int, default=0, metavar="N",
                   help="only checkpoints whose step is a multiple of N, and the last (default: all)")
    p.add_argument("--oracle", action="append", default=[], metavar="SPEC", dest="oracles",
                   help="an independent judge: NAME[,key=value...], e.g. paint_fraction, hpsv3,model=ckpt, "
                        "transformers,model=PATH, openai,model=http://HOST:PORT/v1 (repeatable; the first is "
                        "the report's oracle_mean)")
    p.add_argument("--resume", action="store_true", help="keep checkpoints already evaluated with these settings")
    p.add_argument("--no-base", action="store_true", help="skip the base policy (step 0)")
    p.add_argument("--seed", type=int, default=0, help="the eval's seed: render seeds and sampling (default 0)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    import logging

    from salon.train.eval.config import EvalConfig
    from salon.train.eval.evaluate import evaluate

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    report = evaluate(EvalConfig(args.run_dir, prompts=args.prompts, samples=args.samples, every=args.every,
                                 base=not args.no_base, oracles=args.oracles, resume=args.resume, seed=args.seed))
    if args.json:
        emit(report, default=float)
    else:
        print(summary(report))
    return 1 if report["alarms"] else 0


def summary(report: dict) -> str:
    def f(v, fmt=".3f"):
        return "-" if v is None else format(v, fmt)

    held = [p["subject"] + ("" if p["held_out"] else " (trained on)") for p in report["prompts"]]
    lines = [f"{report['run_dir']}: {len(report['checkpoints'])} checkpoints x {len(held)} prompts x "
             f"{report['samples']} samples ({', '.join(held)})",
             f"evaluated now: {report['evaluated'] or 'none'}; kept from before: {report['resumed'] or 'none'}",
             f"{'step':>6}{'proxy':>8}{'oracle':>8}{'human':>14}{'gate':>7}{'cover':>7}{'blank':>7}{'x-sim':>7}"
             f"{'colour':>8}{'secs':>7}"]
    for r in report["checkpoints"]:
        human = "-" if r["human_win_rate"] is None else \
            f"{r['human_win_rate']:.2f}[{r['human_low']:.2f},{r['human_high']:.2f}]"
        lines.append(f"{r['step']:>6}{f(r['proxy_mean']):>8}{f(r['oracle_mean']):>8}{human:>14}"
                     f"{f(r['gate_pass'], '.2f'):>7}{f(r['coverage'], '.2f'):>7}{f(r['blank_share'], '.2f'):>7}"
                     f"{f(r['cross_prompt_similarity'], '.2f'):>7}{f(r['colourfulness'], '.1f'):>8}"
                     f"{f(r['seconds'], '.1f'):>7}")
    missing = {k: v for k, v in report["missing"].items() if v}
    lines += [f"best by proxy: {report['best_by_proxy']}   best by oracle: {report['best_by_oracle']}   "
              f"best by people: {report['best_by_human']} ({report['human']['comparisons']} blind choices)",
              "missing (never scored 0): " + (", ".join(f"{k} {v}" for k, v in missing.items()) or "none")]
    for column, reasons in report["missing_reasons"].items():  # why, most frequent first
        lines += [f"  {column} {r['count']} x {r['reason']}" for r in reasons[:3]]
        lines += [f"  {column}: {len(reasons) - 3} other reason(s) in report.json"] if len(reasons) > 3 else []
    lines += [f"ALARM step {a['step']}: {a['message']}" for a in report["alarms"]] or ["no alarms"]
    lines += [f"figure: {p}" for p in report["plots"]] + [f"report: {report['report']}"]
    return "\n".join(lines)
