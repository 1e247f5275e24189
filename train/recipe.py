"""The GRPO recipe: a policy writes sketches, the reward adapter renders, gates and judges them.

    salon train train/configs/smoke.yaml                      # CPU, offline, tiny models, 2 steps
    salon train train/configs/lora_1gpu.yaml --output-dir runs/hibiscus --set judge.references=me/pool@<rev>
    accelerate launch --config_file train/configs/accelerate_multi_gpu.yaml \\
        -m salon.train.recipe train/configs/multi_gpu.yaml

    python -m salon.train.recipe CONFIG.yaml [key=value ...]

This file is meant to be read and edited: it wires the components together in the order a run
needs them and holds no logic of its own beyond that.

1. models: the policy (folder, Hub id, or a tiny random one) with a LoRA on all linear layers;
   the pairwise judge and its references (a pinned pool release: a new release is a new reward);
2. data: one conversational prompt per row (the curate package's painting prompt per subject);
3. reward: `RewardAdapter` (salon.train.reward): a Scorer (judge, references, weights), the renderer
   `render.backend` names behind its render step (local worker processes, Ray actors, or a remote
   `salon env serve`: `build_render_backend`), a Recorder with the archive; a `smoke:` section swaps
   bundled example sketches in (salon.train.smoke), for smoke runs and benchmarks only;
4. TRL's GRPOTrainer with every checkpoint kept, resumable from any of them;
5. afterwards: the archive's dataset card, and a push to the Hub when configured.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
import warnings
from pathlib import Path

from salon.train.checkpoints import checkpoint_step, resume_checkpoint
from salon.train.config import TrainConfig, load_config
from salon.train.engine.choice import (check_single_process_engine, generation_engine, generation_kwargs,
                                       resolve_generation, rollout_for, trainable_dtypes_kept)
from salon.train.update.adapter_casts import skip_undone_casts
from salon.train.update.partial_checkpointing import keep_partial
from salon.train.record.run_folder import move_earlier_run_aside, refuse_second_run

log = logging.getLogger(__name__)


# ---- 1. models -------------------------------------------------------------------------------------


def build_judge(cfg: TrainConfig, out: Path, device: str | None = None):
    """The pairwise judge named by cfg.judge (a tiny:/random: model is built into OUTPUT_DIR)."""
    from salon.judges.registry import judge_for

    kwargs = dict(cfg.judge.kwargs)
    if cfg.judge.name == "transformers" and device:
        kwargs.setdefault("device", device)  # one judge replica per process, on that process's GPU
    return judge_for(cfg.judge.model, cfg.judge.name, cache=out, field="judge.model", arguments="judge.kwargs",
                     **kwargs)


def build_references(cfg: TrainConfig, out: Path):
    """cfg.judge.references, pinned in OUTPUT_DIR/references/ (manifest.json: source, release, each id
    and tier; local sources copied in), so a resumed run and `salon eval` face the same set."""
    from salon.judges.references import load_references, record_references, recorded_references
    from salon.models.tiny import resolve_references

    recorded = recorded_references(out / "references", cfg.judge.references)
    if recorded is not None:
        return recorded
    refs = load_references(resolve_references(cfg.judge.references, out / "tiny-refs"))
    return record_references(refs, out / "references", cfg.judge.references)


def lora_config(cfg: TrainConfig):
    if not cfg.lora.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                      target_modules=cfg.lora.target_modules, task_type="CAUSAL_LM")


# ---- 2. data ---------------------------------------------------------------------------------------


def build_dataset(cfg: TrainConfig):
    """Rows of {prompt: [system, user], subject, row}: subjects interleaved, `repeat` times each."""
    from datasets import Dataset

    from salon.curate.prompts import SubjectBook, paint_messages

    book = SubjectBook.load(cfg.data.subjects_file)
    rows = []
    for _ in range(cfg.data.repeat):
        for name in cfg.data.subjects:
            messages = [{"role": m.role, "content": m.text} for m in paint_messages(book.get(name))]
            rows.append({"prompt": messages, "subject": name, "row": len(rows)})
    return Dataset.from_list(rows)


# ---- 3. reward: how it scores, where it renders ------------------------------------------------------


def build_scorer(cfg: TrainConfig, judge, refs, device: str | None = None):
    """The reward's Scorer: the judge against its references, the image judges, an absolute scorer
    (`salon eval` recomputes a run's reward with this same function)."""
    from salon.train.scoring import Scorer

    absolute = None
    if cfg.reward.absolute:
        from salon.judges.registry import judge_for
        from salon.models.names import is_url

        kwargs = dict(cfg.reward.absolute_kwargs)
        model = kwargs.pop("model", None)
        if device and cfg.reward.absolute == "hpsv3" and not is_url(model):
            kwargs.setdefault("device", device)  # one replica per process, on that process's GPU
        absolute = judge_for(model, cfg.reward.absolute, cache=cfg.output_dir, field="reward.absolute_kwargs.model",
                             arguments="reward.absolute_kwargs", **kwargs)
        health = absolute.health() if hasattr(absolute, "health") else {"loaded": True}  # a remote scorer
        if not health.get("loaded"):
            log.warning("absolute scorer %s is not loaded yet (%s): samples it cannot score are None, never 0",
                        absolute.name, health.get("error"))
    return Scorer(cfg.reward, judge=judge, references=refs, k=cfg.judge.k, mix=cfg.judge.mix, seed=cfg.seed,
                  absolute=absolute)


def check_render_backend(cfg: TrainConfig, processes: int) -> None:
    """Refuse, before any model loads, a Ray backend that every process would start on its own."""
    from salon.pool.errors import ConfigError

    if cfg.render.backend == "ray" and cfg.render.ray_address == "local" and processes > 1:
        # each process would start its own cluster, each offering every core of the machine
        raise ConfigError([f"render.backend=ray with render.ray_address=local in {processes} processes would start "
                           f"{processes} clusters: start one (`ray start --head`) and set render.ray_address=auto "
                           "(or host:6379)"], "salon train")


def build_render_backend(cfg: TrainConfig, processes: int = 1):
    """The reward's renderer as cfg.render.backend says; anything with submit(code, seed) ->
    Future[RenderResult] and close(). Ray actors come up here (a local cluster starts); local worker
    processes and environment sessions start on first use (or `start()`)."""
    r = cfg.render
    check_render_backend(cfg, processes)
    if r.backend == "env":
        from salon.train.env.client import EnvRenderBackend

        return EnvRenderBackend(r.env_url, sessions=r.env_sessions)
    if r.backend == "ray":  # the same pool `salon render --ray` and `salon env serve --ray` open
        from salon.curate.sandbox.backend import BackendConfig, open_backend

        # browsers=0 means one per two cores of the *node*; an actor only owns its reserved CPUs
        browsers = r.sandbox.browsers or max(1, int(r.cpus_per_actor // 2))
        return open_backend(BackendConfig(backend="ray", address=r.ray_address, actors=r.actors,
                                          cpus_per_actor=r.cpus_per_actor),
                            dataclasses.replace(r.sandbox, browsers=browsers))
    from salon.train.render_workers import RenderPool

    return RenderPool(r.sandbox, workers=r.workers, trainer_cores=r.trainer_cores)


# ---- 4. trainer ------------------------------------------------------------------------------------


def grpo_args(cfg: TrainConfig, out: Path):
    from trl import GRPOConfig

    g = cfg.grpo
    dtype = cfg.policy.dtype if cfg.policy.dtype != "auto" else ("float32" if g.use_cpu else "bfloat16")
    return GRPOConfig(
        output_dir=str(out), run_name=cfg.name, seed=cfg.seed,
        learning_rate=g.learning_rate, lr_scheduler_type=g.lr_scheduler_type, warmup_steps=g.warmup_steps,
        beta=g.beta, num_generations=g.num_generations, per_device_train_batch_size=g.per_device_train_batch_size,
        gradient_accumulation_steps=g.gradient_accumulation_steps, max_completion_length=g.max_completion_length,
        temperature=g.temperature, top_p=g.top_p, top_k=g.top_k, scale_rewards=g.scale_rewards,
        loss_type=g.loss_type, max_steps=g.max_steps, logging_steps=g.logging_steps, report_to=g.report_to,
        use_cpu=g.use_cpu, bf16=g.bf16 and not g.use_cpu,
        activation_checkpointing=g.gradient_checkpointing,  # transformers 5 renamed it; the old name warns
        generation_batch_size=g.generation_batch_size,
        steps_per_generation=1 if g.update_per_group else g.steps_per_generation,
        **generation_kwargs(g),
        # every checkpoint is kept: the prior art's good checkpoints were gone when its reward hacked
        save_strategy="steps", save_steps=g.save_steps, save_total_limit=None,
        # use_kernels: transformers 5.25 (which requires `kernels`) otherwise swaps layers for Hub kernels
        # at load, fetched from the Hub then: with HF_HUB_OFFLINE on a GPU the load fails (every loader here)
        model_init_kwargs={"dtype": dtype, "attn_implementation": cfg.policy.attn_implementation, "use_kernels": False},
        chat_template_kwargs={"enable_thinking": cfg.policy.enable_thinking},
        remove_unused_columns=False,
        # any other GRPOConfig field given under grpo. (salon.train.trl_fields) wins over these defaults;
        # project is trackio's (transformers' default is "huggingface")
        **{"project": "salon", "dataloader_num_workers": 0, "log_completions": False, **g.extra},
    )


def salon_callback(cfg: TrainConfig, provenance: dict):
    """Writes the run config into each checkpoint, salon's run card over TRL's stub README, makes
    sure the last step is saved, and says when the first step will sit compiling."""
    import yaml
    from transformers import TrainerCallback

    from salon.train.record.run_card import write_run_card

    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False)

    class SalonCallback(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            if args.torch_compile and state.is_local_process_zero:
                log.info("grpo.torch_compile: the update compiles during the first step (about 160 s for a "
                         "1.7B policy's LoRA at 8 x 2,048 tokens on an H200); the steps after it run compiled")
            return control

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step >= state.max_steps:
                control.should_save = True  # the last step is a checkpoint too, whatever save_steps says
            return control

        def on_save(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                if folder.is_dir():
                    (folder / "salon_train.yaml").write_text(text)
                write_run_card(Path(args.output_dir), provenance)  # TRL wrote its stub card just before
            return control

    return SalonCallback()


def train(cfg: TrainConfig) -> dict:
    """Run GRPO as configured; returns a summary (steps, the last logged reward, seconds, checkpoints,
    rollouts folder, where an overwritten run went)."""
    if cfg.grpo.trainer == "trl_async":  # TRL's AsyncGRPOTrainer, generating on a vLLM server
        from salon.train.trl_async import train_async

        return train_async(cfg, sys.modules[__name__])  # with this recipe's builders: it cannot import them back
    started = time.perf_counter()
    refuse_second_run(cfg)  # first: a folder that holds a run costs no time
    import yaml
    from accelerate import PartialState
    from trl import GRPOTrainer

    from salon.pool.card import salon_version
    from salon.pool.errors import ConfigError
    from salon.train.record.archive import RolloutArchive, push_rollouts
    from salon.train.update.causal_loss import install as install_causal_loss
    from salon.train.out_of_memory import out_of_memory_explained
    from salon.train.progress import close_progress, compact_output, quiet_library_warnings
    from salon.train.record.recorder import Recorder
    from salon.train.reward import RewardAdapter, prefetching, prefetching_generated, submit_each
    from salon.train.rollout import Planner
    from salon.train.record.run_card import write_run_card
    from salon.train.smoke import ExampleSketches
    from salon.train.update.update_per_group import install as install_update_per_group
    from salon.train.update.stale_correction import install as install_stale_correction
    from salon.models.names import resolve_model

    out = Path(cfg.output_dir)
    state = PartialState()
    moved_aside = move_earlier_run_aside(cfg) if state.is_main_process else None  # before anything is written
    quiet_library_warnings()
    resolve_generation(cfg)
    check_single_process_engine(cfg, state.num_processes)
    check_render_backend(cfg, state.num_processes)
    if state.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        (out / "salon_train.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        for spec in (cfg.policy.model, cfg.judge.model, cfg.reward.absolute_kwargs.get("model")):
            resolve_model(spec, out)
    state.wait_for_everyone()  # tiny models are built once, by the main process

    policy = resolve_model(cfg.policy.model, out)
    device = f"cuda:{state.local_process_index}" if state.device.type == "cuda" else None
    judge = build_judge(cfg, out, device)
    with state.main_process_first():  # the main process pulls REPO@REV; the others then find it pulled
        refs = build_references(cfg, out)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(policy)
    checkpoint = resume_checkpoint(cfg, out)
    scorer = build_scorer(cfg, judge, refs, device)
    archive = RolloutArchive(out / "rollouts", [f"reward_{c}" for c in scorer.components], state.process_index)
    planner = Planner(cfg.seed)
    if cfg.smoke.examples:
        planner = ExampleSketches(planner, cfg.smoke.examples, cfg.smoke.example_files)
    recorder = Recorder(scorer.components, archive=archive, audit=cfg.audit, audit_dir=out / "audit",
                        run_dir=out, process=state.process_index)
    # Ray actors (and a local cluster) start here; everything after closes them on the way out
    render = build_render_backend(cfg, state.num_processes)
    trainer = None
    try:
        adapter = RewardAdapter(scorer, render=submit_each(render), recorder=recorder, planner=planner,
                                run=cfg.name, process=state.process_index)
        provenance = {"run": cfg.name, "policy": cfg.policy.model, "judge": judge.name,
                      "absolute": getattr(scorer.absolute, "name", None),
                      "smoke_examples": cfg.smoke.examples,  # >0: a share of the code was stand-in examples
                      "judge_version": getattr(judge, "prompt_version", None), "pool_release": refs.release,
                      "references": refs.source, "reference_counts": refs.tiers(),
                      "salon_version": salon_version(), "config": cfg.to_dict()}
        if state.is_main_process:
            if cfg.resume:  # the steps after the checkpoint (every step, with none) are redone: their rollouts move aside
                moved = archive.supersede_from(checkpoint_step(checkpoint))
                log.info("resuming from %s; %d rollout shard(s) of the steps redone moved to superseded/",
                         checkpoint or "step 0", moved)
            archive.write_card(provenance)

        engine = generation_engine(cfg)  # the sampler: None where TRL's own engine generates
        rollout = rollout_for(cfg, engine)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="You are using 'rollout_func'")  # TRL marks it experimental
            trainer = GRPOTrainer(model=policy, reward_funcs=[adapter], args=grpo_args(cfg, out),
                                  train_dataset=build_dataset(cfg), processing_class=tokenizer,
                                  peft_config=lora_config(cfg), callbacks=[salon_callback(cfg, provenance)],
                                  rollout_func=rollout)
        compact_output(trainer)  # a short line per logging step on stderr, not TRL's dicts on stdout
        if hasattr(engine, "attach"):
            engine.attach(trainer)  # the compiled engine's merged copy exists (or is refused) before the first step
        if rollout is not None and rollout is not engine:
            rollout.attach(trainer)  # peeks the next step's prompts
            if cfg.grpo.max_staleness:
                adapter.before_judging = rollout.whole_card_if_done
        if cfg.grpo.gradient_checkpointing and cfg.grpo.gradient_checkpointing_layers < 1.0:
            keep_partial(trainer.model, cfg.grpo.gradient_checkpointing_layers)
        skip_undone_casts(trainer.model)  # exact: the LoRA input casts that autocast casts back
        if cfg.grpo.causal_loss:
            install_causal_loss(trainer)
        fp8 = cfg.grpo.sampler_rounds  # float8 weights or cache: the sampler is off the policy at every step
        if rollout is not None and rollout is not engine and (cfg.grpo.max_staleness or fp8):
            # around the loss's forward as causal_loss makes it: a stale step's weights come from that forward
            install_stale_correction(trainer, rollout, cfg.grpo.importance_sampling_cap, every_step=fp8)
        if cfg.grpo.generation == "continuous_batching":
            trainer._generate = trainable_dtypes_kept(trainer._generate, trainer.model)
        if cfg.grpo.update_per_group:
            if cfg.grpo.generation != "compiled":
                raise ConfigError([f"grpo.update_per_group needs grpo.generation=compiled (auto chose "
                                   f"{cfg.grpo.generation} here: no CUDA, or no LoRA)"], "salon train")
            install_update_per_group(trainer, engine)
        if cfg.render.prefetch:
            # TRL has no hook between generation and reward; wrapping its _generate lets rendering start
            # while TRL computes log-probabilities on the GPU
            trainer._generate = prefetching(trainer._generate, adapter, trainer)
            # the compiled engine's early paintings, while the rest of the batch decodes; a step ahead, the
            # whole batch's once generated (on_generated: the rows are then the next step's). In a process of
            # its own (grpo.generation_device) the engine hands back only whole batches
            early = cfg.grpo.generation == "compiled" and not cfg.grpo.max_staleness and not cfg.grpo.generation_device
            if early and cfg.grpo.generation_waves > 1:
                engine.on_wave = prefetching_generated(adapter, trainer)
            if cfg.grpo.update_per_group:  # the engine exists: refused above otherwise
                engine.on_step = prefetching_generated(adapter, trainer)  # the whole step renders at once
            if early:  # a completion that ends early renders while the others decode
                engine.on_finished = prefetching_generated(adapter, trainer)
            if cfg.grpo.max_staleness:  # the next step's paintings render as soon as they are generated
                rollout.on_generated = prefetching_generated(adapter, trainer)
        if hasattr(render, "start"):
            render.start()  # local worker processes: their browsers start while nothing else runs
        with out_of_memory_explained(cfg, trainer, judge, device):
            trainer.train(resume_from_checkpoint=checkpoint)
    finally:
        if trainer is not None:
            close_progress(trainer)
        if trainer is not None and hasattr(trainer.rollout_func, "close"):
            trainer.rollout_func.close()  # the engine's thread (a generation running ahead of a run stopped early)
        render.close()  # Ray actors go (and a local cluster this run started), sessions close
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    summary = {"output_dir": str(out), "global_step": trainer.state.global_step,
               "reward": rewards[-1] if rewards else None,  # the last logged step's mean reward
               "seconds": round(time.perf_counter() - started, 1),  # loading, training and saving
               "moved_aside": str(moved_aside) if moved_aside else None,
               "checkpoints": sorted(p.name for p in out.glob("checkpoint-*")),
               "rollouts": str(archive.folder), "log_history": trainer.state.log_history}
    if state.is_main_process:
        archive.write_card(provenance)
        write_run_card(out, provenance)
        if cfg.archive.hub_repo:
            summary["rollouts_commit"] = push_rollouts(out, cfg.archive.hub_repo, private=cfg.archive.private)
    return summary


def main(argv: list[str] | None = None) -> int:
    """`python -m salon.train.recipe CONFIG.yaml [key=value ...]` (what `accelerate launch` runs)."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__)
        return 2
    logging.basicConfig(level=os.environ.get("SALON_LOG", "INFO"))
    summary = train(load_config(argv[0], argv[1:], find_models=True))
    print(f"trained to step {summary['global_step']}; checkpoints in {summary['output_dir']}; "
          f"rollouts in {summary['rollouts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
