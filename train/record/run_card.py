"""The run folder's README.md: what was trained, against which references and judge, with which
reward, for how many steps, and how to evaluate it. Written at every checkpoint (over the stub card
TRL writes there) and when training ends.

    write_run_card(OUTPUT_DIR, provenance)   # provenance: the dict salon.train.recipe builds

Steps are numbered one way everywhere: step s is the policy after s optimiser steps. The
rollouts archived under step s were written by that policy, `checkpoint-s` holds it, and `salon
eval` reports it as step s (step 0: the base model, before any update).
"""

from __future__ import annotations

from pathlib import Path

import yaml


def _checkpoints(out: Path) -> list[int]:
    return sorted(int(p.name.rsplit("-", 1)[1]) for p in out.glob("checkpoint-*")
                  if p.is_dir() and p.name.rsplit("-", 1)[1].isdigit())


def run_card(out: Path, provenance: dict) -> str:
    cfg = provenance.get("config") or {}
    policy, lora, grpo = cfg.get("policy", {}), cfg.get("lora", {}), cfg.get("grpo", {})
    judge, reward = cfg.get("judge", {}), cfg.get("reward", {})
    steps = _checkpoints(out)
    refs = provenance.get("reference_counts") or {}
    meta = {"library_name": "peft" if lora.get("enabled", True) else "transformers",
            "tags": ["salon", "grpo", "trl", "code-painting"], "base_model": str(policy.get("model"))}
    weights = ", ".join(f"{k} {v}" for k, v in (reward.get("weights") or {}).items())
    lines = [
        "---", yaml.safe_dump(meta, sort_keys=False).strip(), "---", "",
        f"# salon run: {provenance.get('run')}", "",
        f"GRPO (TRL) on `{policy.get('model')}`"
        + (f" with a LoRA (r {lora.get('r')}, alpha {lora.get('alpha')}, {lora.get('target_modules')})"
           if lora.get("enabled", True) else " (full fine-tune)")
        + f", trained by salon {provenance.get('salon_version')} to write p5.js + p5.brush paintings.", "",
        "## Reward", "",
        f"- judge: `{provenance.get('judge')}` (model `{judge.get('model')}`, version "
        f"`{provenance.get('judge_version')}`), win rate against {judge.get('k')} references per prompt",
        f"- references: `{provenance.get('references')}`, release `{provenance.get('pool_release')}`: "
        + (", ".join(f"{n} {t}" for t, n in refs.items()) or "-")
        + "; every id and tier in `references/manifest.json`",
        f"- weights: {weights}; gate penalty {reward.get('gate_penalty')}"
        + (f"; absolute scorer `{provenance.get('absolute')}`" if provenance.get("absolute") else ""),
        f"- sampling: {grpo.get('num_generations')} completions per prompt, temperature {grpo.get('temperature')}, "
        f"top_p {grpo.get('top_p')}, top_k {grpo.get('top_k')}, up to {grpo.get('max_completion_length')} tokens",
    ]
    if provenance.get("smoke_examples"):
        lines.append(f"- smoke run: {provenance['smoke_examples']:.0%} of each group was a bundled example "
                     "sketch, not the policy's code (`substituted_example` in the archive)")
    lines += [
        "", "## Steps", "",
        f"Trained to step {steps[-1] if steps else 0}; checkpoints: "
        + (", ".join(f"`checkpoint-{s}`" for s in steps) or "none yet") + " (every one is kept).", "",
        "Step s is the policy after s optimiser steps, everywhere: the rollouts archived under step s "
        "were written by it, `checkpoint-s` holds it, `salon eval` reports it as step s, and step 0 is "
        "the base model.", "",
        "## What is here, and how to evaluate it", "",
        "- `salon_train.yaml`: the whole config (every checkpoint holds a copy)",
        "- `rollouts/`: every rollout with each reward component "
        "(`salon.train.record.archive.load_rollouts_dataset(RUN)`)",
        "- `references/`: the references the reward used (ids, tiers; local ones copied in)",
        "- `audit/`: `salon audit RUN [--suspects K]` (coverage, diversity, alarms, one grid per step in `audit/grids/`)",
        "", "```bash",
        f"salon audit {out}",
        f"salon eval {out} --samples 4 --oracle paint_fraction   # proxy, oracles and craft per checkpoint",
        f"salon app --pool POOL --run {out}                      # blind checkpoint comparison, suspects",
        "```", "",
    ]
    return "\n".join(lines)


def write_run_card(out: Path, provenance: dict) -> Path:
    path = Path(out) / "README.md"
    tmp = path.with_name(".README.md.tmp")
    tmp.write_text(run_card(Path(out), provenance), encoding="utf-8")
    tmp.replace(path)
    return path
