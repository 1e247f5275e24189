"""`salon eval`: which checkpoint paints best, judged by something the policy did not optimise?

    salon eval RUN_DIR --prompts sunflower "blue iris" --samples 4 --oracle paint_fraction [--resume] [--json]
    report = evaluate(EvalConfig("runs/x", prompts=[...], oracles=["hpsv3"]))

For the base policy and every kept checkpoint (or every `--every N` steps), in this order:

1. generate: `samples` replies per held-out prompt with the run's sampling (salon.train.eval.generate);
2. render, gate and score with the run's own reward, recomputed from RUN_DIR/salon_train.yaml with
   its pinned references: the same RewardAdapter and Scorer as training (salon.train.reward), so
   the proxy is exactly what the policy optimised. Each prompt faces one reference draw for every
   checkpoint, and sample k of a prompt renders with the same seed at every checkpoint;
3. score the paintings that passed the gate with each oracle (salon.train.eval.oracles: every
   oracle was checked before step 1, its arguments, model and server; a score it could not give
   is None with its reason in `oracle_<label>_reason`), and measure colourfulness; coverage and
   blank share come with the render;
4. write the checkpoint's shard to RUN_DIR/eval/data/ (salon.train.eval.dataset).

Then the report (salon.train.eval.report; RUN_DIR/eval/report.json), the figures
(salon.train.eval.plots; RUN_DIR/eval/plots/) and the blind human choices of RUN_DIR/reviews.db,
exported to RUN_DIR/eval/choices.parquet. With `resume`, a checkpoint whose shard was made with
the same settings is kept as it is. A smoke run's config (`smoke:`) swaps example sketches in
here as it did in training: its paintings then say nothing about the policy.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from types import SimpleNamespace

from salon.train.eval.config import EvalConfig, eval_subjects
from salon.train.eval.dataset import EvalDataset, fingerprint, sample_id
from salon.train.eval.oracles import Oracle, check_oracles
from salon.train.rollout import prompt_key

log = logging.getLogger(__name__)
EVAL_DRAW_STEP = -1  # the "step" the proxy's reference draws are seeded with: the same at every checkpoint


def select_checkpoints(run_dir: Path, every: int, base: bool) -> list[tuple[int, Path | None]]:
    """[(step, folder)] of the kept checkpoints (step 0: the base policy, folder None)."""
    from salon.pool.errors import ConfigError
    from salon.train.checkpoints import checkpoint_step

    found = sorted((checkpoint_step(p), p) for p in run_dir.glob("checkpoint-*")
                   if p.is_dir() and p.name.rsplit("-", 1)[1].isdigit())
    if every:
        last = found[-1][0] if found else None
        found = [(s, p) for s, p in found if s % every == 0 or s == last]
    chosen = ([(0, None)] if base else []) + found
    if not chosen:
        raise ConfigError([f"{run_dir}: no checkpoint-N folders to evaluate (and --no-base)"], "salon eval")
    return chosen


class Collect:
    """A Recorder stand-in for the RewardAdapter: keeps the scored rollouts of one call."""

    def record(self, rollouts, step, log_metric=None, timing=None):
        self.rollouts = rollouts


class CachedRender:
    """A RenderStep that renders each (code, seed) once per eval: checkpoints that write the same
    sketch get the same painting (a failed render is tried again)."""

    def __init__(self, backend):
        self.backend, self.futures = backend, {}

    def __call__(self, items):
        out = []
        for code, seed in items:
            fut = self.futures.get((code, seed))
            if fut is None or (fut.done() and fut.result().unavailable):
                fut = self.futures[(code, seed)] = self.backend.submit(code, seed)
            out.append(fut)
        return out


class EvalPlanner:
    """Samples of one eval call: group = the prompt, position = the sample's index, and a render seed
    from the eval's seed, the prompt and the index (never the step)."""

    def __init__(self, seed: int):
        self.seed = seed  # salon.train.smoke.ExampleSketches reads it

    def plan(self, prompts, texts, step, rows=None, subjects=None):
        from salon.curate.extract import extract_code
        from salon.judges.winrate import group_seed
        from salon.train.rollout import Sample

        samples, seen = [], {}
        for i, (prompt, text) in enumerate(zip(prompts, texts)):
            key = prompt_key(prompt)
            position = seen[key] = seen.get(key, -1) + 1
            samples.append(Sample(index=i, group=f"prompt-{rows[i]:03d}", position=position, row=rows[i],
                                  subject=subjects[i], prompt=key, completion=text, code=extract_code(text),
                                  seed=group_seed(self.seed, "eval", key, position) & 0xFFFFFFFF))
        return samples


