"""Does the tiny start render at any seed? `salon.train.start.policy` at the defaults, one seed after
another, each start's replies gated and every one that passes rendered in the real sandbox.

    python benchmarks/start_policy_seeds.py                        # seeds 2 3 5 7 11 -> benchmarks/results/
    python benchmarks/start_policy_seeds.py --seeds 7 --render 16  # one seed, the policy's own check
    python benchmarks/start_policy_seeds.py --report-only          # rebuild the results from runs/start-seeds

Each seed is `start(runs/start-seeds/s<seed>, StartConfig(seed=seed, check=64, render=64))`: the SFT
(`sft_minutes`: the sketches, the tokenizer and the training), then 64 replies sampled as `salon
train` samples them, the static gate, the sandbox for each that passes (`minutes`: all of it, by
wall clock; the policy's own check renders 16, not 64). Run it on an idle machine: the seeds run one at
a time, the minutes are what two cores gave, and the load average beside them says how idle they were.
Writes
start_policy_seeds_<suffix>.json:

    {device, config, seeds: [{seed, sft_loss_first, sft_loss_last, replies, static_gate_pass, rendered,
      ok, ok_share_of_rendered, ok_share_of_replies, failure_codes, render_errors, distinct, palettes,
      sft_minutes, minutes, load_before, load_after}], ok_share_of_rendered, ok_share_of_replies}

`ok` is a reply that passed the static gate and rendered with no violation; the failure codes count
each code once per reply (the static gate's, then the sandbox's). Variety: `distinct` counts the
different sketches among the 64 replies (their code as text), `palettes` the palettes they mostly paint
with (salon.train.start.sketches.palette_of: 12 in the corpus).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (2, 3, 5, 7, 11)


def device_label() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"cpu: {cpu}, {os.cpu_count()} cores ({platform.machine()}), SwiftShader"


def seed_row(seed: int, report: dict, loads: tuple[float | None, float | None] = (None, None)) -> dict:
    """One seed's figures from its start_report.json; `loads`: the load average before and after it."""
    check = report["check"]
    replies, passed = check["samples"], round(check["static_gate_pass"] * check["samples"])
    rendered = check.get("rendered", 0)
    ok = round(check["rendered_gate_pass"] * rendered) if rendered else 0
    codes = dict(check["violations"])
    for code, n in check.get("render_violations", {}).items():
        codes[code] = codes.get(code, 0) + n
    return {"seed": seed, "sft_loss_first": round(report["sft_loss_first"], 3),
            "sft_loss_last": round(report["sft_loss_last"], 3), "replies": replies, "static_gate_pass": passed,
            "rendered": rendered, "ok": ok, "ok_share_of_rendered": round(ok / rendered, 3) if rendered else None,
            # every reply that passed was rendered: ok of all the replies sampled
            "ok_share_of_replies": round(ok / replies, 3) if rendered == passed else None,
            "failure_codes": codes, "render_errors": check.get("render_errors", {}),
            "distinct": round(check["distinct"] * replies), "palettes": len(check["palettes"]),
            "sft_minutes": round(report["sft_seconds"] / 60, 2), "minutes": round(report["seconds"] / 60, 2),
            "load_before": loads[0], "load_after": loads[1]}


def one_seed(seed: int, out: Path, render: int) -> dict:
    from salon.train.start.policy import StartConfig, start

    load_before = round(os.getloadavg()[0], 2)
    report = start(out / f"s{seed}", StartConfig(seed=seed, check=64, render=render), progress=False)
    return seed_row(seed, report, (load_before, round(os.getloadavg()[0], 2)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    p.add_argument("--render", type=int, default=64, help="replies rendered per seed (default: every one)")
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "start-seeds", help="where the starts are written")
    p.add_argument("--suffix", default="cpu")
    p.add_argument("--report-only", action="store_true",
                   help="rebuild the results from the starts already in --out (loads from the results file there was)")
    args = p.parse_args(argv)
    from salon.train.start.policy import StartConfig

    path = ROOT / "benchmarks" / "results" / f"start_policy_seeds_{args.suffix}.json"
    rows = []
    # --report-only keeps the load averages the results file had (a report holds none)
    earlier = {r["seed"]: r for r in json.loads(path.read_text())["seeds"]} if args.report_only and path.exists() \
        else {}
    for seed in args.seeds:
        if args.report_only:
            was = earlier.get(seed, {})
            loads = (was.get("load_before"), was.get("load_after"))
            rows.append(seed_row(seed, json.loads((args.out / f"s{seed}" / "start_report.json").read_text()), loads))
        else:
            rows.append(one_seed(seed, args.out, args.render))
        print(json.dumps(rows[-1]), flush=True)
    rendered, ok = sum(r["rendered"] for r in rows), sum(r["ok"] for r in rows)
    result = {"device": device_label(), "config": {**asdict(StartConfig()), "check": 64, "render": args.render},
              "seeds": rows, "ok_share_of_rendered": round(ok / rendered, 3) if rendered else None,
              "ok_share_of_replies": round(ok / sum(r["replies"] for r in rows), 3)
              if all(r["ok_share_of_replies"] is not None for r in rows) else None}
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
