"""salon.models: the models salon builds or loads by name, for the judges, the trainer and the apps.

    resolve_model("tiny:qwen3", folder)          # salon.models.tiny: tiny random models, offline on a CPU
    resolve_model("random:qwen3-1.7b", folder)   # salon.models.shapes: real shapes, random weights
    resolve_model("Qwen/Qwen3-1.7B", folder)     # anything else is returned as it is (a folder or Hub id)
    load_released("ckpt/HPSv3.safetensors", "ckpt/base", dtype, "cuda")   # salon.models.hpsv3

    salon judge --scorer hpsv3 --model tiny:hpsv3 IMAGE      # a spec wherever a model is named
    salon train train/configs/smoke.yaml                     # tiny: policy, judge and references

Modules: tokenizer (the small Qwen-style BPE every built model carries), tiny (tiny: specs),
shapes (random: specs), hpsv3 (HPSv3's network, its strict loader and released layout) and
hpsv3_prompt (the rubric it was trained with). It stands on salon.pool.errors alone, so every
floor above (judges, train, apps) can name a model the same way. Importing it does not import torch.
"""
