"""The eval report: per checkpoint proxy, oracles, craft and human win rate; the best; the alarms.

    report = build_report(frame, choices, ["paint_fraction"], config)   # frame: EvalDataset.frame()
    report["checkpoints"][i]["proxy_mean"], report["best_by_oracle"], report["alarms"]

Per checkpoint (`checkpoints`, one entry per evaluated step, 0 = the base policy):

    proxy_mean          mean of the run's own reward (`reward`, gate penalty included) over the
                        samples it scored; `proxy_missing` counts the samples it could not score
    oracle_mean         the first oracle's mean over the paintings that passed the gate (`oracles`:
                        every oracle's; `oracle_missing`: their counts of paintings left unscored)
    gate_pass           share of samples that passed the gate: read the oracle beside it
    coverage            mean share of the 4x4 grid holding paint, over rendered paintings
    blank_share         share of rendered paintings that are blank (salon.pool.paint)
    colourfulness       mean Hasler-Suesstrunk colourfulness of rendered paintings
    diversity_within    mean distance between paintings of one prompt (0 identical .. 1)
    cross_prompt_similarity  1 - mean distance between paintings of different prompts: near 1,
                        every prompt gets the same picture (the template of the collapse study)
    human_win_rate      the share of blind comparisons this checkpoint won (ties count half), with
                        a Wilson 95 % interval (`human_low`, `human_high`) and `human_comparisons`

`missing` counts what could not be scored, over all checkpoints (never scored 0);
`missing_reasons` says why: {oracle_<label>: [{reason, count}, ...]}, most frequent first.

The statistics are salon.train.record.audit's `batch_stats`, the same numbers `salon audit` prints for
training steps. Alarms: at checkpoint S, for each measure, against every earlier checkpoint P
where the proxy was lower by more than `proxy_rise`: an oracle fell by more than `oracle_drop`
(relative), coverage, colourfulness or within-prompt diversity by more than `craft_drop`
(relative), blank share or cross-prompt similarity rose by more than `share_rise` (absolute), or
the human win rate's interval at S lies wholly under P's. The P with the largest worsening is
named: it is the checkpoint to keep.
"""

from __future__ import annotations

import math
from collections import Counter

from salon.train.record.audit import batch_stats, by_step_of, components_of, mean_present

