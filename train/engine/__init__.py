"""salon.train.engine: the generation engine, what writes the completions of `grpo.generation: compiled`.

    salon train train/configs/lora_1gpu.yaml            # grpo.generation=auto: this engine on CUDA with a LoRA
    engine = CompiledGeneration(compile="auto")         # salon.train.engine.generation; TRL's rollout_func

Modules: choice (which engine generates, `grpo.generation`, and the guards TRL's engines need; the
recipe calls it), generation (the merged copy of the policy, waves, the engine TRL calls), decode
(the static KV cache and one compiled step per token), decode_attention (how much of the cache a step
reads: buckets, the filled positions' Triton kernel), decode_sampling (the warpers and sampling of a
step, exactly generate's), fused_linears (sibling linear maps as one product), sampler_process,
generation_process and shared_buffers (either engine in a process of its own on grpo.generation_device,
its weights sent through shared host memory), sm_partition (the card's multiprocessors split between the decode
and the step beside it, grpo.generation_sms). It stands on
salon.train.config, salon.train.rollout and salon.train.update; nothing it imports imports it back.
"""
