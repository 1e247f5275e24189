"""TRL's async trainer with salon's reward: `grpo.trainer: trl_async` (TRL's experimental AsyncGRPOTrainer).

    # a vLLM server on other cards first, as TRL's AsyncGRPOTrainer asks (weight sync over NCCL):
    VLLM_SERVER_DEV_MODE=1 vllm serve POLICY --weight-transfer-config '{"backend":"nccl"}' --port 8000
    salon train CONFIG.yaml --set grpo.trainer=trl_async grpo.scale_rewards=group \\
        grpo.vllm_server_base_url=http://127.0.0.1:8000 [grpo.extra.max_staleness=4 ...]

    train_async(cfg, recipe)     # what salon.train.recipe.train does for grpo.trainer=trl_async

Where things run:

- the trainer's process: the policy (TRL's loss, its weight sync to vLLM) and the pairwise judge behind a
  `JudgeServer` on 127.0.0.1 (salon.judges.pairwise_remote), its token made for this run: TRL scores in
  a spawned child that sees no GPU, and its docs ask that a GPU reward model be reached over HTTP;
- TRL's rollout worker (that child): it generates on the vLLM server and calls `AsyncReward` once a
  group. The reward is a plain class whose state is the run's config and the judge service's URL and
  token; in the child it opens a renderer, salon's `RewardAdapter` and `Scorer` (the judge a
  `RemoteJudge`) and the Recorder with the rollout archive, so a sample is gated, rendered, judged and
  archived exactly as with salon's GRPOTrainer (a render or judge failure is None, never 0). Each call's
  statistics (`salon/...`, every component on its own) go to OUTPUT_DIR/reward_metrics.jsonl, which the
  trainer's `log()` takes in beside TRL's own.

What carries over from salon's config and what is refused: salon.train.config_trl_async. The recipe
hands itself over (`recipe`: its builders of the judge, references, scorer, renderer, dataset, LoRA and
callback), since it imports this module and nothing of salon's imports its importer; the reward gets
the two builders it needs as functions, which pickle by name.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from salon.train.config_trl_async import async_args, async_grpo_package, run_problems

log = logging.getLogger(__name__)

METRICS_FILE = "reward_metrics.jsonl"


def parse_answers_as_qwen(tokenizer):
    """salon's built tokenizers (tiny:, random:) write Qwen's chat format under a template of their own,
    which TRL's rollout worker does not recognise: their answers are parsed as Qwen3's are."""
    from salon.models.tokenizer import CHAT_TEMPLATE

    if tokenizer.chat_template == CHAT_TEMPLATE and getattr(tokenizer, "response_template", None) is None:
        from trl.chat_template_utils import qwen3_template

        tokenizer.response_template = qwen3_template
    return tokenizer


# ---- the reward, in TRL's rollout worker ---------------------------------------------------------


class AsyncReward:
    """TRL's reward function for the async trainer (module doc). Picklable: its state is the run's config,
    how to reach the judge service and the recipe's `build_scorer` and `build_render_backend` (functions,
    pickled by name); the renderer, scorer and archive open in the process that first calls it (TRL's
    spawned rollout worker), and close when it exits or on `close()`."""

    def __init__(self, cfg, judge_url: str, token: str, judge_name: str, prompt_version: str, *,
                 build_scorer, build_render_backend):
        self.__name__ = "salon_reward"  # what TRL logs it as (rewards/salon_reward)
        self.cfg, self.judge_url, self.token = cfg, judge_url, token
        self.judge_name, self.prompt_version = judge_name, prompt_version
        self.build_scorer, self.build_render_backend = build_scorer, build_render_backend
        self._adapter = None

    def __getstate__(self) -> dict:  # the config only: what it opened stays in the process that opened it
        return {k: v for k, v in self.__dict__.items() if k == "__name__" or not k.startswith("_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._adapter = None

    def __call__(self, prompts, completions, completion_ids=None, **columns) -> list[float | None]:
        """TRL's call for one group (`completion_ids`: its tokens; the text is what is painted)."""
        self._open()
        with self._lock:  # TRL scores a group at a time; the adapter's step state is not shared
            step = self._step()
            stats: dict = {}
            rewards = self._adapter(prompts, completions, trainer_state=SimpleNamespace(global_step=step),
                                    log_metric=stats.__setitem__, **columns)
            append_metrics(Path(self.cfg.output_dir) / METRICS_FILE, stats)
        return rewards

    def close(self) -> None:
        if self._adapter is not None:
            self._closing()  # the renderer, now rather than at exit (once)

    def _open(self) -> None:
        if self._adapter is not None:
            return
        from multiprocessing.util import Finalize

        from salon.judges.pairwise_remote import RemoteJudge
        from salon.judges.references import recorded_references
        from salon.pool.errors import SetupError
        from salon.train.record.archive import RolloutArchive
        from salon.train.record.recorder import Recorder
        from salon.train.reward import RewardAdapter, submit_each
        from salon.train.rollout import Planner
        from salon.train.smoke import ExampleSketches

        cfg, out = self.cfg, Path(self.cfg.output_dir)
        refs = recorded_references(out / "references", cfg.judge.references)
        if refs is None:
            raise SetupError(f"{out / 'references'} holds no references for {cfg.judge.references}: the trainer "
                             "records them there before its rollout worker starts")
        self._judge = RemoteJudge(self.judge_url, self.token, self.judge_name, self.prompt_version)
        scorer = self.build_scorer(cfg, self._judge, refs)
        planner = Planner(cfg.seed)
        if cfg.smoke.examples:
            planner = ExampleSketches(planner, cfg.smoke.examples, cfg.smoke.example_files)
        archive = RolloutArchive(out / "rollouts", [f"reward_{c}" for c in scorer.components])
        recorder = Recorder(scorer.components, archive=archive, audit=cfg.audit, audit_dir=out / "audit", run_dir=out)
        render = open_render(cfg, self.build_render_backend)
        # TRL's worker process ends through multiprocessing, which runs these finalizers (not atexit): the
        # browsers close with it
        self._closing = Finalize(None, render.close, exitpriority=10)
        self._lock, self._last_step = threading.Lock(), 0
        self._adapter = RewardAdapter(scorer, render=submit_each(render), recorder=recorder, planner=planner,
                                      run=cfg.name)

    def _step(self) -> int:
        """The trainer's step as the judge service says it (the policy the archive names); the last one
        known when it says none (the judge then fails too, and those samples are missing)."""
        from salon.judges.vlm_openai import CallFailed

        try:
            step = self._judge.health().get("step")
        except (CallFailed, AttributeError) as e:
            log.warning("judge service did not say the step: %s", e)
            step = None
        if isinstance(step, int):
            self._last_step = step
        return self._last_step


