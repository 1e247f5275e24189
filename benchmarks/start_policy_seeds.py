"""Does the tiny start render at any seed? `salon.train.start.policy` at the defaults, one seed after
another, each start's replies gated and every one that passes rendered in the real sandbox.

    python benchmarks/start_policy_seeds.py                        # seeds 2 3 5 7 11 -> benchmarks/results/
    python benchmarks/start_policy_seeds.py --seeds 7 --render 16  # one seed, the policy's own check

Each seed is `start(runs/start-seeds/s<seed>, StartConfig(seed=seed, check=64, render=64))`, timed by
wall clock (the SFT, then 64 replies sampled as `salon train` samples them: the static gate, the
sandbox for each that passes). Run it on an idle machine, the seeds one at a time (they are): the
minutes are what two cores gave, and the load average beside them says how idle they were. Writes
start_policy_seeds_<suffix>.json:

    {device, config, seeds: [{seed, sft_loss_first, sft_loss_last, replies, static_gate_pass, rendered,
      ok, ok_share_of_rendered, ok_share_of_replies, failure_codes, render_errors, distinct, palettes,
      minutes, load_before, load_after}], ok_share_of_rendered, ok_share_of_replies}

`ok` is a reply that passed the static gate and rendered with no violation; the failure codes count
each code once per reply (the static gate's, then the sandbox's). Variety: `distinct` counts replies
whose code differs from every other reply's, `palettes` the palettes they mostly paint with
(salon.train.start.sketches.palette_of: 12 in the corpus).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (2, 3, 5, 7, 11)


def device_label() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"cpu: {cpu}, {os.cpu_count()} cores ({platform.machine()}), SwiftShader"


def one_seed(seed: int, out: Path, render: int) -> dict:
    from salon.train.start.policy import StartConfig, start

    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    report = start(out / f"s{seed}", StartConfig(seed=seed, check=64, render=render), progress=False)
    minutes = (time.perf_counter() - t0) / 60
    check = report["check"]
    replies, passed = check["samples"], round(check["static_gate_pass"] * check["samples"])
    ok = round(check["rendered_gate_pass"] * check["rendered"]) if check.get("rendered") else 0
    codes = dict(check["violations"])
    for code, n in check.get("render_violations", {}).items():
        codes[code] = codes.get(code, 0) + n
    return {"seed": seed, "sft_loss_first": round(report["sft_loss_first"], 3),
            "sft_loss_last": round(report["sft_loss_last"], 3), "replies": replies, "static_gate_pass": passed,
            "rendered": check.get("rendered", 0), "ok": ok,
            "ok_share_of_rendered": round(ok / check["rendered"], 3) if check.get("rendered") else None,
            # every reply rendered (render >= what passed): ok of all the replies sampled
            "ok_share_of_replies": round(ok / replies, 3) if check.get("rendered") == passed else None,
            "failure_codes": codes, "render_errors": check.get("render_errors", {}),
            "distinct": round(check["distinct"] * replies), "palettes": len(check["palettes"]),
            "minutes": round(minutes, 2), "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    p.add_argument("--render", type=int, default=64, help="replies rendered per seed (default: every one)")
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "start-seeds", help="where the starts are written")
    p.add_argument("--suffix", default="cpu")
    args = p.parse_args(argv)
    from salon.train.start.policy import StartConfig

    rows = []
    for seed in args.seeds:
        rows.append(one_seed(seed, args.out, args.render))
        print(json.dumps(rows[-1]), flush=True)
    rendered, ok = sum(r["rendered"] for r in rows), sum(r["ok"] for r in rows)
    result = {"device": device_label(), "config": {**asdict(StartConfig()), "check": 64, "render": args.render},
              "seeds": rows, "ok_share_of_rendered": round(ok / rendered, 3) if rendered else None,
              "ok_share_of_replies": round(ok / sum(r["replies"] for r in rows), 3)
              if all(r["ok_share_of_replies"] is not None for r in rows) else None}
    path = ROOT / "benchmarks" / "results" / f"start_policy_seeds_{args.suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