Z95 = 1.959964
# (key, +1 higher is better / -1 lower is better, the config field holding its tolerance)
CRAFT = (("coverage", 1, "craft_drop"), ("colourfulness", 1, "craft_drop"), ("diversity_within", 1, "craft_drop"),
         ("blank_share", -1, "share_rise"), ("cross_prompt_similarity", -1, "share_rise"))


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion (None, None for no trials)."""
    if n <= 0:
        return None, None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # at p = 0 or 1 a bound equals p in exact arithmetic: keep p inside it in floating point too
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def human_win_rates(choices: list) -> dict[int, dict]:
    """{step: {wins, ties, losses, comparisons, win_rate, low, high}} from CheckpointChoice rows."""
    tally: dict[int, list[int]] = {}
    for c in choices:
        for step, side in ((c.left_step, "left"), (c.right_step, "right")):
            t = tally.setdefault(step, [0, 0, 0])
            t[0 if c.winner == side else 1 if c.winner == "tie" else 2] += 1
    out = {}
    for step, (wins, ties, losses) in sorted(tally.items()):
        n = wins + ties + losses
        low, high = wilson(wins + 0.5 * ties, n)
        out[step] = {"wins": wins, "ties": ties, "losses": losses, "comparisons": n,
                     "win_rate": (wins + 0.5 * ties) / n, "low": low, "high": high}
    return out


def checkpoint_summary(step: int, records: list[dict], images: list, oracle_labels: list[str],
                       components: list[str]) -> dict:
    stats = batch_stats(records, images, components)
    rendered = [r for r, im in zip(records, images) if im is not None]
    passed = [r for r in records if r["gate_passed"]]
    oracles = {o: mean_present([r.get(f"oracle_{o}") for r in passed]) for o in oracle_labels}
    across = stats.get("diversity_across")
    return {
        "step": step, "checkpoint": records[0]["checkpoint"], "samples": len(records),
        "proxy_mean": stats["reward/mean"], "proxy_missing": stats["none"],
        "oracle_mean": oracles[oracle_labels[0]] if oracle_labels else None, "oracles": oracles,
        "oracle_missing": {o: sum(o in (r.get("oracle_missing") or []) for r in passed) for o in oracle_labels},
        "coverage": stats["coverage"], "blank_share": stats["blank_share"],
        "colourfulness": mean_present([r.get("colourfulness") for r in rendered]),
        "diversity_within": stats.get("diversity_within"), "diversity_across": across,
        "cross_prompt_similarity": None if across is None else 1.0 - across,
        "gate_pass": stats["gate_pass"], "render_unavailable": stats["render_unavailable"],
        "proxy_under_0.3": stats["reward/under_0.3"],
        **{f"reward_{c}_mean": stats[f"{c}/mean"] for c in components},
    }


def _worse(a: float, b: float, direction: int, tolerance: float, relative: bool) -> float | None:
    """How much worse b is than a (in the measure's bad direction), if beyond the tolerance."""
    if relative and a <= 0:
        return None
    drop = direction * (a - b) / (a if relative else 1)
    return drop if drop > tolerance else None


def alarms(rows: list[dict], config) -> list[dict]:
    """The proxy rises while an oracle, a craft measure or the human win rate falls (module doc)."""
    measures = [(f"oracles.{o}", 1, config.oracle_drop, True) for o in (rows[0]["oracles"] if rows else {})]
    measures += [(k, d, getattr(config, field), field == "craft_drop") for k, d, field in CRAFT]
    measures.append(("human_win_rate", 1, 0.0, False))
    out = []
    for i, now in enumerate(rows):
        # the checkpoints before this one that the proxy has risen from since
        earlier = [t for t in rows[:i] if now["proxy_mean"] is not None and t["proxy_mean"] is not None
                   and now["proxy_mean"] - t["proxy_mean"] > config.proxy_rise]
        for key, direction, tolerance, relative in measures:
            worst = None
            for then in earlier:
                a, b = _value(then, key), _value(now, key)
                if a is None or b is None:
                    continue
                if key == "human_win_rate":  # separate intervals, not a threshold on a noisy rate
                    by = a - b if now["human_high"] < then["human_low"] else None
                else:
                    by = _worse(a, b, direction, tolerance, relative)
                if by is not None and (worst is None or by > worst[0]):
                    worst = (by, then, a, b)
            if worst:
                _, then, a, b = worst
                name = key.split(".")[-1]
                verb = "falls" if direction > 0 else "rises"
                out.append({"name": f"{name}_{verb}_while_proxy_rises", "measure": name, "step": now["step"],
                            "since": then["step"], "proxy": [then["proxy_mean"], now["proxy_mean"]], "value": [a, b],
                            "message": f"{name} {a:.3f} at step {then['step']} -> {b:.3f} at step {now['step']} "
                                       f"while the proxy rose {then['proxy_mean']:.3f} -> {now['proxy_mean']:.3f}: "
                                       f"keep checkpoint {then['step']}, and look at the grid"})
    return out


def _value(row: dict, key: str):
    if key.startswith("oracles."):
        return row["oracles"].get(key.split(".", 1)[1])
    return row.get(key)


def _best(rows: list[dict], key: str) -> int | None:
    """The step with the highest `key`; among equal ones (to 1e-6: batched forwards differ in the
    last bits) the earliest."""
    scored = [r for r in rows if r.get(key) is not None]
    if not scored:
        return None
    top = max(r[key] for r in scored)
    return next(r["step"] for r in scored if r[key] >= top - 1e-6)


def missing_reasons(records: list[dict], oracle_labels: list[str]) -> dict[str, list[dict]]:
    """Why each oracle left paintings unscored: {oracle_<label>: [{reason, count}, ...]}, most frequent
    first (an oracle that scored everything is left out)."""
    out = {}
    for o in oracle_labels:
        counts = Counter(r.get(f"oracle_{o}_reason") for r in records
                         if isinstance(r.get(f"oracle_{o}_reason"), str))  # null (pandas: None or NaN) = scored
        if counts:
            out[f"oracle_{o}"] = [{"reason": reason, "count": n} for reason, n in counts.most_common()]
    return out


def build_report(frame, choices: list, oracle_labels: list[str], config) -> dict:
    """The report of an eval: `frame` holds every sample of the checkpoints to report (with images)."""
    records, images, by_step = by_step_of(frame)
    components = components_of(frame)
    human = human_win_rates(choices)
    rows = []
    for step, idx in by_step.items():
        row = checkpoint_summary(step, [records[i] for i in idx], [images[i] for i in idx], oracle_labels,
                                 components)
        h = human.get(step, {})
        row.update(human_win_rate=h.get("win_rate"), human_low=h.get("low"), human_high=h.get("high"),
                   human_comparisons=h.get("comparisons", 0))
        rows.append(row)
    missing = {"proxy": sum(r["proxy_missing"] for r in rows),
               "render_unavailable": sum(r["render_unavailable"] for r in rows),
               **{f"oracle_{o}": sum(r["oracle_missing"][o] for r in rows) for o in oracle_labels}}
    return {
        "checkpoints": rows,
        "best_by_proxy": _best(rows, "proxy_mean"), "best_by_oracle": _best(rows, "oracle_mean"),
        "best_by_human": _best([r for r in rows if r["human_comparisons"]], "human_win_rate"),
        "alarms": alarms(rows, config),
        "missing": missing,  # counted, never scored 0
        "missing_reasons": missing_reasons(records, oracle_labels),
        "human": {"method": "win rate (ties count half) with a Wilson 95% interval",
                  "comparisons": len(choices), "labelers": sorted({c.labeler for c in choices})},
    }