def open_render(cfg, build_render_backend):
    """The reward's renderer, in the process that calls it. TRL's rollout worker is a daemon process,
    which may not start processes of its own (salon's RenderPool), and is already off the trainer's
    process: render.backend=local is one Renderer (render.browsers Chromiums) in a thread of it; ray and
    env are the recipe's (`build_render_backend`)."""
    if cfg.render.backend == "local":
        from salon.curate.sandbox.backend import LocalRenderBackend

        return LocalRenderBackend(cfg.render.sandbox)
    return build_render_backend(cfg)


def append_metrics(path: Path, stats: dict) -> None:
    """One reward call's statistics as a JSON line (one writer: TRL's one rollout worker)."""
    if stats:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(stats) + "\n")


class MetricsTail:
    """The lines appended to a metrics file since the last `read()`; from the file's end at the start
    unless `from_start` (a resumed run's earlier lines were logged by the run that wrote them)."""

    def __init__(self, path: Path, from_start: bool = False):
        self.path = Path(path)
        self.offset = self.path.stat().st_size if self.path.is_file() and not from_start else 0

    def read(self) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
        self.offset += end
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()]


def trainer_class():
    """AsyncGRPOTrainer whose `log()` takes in the reward's statistics from the rollout worker."""

    class SalonAsyncGRPOTrainer(async_grpo_package().AsyncGRPOTrainer):
        def __init__(self, *args, reward_metrics: Path, **kwargs):
            self.reward_metrics = MetricsTail(reward_metrics)
            super().__init__(*args, **kwargs)

        def log(self, logs: dict, start_time: float | None = None) -> None:
            if self.accelerator.is_main_process:
                for stats in self.reward_metrics.read():
                    for name, value in stats.items():
                        self._metrics["train"][name].append(value)
            super().log(logs, start_time)

    return SalonAsyncGRPOTrainer


class TrainerStep:
    """The trainer's optimiser steps once it exists: what the judge service tells the reward."""

    trainer = None

    def __call__(self) -> int | None:
        return None if self.trainer is None else self.trainer.state.global_step


# ---- the run ----------------------------------------------------------------------------------------


