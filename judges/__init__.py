"""salon.judges: pairwise VLM judges, win-rate against pool references, image metrics, validation.

    from salon.judges import load_judge, load_references, draw_references, judge_group, group_seed

    judge = load_judge("transformers", model="path/to/Qwen2.5-VL-7B-Instruct")   # or "openai", base_url=...
    refs = load_references("me/salon-pool@<commit>")                             # or a folder
    draw = draw_references(refs, k=4, mix={"love": 0.5, "okay": 0.5}, seed=group_seed(run, step, prompt))
    scored = judge_group(judge, images, draw)        # scored.scores: one float or None per image

Modules: verdict (Reference, Verdict, Rating, protocols), prompt, vlm_transformers, vlm_shared
(prefix sharing), vlm_vision (its vision tower's windows and host-planned inputs), vlm_openai,
registry, references, winrate, image_judges, adversarial, validate;
hpsv3 (the HPSv3 reward model: hpsv3_config, hpsv3_rating, hpsv3_remote; its network and prompt
are salon.models.hpsv3 and hpsv3_prompt), validate_scorer.
Importing this package does not import torch.
"""

from salon.judges.references import ReferenceSet, load_references
from salon.judges.registry import JUDGES, judge_for, load_judge
from salon.judges.verdict import ImageJudge, Judge, Reference, Verdict
from salon.judges.winrate import (GroupScore, ReferenceDraw, draw_references, group_seed, judge_group, judge_groups,
                                  win_rate)

__all__ = [
    "JUDGES", "GroupScore", "ImageJudge", "Judge", "Reference", "ReferenceDraw", "ReferenceSet", "Verdict",
    "draw_references", "group_seed", "judge_for", "judge_group", "judge_groups", "load_judge", "load_references",
    "win_rate",
]
