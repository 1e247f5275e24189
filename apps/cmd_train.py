"""`salon train`: GRPO on TRL with render, gate and judge rewards (salon.train.recipe).

    salon train CONFIG.yaml [--output-dir DIR] [--max-steps N] [--save-steps N]
                [--resume latest|DIR | --overwrite] [--set key=value ...] [--json]

CONFIG.yaml is a train config (train/configs/smoke.yaml runs offline on a CPU in about a
minute). --set overrides any field by its dotted name, the value read as YAML, e.g.
--set grpo.beta=0.01 --set judge.references=me/salon-pool@3f2a... Every checkpoint is kept
(OUTPUT_DIR/checkpoint-N); every rollout is archived under OUTPUT_DIR/rollouts/ (see
`salon audit`). An output folder holds one run: one that already holds a run is refused unless
--resume continues it or --overwrite starts over (the old run moves to DIR.old-<time>, never
deleted). Ctrl-C stops the run at once; --resume latest continues it from its last checkpoint.
For several GPUs: accelerate launch -m salon.train.recipe CONFIG.yaml key=value...
"""

from __future__ import annotations

import argparse
import shlex
import sys

from salon.apps.output import emit


def add_parser(sub) -> None:
    p = sub.add_parser("train", help="train a painter with GRPO (render, gate, judge rewards)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", metavar="CONFIG.yaml", help="train config (see train/configs/)")
    p.add_argument("--output-dir", help="where checkpoints, rollouts and audit figures go")
    p.add_argument("--max-steps", type=int, help="GRPO steps to train to (grpo.max_steps)")
    p.add_argument("--save-steps", type=int, help="checkpoint every N steps (grpo.save_steps); all are kept")
    p.add_argument("--resume", help="latest, or a checkpoint-N folder to resume from")
    p.add_argument("--overwrite", action="store_true",
                   help="start over in an --output-dir that holds a run: the old run moves to DIR.old-<time>")
    p.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="override config fields, e.g. --set grpo.beta=0.01 grpo.max_steps=3 (repeatable)")
    p.add_argument("--json", action="store_true",
                   help="print the run summary as JSON (step, last logged reward, seconds, checkpoints, rollouts)")
    p.set_defaults(run=run)


def overrides(args) -> list[str]:
    out = []
    for flag, key in (("output_dir", "output_dir"), ("max_steps", "grpo.max_steps"),
                      ("save_steps", "grpo.save_steps"), ("resume", "resume")):
        value = getattr(args, flag)
        if value is not None:
            out.append(f"{key}={value}")
    if args.overwrite:
        out.append("overwrite=true")
    return out + list(args.overrides)


def run(args) -> int:
    import logging

    from salon.train.config import load_config
    from salon.train.recipe import train

    # salon's own progress at INFO; libraries (httpx's every request, ...) only when they warn
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("salon").setLevel(logging.INFO)
    cfg = load_config(args.config, overrides(args), find_models=True)  # about to train: models looked up too
    try:
        summary = train(cfg)
    except KeyboardInterrupt:
        again = f"salon train {shlex.quote(args.config)} --output-dir {shlex.quote(cfg.output_dir)} --resume latest"
        print(f"salon train: interrupted; continue from the last checkpoint with `{again}`"
              + (" and the same --set flags" if args.overrides else ""), file=sys.stderr)
        return 130
    if args.json:
        emit({k: v for k, v in summary.items() if k != "log_history"})
        return 0
    reward = "-" if summary["reward"] is None else f"{summary['reward']:.3f}"
    print(f"trained to step {summary['global_step']} in {summary['seconds']:.0f} s (last logged reward {reward}); "
          f"checkpoints: {', '.join(summary['checkpoints'])}")
    print(f"rollouts: {summary['rollouts']}  (salon audit {summary['output_dir']})")
    if summary["moved_aside"]:
        print(f"the earlier run in {summary['output_dir']} is now in {summary['moved_aside']}")
    return 0