def train_async(cfg, recipe) -> dict:
    """Run TRL's AsyncGRPOTrainer as configured; the summary `salon.train.recipe.train` returns. `recipe`:
    salon.train.recipe, which calls this (module doc)."""
    import secrets

    import yaml
    from accelerate import PartialState
    from transformers import AutoTokenizer

    from salon.judges.pairwise_remote import JudgeServer
    from salon.models.names import resolve_model
    from salon.pool.card import salon_version
    from salon.pool.errors import ConfigError
    from salon.train.checkpoints import checkpoint_step, resume_checkpoint
    from salon.train.progress import close_progress, compact_output, quiet_library_warnings
    from salon.train.record.archive import RolloutArchive
    from salon.train.record.run_card import write_run_card
    from salon.train.record.run_folder import move_earlier_run_aside, refuse_second_run

    started = time.perf_counter()
    refuse_second_run(cfg)
    if problems := run_problems(cfg):
        raise ConfigError(problems, "salon train")
    out, state = Path(cfg.output_dir), PartialState()
    moved_aside = move_earlier_run_aside(cfg) if state.is_main_process else None
    quiet_library_warnings()
    if state.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        (out / "salon_train.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        for spec in (cfg.policy.model, cfg.judge.model, cfg.reward.absolute_kwargs.get("model")):
            resolve_model(spec, out)
    state.wait_for_everyone()
    policy = resolve_model(cfg.policy.model, out)
    tokenizer = parse_answers_as_qwen(AutoTokenizer.from_pretrained(policy))
    checkpoint = resume_checkpoint(cfg, out)
    with state.main_process_first():  # the references the reward's worker reads from OUTPUT_DIR/references
        refs = recipe.build_references(cfg, out)
    clock, server, trainer = TrainerStep(), None, None
    provenance = {"run": cfg.name, "policy": cfg.policy.model, "trainer": "trl_async", "judge": cfg.judge.name,
                  "smoke_examples": cfg.smoke.examples, "pool_release": refs.release, "references": refs.source,
                  "reference_counts": refs.tiers(), "salon_version": salon_version(), "config": cfg.to_dict()}
    archive = RolloutArchive(out / "rollouts", [])
    try:
        service = ("", "", "", "")  # the rollout worker runs on the main process only: the others never score
        if state.is_main_process:
            device = f"cuda:{state.local_process_index}" if state.device.type == "cuda" else None
            judge = recipe.build_judge(cfg, out, device)  # on this process's card, beside the policy
            token = secrets.token_urlsafe(32)
            server = JudgeServer(judge, refs, token, step=clock).start()
            service = (server.url, token, judge.name, judge.prompt_version)
            components = recipe.build_scorer(cfg, judge, refs).components
            archive = RolloutArchive(out / "rollouts", [f"reward_{c}" for c in components])
            provenance.update(judge=judge.name, judge_version=getattr(judge, "prompt_version", None))
            if cfg.resume:  # the steps after the checkpoint are redone: their rollouts move aside
                archive.supersede_from(checkpoint_step(checkpoint))
            archive.write_card(provenance)
        reward = AsyncReward(cfg, *service, build_scorer=recipe.build_scorer,
                             build_render_backend=recipe.build_render_backend)
        trainer = trainer_class()(model=policy, reward_funcs=[reward], args=async_args(cfg, out),
                                  train_dataset=recipe.build_dataset(cfg), processing_class=tokenizer,
                                  peft_config=recipe.lora_config(cfg), reward_metrics=out / METRICS_FILE,
                                  callbacks=[recipe.salon_callback(cfg, provenance)])
        clock.trainer = trainer
        compact_output(trainer)
        trainer.train(resume_from_checkpoint=checkpoint)
    finally:
        if trainer is not None:
            close_progress(trainer)
        if server is not None:
            server.close()
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    summary = {"output_dir": str(out), "global_step": trainer.state.global_step,
               "reward": rewards[-1] if rewards else None, "seconds": round(time.perf_counter() - started, 1),
               "moved_aside": str(moved_aside) if moved_aside else None,
               "checkpoints": sorted(p.name for p in out.glob("checkpoint-*")),
               "rollouts": str(archive.folder), "log_history": trainer.state.log_history}
    if state.is_main_process:
        archive.write_card(provenance)
        write_run_card(out, provenance)
        if cfg.archive.hub_repo:
            from salon.train.record.archive import push_rollouts

            summary["rollouts_commit"] = push_rollouts(out, cfg.archive.hub_repo, private=cfg.archive.private)
    return summary
