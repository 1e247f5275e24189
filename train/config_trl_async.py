"""The train config's `grpo.trainer: trl_async` (TRL's AsyncGRPOTrainer: salon.train.trl_async): what
carries over to TRL's `AsyncGRPOConfig` and what cannot.

    config_problems(cfg.grpo)    # at load, with GRPOSettings' other problems
    run_problems(cfg)            # before the run loads anything: what the whole config and this machine tell
    async_args(cfg, out)         # TRL's AsyncGRPOConfig

salon's grpo fields that carry over: the optimiser and schedule, num_generations, batch sizes,
max_completion_length, temperature, top_p, top_k, max_steps, logging, save_steps (every checkpoint kept),
bf16, gradient_checkpointing, vllm_server_base_url; policy.dtype (auto: TRL's float32) and
enable_thinking. Any field of AsyncGRPOConfig goes under grpo. (or grpo.extra: salon.train.trl_fields
checks them against it); TRL's own `max_staleness` goes under grpo.extra, salon's being the compiled
engine's. What cannot carry is refused, every problem at once. This module imports nothing of salon's
train package (GRPOSettings calls it while the config loads).
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

# AsyncGRPOConfig fields that share a name with one of salon's grpo fields but mean another thing: under
# trl_async they are TRL's when given under grpo.extra (salon.train.trl_fields lets them through there)
NAMESAKES = {"max_staleness"}
# salon's compiled engine's settings: vLLM generates here
COMPILED_ONLY = ("generation_compile", "generation_prompt_bucket", "generation_attention",
                 "generation_fuse_linears", "generation_waves", "generation_weights",
                 "generation_kv_cache")


def config_problems(g) -> list[str]:
    """What grpo.trainer=trl_async cannot go with (GRPOSettings lists them with its other problems)."""
    if g.trainer != "trl_async":
        return []
    p, where = [], "grpo.trainer=trl_async"
    default = {f.name: f.default for f in dataclasses.fields(g)}
    if g.generation not in ("auto", "vllm_server"):
        p.append(f"{where} generates on a vLLM server (grpo.vllm_server_base_url): grpo.generation={g.generation} "
                 "cannot apply; leave it auto")
    changed = [f"grpo.{name}" for name in COMPILED_ONLY if getattr(g, name) != default[name]]
    if changed:
        p.append(f"{where}: {', '.join(changed)} tune salon's compiled engine, which this trainer does not use "
                 "(vLLM generates): leave them out")
    if g.update_per_group:
        p.append(f"{where}: grpo.update_per_group is the compiled engine's; the async trainer already updates "
                 "while later groups render")
    if g.max_staleness != "auto":
        p.append(f"{where}: grpo.max_staleness={g.max_staleness!r} is the compiled engine's overlap; the async "
                 "trainer has its own (samples more policy versions old are dropped): give it as "
                 "grpo.extra.max_staleness (TRL's default 4)")
    if g.importance_sampling_cap != default["importance_sampling_cap"]:
        p.append(f"{where}: grpo.importance_sampling_cap is the overlapped step's; the async trainer clips each "
                 "token's ratio to [1 - epsilon, 1 + epsilon_high] instead (grpo.epsilon, grpo.epsilon_high)")
    if g.generation_device is not None:
        p.append(f"{where}: grpo.generation_device={g.generation_device!r}: generation runs on the vLLM "
                 "server's cards; leave it null")
    if g.generation_batch_size is not None or g.steps_per_generation is not None:
        p.append(f"{where} trains on scored groups as they arrive, grpo.per_device_train_batch_size a "
                 "micro-batch (or grpo.extra.token_budget): leave grpo.generation_batch_size and "
                 "grpo.steps_per_generation unset")
    if g.beta != 0:
        p.append(f"{where} has no reference model (no KL term): set grpo.beta=0")
    if g.loss_type != "dapo":
        p.append(f"{where} has one loss, the clipped surrogate over the micro-batch's tokens (dapo's "
                 f"normalisation): grpo.loss_type={g.loss_type} cannot apply; set dapo")
    if g.scale_rewards != "group":
        p.append(f"{where} always divides a group's advantages by its reward std: set grpo.scale_rewards=group "
                 f"(not {g.scale_rewards})")
    if g.use_cpu:
        p.append(f"{where} packs rows with FlashAttention-3 kernels, which need CUDA: grpo.use_cpu cannot be true")
    if g.gradient_checkpointing_layers != 1.0:
        p.append(f"{where}: grpo.gradient_checkpointing_layers shares out checkpointing in salon's GRPOTrainer "
                 "only: leave it 1.0")
    return p


def run_problems(cfg) -> list[str]:
    """What only the whole config or this machine tells (checked before anything loads)."""
    import importlib.util

    from salon.models.names import is_url

    p = []
    for package, why in (("vllm", "its rollout worker and its NCCL weight transfer import it"),
                         ("aiohttp", "its rollout worker talks to vLLM with it")):
        if importlib.util.find_spec(package) is None:
            p.append(f"grpo.trainer=trl_async needs {package} in the training process too ({why}): "
                     f"pip install {package}")
    model = cfg.reward.absolute_kwargs.get("model")
    if cfg.reward.absolute and not is_url(model):
        p.append(f"reward.absolute={cfg.reward.absolute} would run in TRL's rollout worker, which sees no GPU: "
                 "serve it (salon judge serve --scorer ...) and give its URL as reward.absolute_kwargs.model")
    if cfg.policy.attn_implementation != "sdpa":
        p.append(f"policy.attn_implementation={cfg.policy.attn_implementation}: the async trainer sets its own "
                 "(tree-packed FlashAttention-3); leave it out")
    return p


def async_grpo_package():
    """TRL's async_grpo package, without its 'experimental' warning at every import."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are importing from 'trl.experimental'")
        import trl.experimental.async_grpo as module
    return module


def async_config_class():
    return async_grpo_package().AsyncGRPOConfig


def async_args(cfg, out: Path):
    """TRL's AsyncGRPOConfig from salon's config (module doc: what carries over)."""
    g = cfg.grpo
    kwargs = dict(
        output_dir=str(out), run_name=cfg.name, seed=cfg.seed,
        learning_rate=g.learning_rate, lr_scheduler_type=g.lr_scheduler_type, warmup_steps=g.warmup_steps,
        num_generations=g.num_generations, per_device_train_batch_size=g.per_device_train_batch_size,
        gradient_accumulation_steps=g.gradient_accumulation_steps, max_completion_length=g.max_completion_length,
        temperature=g.temperature, top_p=g.top_p, top_k=g.top_k, max_steps=g.max_steps,
        logging_steps=g.logging_steps, report_to=g.report_to, bf16=g.bf16,
        activation_checkpointing=g.gradient_checkpointing,  # transformers 5's name
        # every checkpoint is kept: the good ones must survive a reward hack
        save_strategy="steps", save_steps=g.save_steps, save_total_limit=None,
        model_init_kwargs={"use_kernels": False},  # no Hub kernels swapped in at load (offline GPU nodes)
        chat_template_kwargs={"enable_thinking": cfg.policy.enable_thinking})
    if cfg.policy.dtype != "auto":  # auto: TRL's float32, what its trainer-vLLM mismatch was measured at
        kwargs["dtype"] = cfg.policy.dtype
    if g.vllm_server_base_url:
        kwargs["vllm_server_base_url"] = g.vllm_server_base_url
    return async_config_class()(**{**kwargs, "project": "salon", **g.extra})