class Evaluator:
    """Everything that loads: the policy, the run's reward, the oracles, the renderer."""

    def __init__(self, train_cfg, run_dir: Path, config: EvalConfig, subjects, specs):
        from salon.curate.prompts import paint_messages
        from salon.train.eval.generate import CheckpointPolicy
        from salon.train.recipe import build_judge, build_references, build_render_backend, build_scorer
        from salon.train.reward import RewardAdapter
        from salon.train.smoke import ExampleSketches

        self.config, self.subjects = config, subjects
        self.chats = [[{"role": m.role, "content": m.text} for m in paint_messages(s)] for s, _ in subjects]
        refs = build_references(train_cfg, run_dir)
        self.scorer = build_scorer(train_cfg, build_judge(train_cfg, run_dir), refs)
        self.oracles = [Oracle(s, run_dir, train_cfg, refs) for s in specs]
        self.policy = CheckpointPolicy(train_cfg, run_dir)
        planner = EvalPlanner(config.seed)
        if train_cfg.smoke.examples:
            planner = ExampleSketches(planner, train_cfg.smoke.examples, train_cfg.smoke.example_files)
        self.render = build_render_backend(train_cfg)
        self.recorder = Collect()
        self.adapter = RewardAdapter(self.scorer, render=CachedRender(self.render), recorder=self.recorder,
                                     planner=planner, run=train_cfg.name)

    @property
    def reward_columns(self) -> list[str]:
        return self.adapter.reward_columns

    def run(self, step: int, checkpoint: Path | None) -> tuple[list[dict], dict]:
        from salon.judges.image_judges import colourfulness

        k, t0 = self.config.samples, time.perf_counter()
        # the same sampling seed at every checkpoint: paired samples differ by the policy, not the noise
        texts = self.policy.generate(checkpoint, self.chats, k, self.config.seed)
        t1 = time.perf_counter()
        prompts = [chat for chat in self.chats for _ in range(k)]
        rows_of = [i for i in range(len(self.chats)) for _ in range(k)]
        subjects = [s.name for s, _ in self.subjects for _ in range(k)]
        # one reference draw per prompt for every checkpoint: the proxy differs by the paintings only
        self.adapter(prompts=prompts, completions=texts, trainer_state=SimpleNamespace(global_step=EVAL_DRAW_STEP),
                     row=rows_of, subject=subjects)
        rollouts = self.recorder.rollouts
        t2 = time.perf_counter()
        rows = []
        for r in rollouts:
            row = r.columns()
            row.update(step=step, checkpoint="base" if checkpoint is None else checkpoint.name,
                       sample_id=sample_id(step, r.prompt, r.seed), oracle_missing=[],
                       colourfulness=None if r.painting is None else colourfulness(r.painting))
            rows.append(row)
        for i, (subject, _) in enumerate(self.subjects):
            idx = [j for j, r in enumerate(rollouts) if r.row == i and r.gate_passed and r.painting is not None]
            for oracle in self.oracles:
                scores, reasons = oracle.score([rollouts[j].painting for j in idx], subject.prompt)
                for j, v, reason in zip(idx, scores, reasons):
                    rows[j][oracle.spec.column] = v
                    if v is None:
                        rows[j]["oracle_missing"].append(oracle.spec.label)
                        rows[j][oracle.spec.reason_column] = reason or "no reason given"
        seconds = {"generate": t1 - t0, "render_and_proxy": t2 - t1, "oracles": time.perf_counter() - t2}
        seconds["total"] = sum(seconds.values())
        return rows, seconds

    def close(self) -> None:
        self.render.close()
        self.policy.close()


