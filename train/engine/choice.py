"""Which engine generates the completions (`grpo.generation`), the GRPOConfig fields that pick it,
and the guards TRL's engines need. The recipe (salon.train.recipe) calls these in order:

    resolve_generation(cfg)                      # auto -> compiled on CUDA with a LoRA, else transformers;
                                                 # max_staleness auto -> 1 for compiled on CUDA, else 0;
                                                 # generation_sms auto -> a split card where it decodes beside
    check_single_process_engine(cfg, processes)  # refused before anything loads
    GRPOConfig(..., **generation_kwargs(cfg.grpo))
    sampler = generation_engine(cfg)             # what generates: salon's compiled engine, TRL's transformers
                                                 # generate, or None for TRL's own engines (vLLM, paged)
    rollout_func = rollout_for(cfg, sampler)     # the overlapped rollout around it (update_per_group: the engine)
"""

from __future__ import annotations

from salon.train.config import TrainConfig


def resolve_generation(cfg: TrainConfig) -> None:
    """grpo.generation=auto becomes compiled where a LoRA policy trains on CUDA, else transformers
    (the salon_train.yaml written beside the run names the engine that ran)."""
    import torch

    cuda = torch.cuda.is_available() and not cfg.grpo.use_cpu
    if cfg.grpo.generation == "auto":
        # beside grpo.generation_device auto stays TRL's generate: the compiled engine in that process is asked
        # for by name (train/configs/lora_2gpu_64.yaml) while its GPU run is not measured
        compiled = cuda and cfg.lora.enabled and cfg.grpo.generation_device is None
        cfg.grpo.generation = "compiled" if compiled else "transformers"
        fp8 = cfg.grpo.float8_asked()
        if fp8 and not compiled:
            from salon.pool.errors import ConfigError

            raise ConfigError([f"{s} is the compiled engine's, and grpo.generation=auto chose transformers here (no "
                               "CUDA, no LoRA, or a generation_device): set grpo.generation=compiled, or leave it "
                               "as_trained" for s in fp8], "salon train")
    if cfg.grpo.max_staleness == "auto":
        # 1 where it was measured faster: the compiled engine's decode beside the judge and the update on one
        # card; and generation on a card of its own (not measured yet: the trainer's card then waits for the
        # decode only where it outlasts the step). On a CPU the cores are the paintings', and generating beside
        # them slows both.
        own_card = (cfg.grpo.generation_device or "").startswith("cuda")
        overlaps = (cfg.grpo.generation == "compiled" and cuda or own_card) and not cfg.grpo.update_per_group
        cfg.grpo.max_staleness = 1 if overlaps else 0
    if cfg.grpo.generation_sms == "auto":
        # split where the decode runs beside the step in this process on a card; whether the driver can is known
        # only there (salon.train.engine.overlap: auto falls back to sharing the card)
        beside = cfg.grpo.max_staleness in (1, 2) and cuda and cfg.grpo.generation_device is None
        cfg.grpo.generation_sms = "auto" if beside and not cfg.grpo.update_per_group else None


def generation_engine(cfg: TrainConfig):
    """The sampler for grpo.generation: the compiled engine (salon.train.engine.generation), TRL's transformers
    generate (salon.train.engine.transformers_sampler, a copy of the policy when it runs a step ahead), either in a
    process of its own on grpo.generation_device (salon.train.engine.sampler_process), or None for TRL's own
    engines (vLLM, continuous batching), which generate inside TRL."""
    device = cfg.grpo.generation_device
    compiled = compiled_settings(cfg.grpo) if cfg.grpo.generation == "compiled" else None
    if device is not None and cfg.grpo.generation in ("compiled", "transformers"):
        from salon.train.engine.sampler_process import ProcessSampler

        return ProcessSampler(device, compiled=compiled)
    if compiled is not None:
        from salon.train.engine.generation import CompiledGeneration

        return CompiledGeneration(**compiled, waves=cfg.grpo.generation_waves)
    if cfg.grpo.generation == "transformers":
        from salon.train.engine.transformers_sampler import TransformersSampler

        return TransformersSampler(copy=cfg.grpo.max_staleness in (1, 2))
    return None


def compiled_settings(g) -> dict:
    """The compiled engine's settings from the grpo section (salon.train.engine.generation.merged_decoder's)."""
    return {"compile": g.generation_compile, "prompt_bucket": g.generation_prompt_bucket,
            "attention": g.generation_attention, "fuse_linears": g.generation_fuse_linears,
            "fp8_weights": g.generation_weights == "fp8", "fp8_cache": g.generation_kv_cache == "fp8"}


def rollout_for(cfg: TrainConfig, sampler):
    """TRL's rollout_func: the overlapped rollout around the sampler (salon.train.engine.overlap), or the compiled
    engine itself under grpo.update_per_group (it generates a whole step at its first micro-batch), or None."""
    if sampler is None:
        return None
    if cfg.grpo.update_per_group:
        return sampler
    from salon.train.engine.overlap import OverlappedRollout

    return OverlappedRollout(sampler, staleness=cfg.grpo.max_staleness, generation_sms=cfg.grpo.generation_sms)


def generation_kwargs(g) -> dict:
    """GRPOConfig fields for grpo.generation (TRL's engines; compiled runs on TRL's transformers settings)."""
    if g.generation == "continuous_batching":
        return {"use_transformers_continuous_batching": True}
    if g.generation == "vllm_server":  # start it first: `trl vllm-serve --model MODEL` on other GPUs
        return {"use_vllm": True, "vllm_mode": "server",
                **({"vllm_server_base_url": g.vllm_server_base_url} if g.vllm_server_base_url else {})}
    if g.generation == "vllm_colocate":
        return {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": g.vllm_gpu_memory_utilization}
    return {}


def trainable_dtypes_kept(generate, model):
    """TRL's continuous-batching path casts the whole model to bf16 before `generate_batch`,
    the LoRA weights too (peft keeps them in fp32): the adapter would then train in bf16 and a
    resumed run fails in AdamW (fp32 optimizer state, bf16 parameters; seen on an H200 with
    trl 1.16). Putting each trainable parameter back in its own dtype after generating keeps the
    update what the plain engine does."""
    trainable = [(p, p.dtype) for p in model.parameters() if p.requires_grad]

    def wrapped(*args, **kwargs):
        try:
            return generate(*args, **kwargs)
        finally:
            for p, dtype in trainable:
                if p.dtype != dtype:
                    p.data = p.data.to(dtype)

    return wrapped


def check_single_process_engine(cfg: TrainConfig, processes: int) -> None:
    """Continuous batching in one process on a host with several visible GPUs spreads its paged
    KV cache over all of them while the model sits on the first, and every request fails
    (transformers 5.24, seen on a 2-GPU H200 host). Say what to do before loading anything."""
    import torch

    from salon.pool.errors import ConfigError

    if cfg.grpo.generation == "continuous_batching" and processes == 1 and torch.cuda.device_count() > 1:
        raise ConfigError([f"grpo.generation=continuous_batching in one process sees {torch.cuda.device_count()} "
                           "GPUs and would spread its KV cache over all of them: set CUDA_VISIBLE_DEVICES to one "
                           "GPU, or run one process per GPU with `accelerate launch`"], "salon train")
