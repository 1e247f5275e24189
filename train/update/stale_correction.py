"""The update's correction for completions sampled by the policy an update or two ago (`grpo.max_staleness`).

    install(trainer, rollout, cap=3.0)   # the recipe does, after salon.train.engine.overlap's rollout is attached

A completion of step n was sampled by theta_{n-1} (salon.train.engine.overlap); the loss is taken at theta_n.
Each completion token gets the importance weight

    w_t = min(exp(log pi_theta_n(y_t) - log pi_theta_{n-1}(y_t)), cap)

with the sampler's log-probs recorded at generation (TRL keeps a rollout_func's `logprobs` as
`sampling_per_token_logps`) and theta_n's from TRL's own log-prob pass, run here as TRL runs it for its vLLM
correction. This is TRL's `vllm_importance_sampling_correction` in its `token_truncate` mode with
`vllm_importance_sampling_clip_max` = `grpo.importance_sampling_cap`. TRL applies its own correction only
with vLLM (`use_vllm`); here the weight enters through the advantage instead: TRL's loss takes (B, T)
advantages, and for every loss it offers (grpo, dapo, dr_grpo, bnpo, cispo, sapo) a non-negative w_t
scales the token's policy-gradient term exactly as TRL's `per_token_loss * importance_sampling_ratio`
does, the KL term untouched. theta_n's log-probs also become TRL's `old_per_token_logps`, the anchor of
its clipped ratio, which they are (nothing has been updated since).

A step whose completions were generated when TRL asked (staleness 0) is left as TRL made it: no pass, no
weight. Logged per step as salon/overlap/NAME: importance_weight_mean, _min, _max (over completion tokens,
after the cap), truncated_share (tokens whose weight was cut), and log_ratio_abs_mean.
"""

from __future__ import annotations

import functools

import torch


def importance_weights(current: torch.Tensor, sampler: torch.Tensor, mask: torch.Tensor,
                       cap: float) -> tuple[torch.Tensor, dict]:
    """(B, T) weights min(exp(current - sampler), cap) on completion tokens (1 on padding), and their figures."""
    log_ratio = ((current - sampler) * mask).nan_to_num(0.0)  # a NaN sampler log-prob corrects nothing
    raw = torch.exp(log_ratio.clamp(max=20.0))
    weights = raw.clamp(max=cap)
    on = mask.bool()
    seen = weights[on]
    figures = {"importance_weight_mean": seen.mean().item() if seen.numel() else 1.0,
               "importance_weight_min": seen.min().item() if seen.numel() else 1.0,
               "importance_weight_max": seen.max().item() if seen.numel() else 1.0,
               "truncated_share": (raw[on] > cap).float().mean().item() if seen.numel() else 0.0,
               "log_ratio_abs_mean": log_ratio[on].abs().mean().item() if seen.numel() else 0.0}
    return weights, figures


def install(trainer, rollout, cap: float) -> None:
    """Wrap TRL's `_generate_and_score_completions`: a stale batch's advantages carry each token's weight."""
    original = trainer._generate_and_score_completions

    @functools.wraps(original)
    def corrected(inputs):
        out = original(inputs)
        if not trainer.model.training or rollout.handed_staleness == 0 or "sampling_per_token_logps" not in out:
            return out
        mask = out["completion_mask"]
        if "tool_mask" in out:
            mask = mask * out["tool_mask"]
        current = out.get("old_per_token_logps")
        if current is None:  # TRL skipped its pass: the steps are aligned and it saw no vLLM
            with torch.no_grad():
                current, _, _ = trainer._get_per_token_logps_and_entropies(
                    trainer.model, torch.cat([out["prompt_ids"], out["completion_ids"]], 1),
                    torch.cat([out["prompt_mask"], out["completion_mask"]], 1), out["completion_ids"].size(1),
                    batch_size=trainer.args.per_device_train_batch_size)
            out["old_per_token_logps"] = current
        weights, figures = importance_weights(current, out["sampling_per_token_logps"], mask, cap)
        advantages = out["advantages"]
        out["advantages"] = (advantages[:, None] if advantages.dim() == 1 else advantages) * weights
        for name, value in figures.items():
            trainer._metrics["train"][f"salon/overlap/{name}"].append(value)
        return out

    trainer._generate_and_score_completions = corrected