def eval_settings(train_cfg, config: EvalConfig, subjects, specs) -> dict:
    """What a checkpoint's samples depend on: a shard made with other settings is redone."""
    return {"version": 2, "prompts": [[s.name, s.prompt] for s, _ in subjects], "samples": config.samples,
            "seed": config.seed, "oracles": [s.spec for s in specs], "reward": train_cfg.reward.__dict__,
            "judge": train_cfg.judge.__dict__, "smoke": train_cfg.smoke.__dict__,
            "sampling": {k: getattr(train_cfg.grpo, k) for k in ("temperature", "top_p", "top_k",
                                                                  "max_completion_length")}}


def evaluate(config: EvalConfig, progress: bool = True) -> dict:
    """Evaluate (or resume), then write report.json, the plots and the choices export; returns the report."""
    from tqdm.auto import tqdm

    from salon.train.config import load_config
    from salon.train.eval.plots import plot_all
    from salon.train.eval.report import build_report
    from salon.train.eval.reviews import Reviews
    from salon.train.record.run_folder import check_archive

    run = Path(config.run_dir)
    check_archive(run)  # a folder two runs were trained into: its checkpoints are the second run's
    train_cfg = load_config(run / "salon_train.yaml")
    subjects = eval_subjects(train_cfg, config.prompts)
    specs = check_oracles(config.oracles)  # before anything loads: arguments, models, servers
    settings = eval_settings(train_cfg, config, subjects, specs)
    fp = fingerprint(settings)
    store = EvalDataset(run)
    chosen = select_checkpoints(run, config.every, config.base)
    todo = [(s, p) for s, p in chosen if not (config.resume and (store.done(s) or {}).get("fingerprint") == fp)]
    if todo:
        evaluator = Evaluator(train_cfg, run, config, subjects, specs)
        try:
            for step, folder in tqdm(todo, desc="salon eval", unit="checkpoint", disable=not progress):
                rows, seconds = evaluator.run(step, folder)
                store.write(step, rows, evaluator.reward_columns, [s.column for s in specs],
                            {"fingerprint": fp, "settings": settings, "seconds": seconds})
                log.info("evaluated step %d in %.1f s", step, seconds["total"])
        finally:
            evaluator.close()
    steps = [s for s, _ in chosen]
    with Reviews.open(run) as reviews:
        choices = reviews.choices()
    frame = store.frame(steps)
    report = build_report(frame, choices, [s.label for s in specs], config)
    seconds = {s: (store.done(s) or {}).get("seconds", {}) for s in steps}
    for row in report["checkpoints"]:
        row["seconds"] = seconds.get(row["step"], {}).get("total")
    report.update(run_dir=str(run), run=train_cfg.name, samples=config.samples, seed=config.seed,
                  prompts=[{"subject": s.name, "prompt": s.prompt, "held_out": held} for s, held in subjects],
                  oracles=[{"label": s.label, "spec": s.spec} for s in specs],
                  evaluated=[s for s, _ in todo], resumed=[s for s in steps if s not in {t for t, _ in todo}])
    report["plots"] = plot_all(frame, report, store.folder / "plots", config.grid_columns)
    if choices:
        report["choices_export"] = export_choices(choices, store.folder / "choices.parquet")
    (store.folder / "report.json").write_text(json.dumps(report, indent=2, default=float))
    report["report"] = str(store.folder / "report.json")
    return report


def export_choices(choices: list, path: Path) -> str:
    """The blind checkpoint choices with their provenance, as parquet (`datasets.Dataset.from_parquet`)."""
    from datasets import Dataset

    Dataset.from_list([c.to_dict() for c in choices]).to_parquet(str(path))
    return str(path)
