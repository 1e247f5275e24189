"""salon.models: the models salon builds or loads by name, for the judges, the trainer and the apps.

    resolve_model("tiny:qwen3")                  # salon.models.names: the one resolver of model names;
    resolve_model("random:qwen3-1.7b", run_dir)  #   tiny: and random: models are built once, under a cache
    resolve_model("Qwen/Qwen3-1.7B")             # a folder, a Hub id or a URL is returned as it is
    model_problem("policy.model", spec)          # one line saying what is wrong, or None (nothing loaded)
    load_released("ckpt/HPSv3.safetensors", "ckpt/base", dtype, "cuda")   # salon.models.hpsv3

    salon judge --model tiny:qwen2_5_vl --refs salon-pool IMAGE   # a name wherever a model is named
    salon train train/configs/smoke.yaml                         # tiny: policy, judge and references

Modules: names (the resolver and its checks), tokenizer (the small Qwen-style BPE every built
model carries), tiny (tiny: builders), shapes (random: builders), hpsv3 (HPSv3's network, its
strict loader and released layout) and hpsv3_prompt (the rubric it was trained with). It stands
on salon.pool.errors alone, so every floor above (judges, train, apps) can name a model the same
way. Importing it does not import torch.
"""
