"""The update's correction for completions sampled by the policy an update or two ago (`grpo.max_staleness`).

    install(trainer, rollout, cap=3.0)   # the recipe does, after salon.train.engine.overlap's rollout is attached
                                         # and after any other wrapper of TRL's log-prob forward (causal_loss)

A completion of step n was sampled by theta_{n-1} (salon.train.engine.overlap); the loss is taken at theta_n.
Each completion token gets the importance weight

    w_t = min(exp(log pi_theta_n(y_t) - log pi_theta_{n-1}(y_t)), cap)

with the sampler's log-probs recorded at generation (TRL keeps a rollout_func's `logprobs` as
`sampling_per_token_logps`). This is TRL's `vllm_importance_sampling_correction` in its `token_truncate` mode
with `vllm_importance_sampling_clip_max` = `grpo.importance_sampling_cap`. TRL applies its own correction only
with vLLM (`use_vllm`); here the weight enters through the advantage instead: TRL's loss takes (B, T)
advantages, and for every loss it offers (grpo, dapo, dr_grpo, bnpo, cispo, sapo) a non-negative w_t
scales the token's policy-gradient term exactly as TRL's `per_token_loss * importance_sampling_ratio`
does, the KL term untouched.

theta_n's log-probs are the loss's own forward's, detached, taken before the loss reads the advantages: the
config allows staleness only with one update a generation (num_iterations 1, steps_per_generation unset), so
every micro-batch of a step is learned at theta_n, the weights its completions are weighed at. No log-prob pass
of their own: one costs a forward of the step's whole batch (on an H100 at 64 x 2,048 with checkpointing, the
update took 14.8 s with one against 11.5 without: docs/training.md).

A step whose completions were generated when TRL asked (staleness 0) is left as TRL made it: no weight, unless
the sampler is not the policy even then (`every_step`: float8 weights or cache, salon.train.engine.fp8_linears
and fp8_cache). Logged once a step as salon/overlap/NAME, over its completion tokens after the cap:
importance_weight_mean, _min, _max, truncated_share (tokens whose weight was cut) and log_ratio_abs_mean.
"""

from __future__ import annotations

import functools
import threading

import torch


def importance_weights(current: torch.Tensor, sampler: torch.Tensor, mask: torch.Tensor,
                       cap: float) -> tuple[torch.Tensor, dict]:
    """(B, T) weights min(exp(current - sampler), cap) on completion tokens (1 on padding), and their tally (sums,
    extremes and counts over the completion tokens, which `figures` turns into the logged figures)."""
    log_ratio = ((current - sampler) * mask).nan_to_num(0.0)  # a NaN sampler log-prob corrects nothing
    raw = torch.exp(log_ratio.clamp(max=20.0))
    weights = raw.clamp(max=cap)
    on = mask.bool()
    seen = weights[on]
    tally = {"tokens": float(seen.numel()), "weight_sum": seen.sum().item(),
             "weight_min": seen.min().item() if seen.numel() else 1.0,
             "weight_max": seen.max().item() if seen.numel() else 1.0,
             "truncated": (raw[on] > cap).sum().item(), "log_ratio_abs_sum": log_ratio[on].abs().sum().item()}
    return weights, tally


def merged(a: dict, b: dict) -> dict:
    """Two micro-batches' tallies as one."""
    summed = {k: a[k] + b[k] for k in ("tokens", "weight_sum", "truncated", "log_ratio_abs_sum")}
    return summed | {"weight_min": min(a["weight_min"], b["weight_min"]),
                     "weight_max": max(a["weight_max"], b["weight_max"])}


def figures(tally: dict) -> dict:
    n = tally["tokens"]
    return {"importance_weight_mean": tally["weight_sum"] / n if n else 1.0,
            "importance_weight_min": tally["weight_min"], "importance_weight_max": tally["weight_max"],
            "truncated_share": tally["truncated"] / n if n else 0.0,
            "log_ratio_abs_mean": tally["log_ratio_abs_sum"] / n if n else 0.0}


def weighed(inputs: dict, current: torch.Tensor, cap: float) -> dict:
    """Scale `inputs`' advantages by the weights of theta_n's log-probs `current` (in place); their tally."""
    mask = inputs["completion_mask"]
    if "tool_mask" in inputs:
        mask = mask * inputs["tool_mask"]
    weights, tally = importance_weights(current, inputs["sampling_per_token_logps"], mask, cap)
    advantages = inputs["advantages"]
    inputs["advantages"] = (advantages[:, None] if advantages.dim() == 1 else advantages) * weights
    return tally


def install(trainer, rollout, cap: float, every_step: bool = False) -> None:
    """Wrap TRL's `_generate_and_score_completions` (is the step stale), its `_compute_loss` and its log-prob
    forward `_get_per_token_logps_and_entropies` (a stale step's weights, in the loss). `every_step`: a fresh
    step's tokens are weighed too (a sampler that is not the policy: grpo.generation_weights or
    generation_kv_cache fp8)."""
    score, loss, forward = (trainer._generate_and_score_completions, trainer._compute_loss,
                            trainer._get_per_token_logps_and_entropies)
    weigh_in_loss = [False]  # this step is stale: its micro-batches are weighed in their loss's forward
    # the inputs of the loss being taken, until its forward has weighed them; per thread, since a sampler decoding
    # ahead in a thread of its own runs the same log-prob forward for its own rows (transformers_sampler)
    loss_in_thread = threading.local()
    logged = {"step": None, "tally": None}

    def log(tally: dict) -> None:
        """One entry a step: a later micro-batch of the same step replaces the entry its first one appended."""
        metrics, step = trainer._metrics["train"], trainer.state.global_step
        again = logged["step"] == step  # its tally is set with its step
        logged["step"], logged["tally"] = step, merged(logged["tally"], tally) if again else tally
        for name, value in figures(logged["tally"]).items():
            values = metrics[f"salon/overlap/{name}"]
            if again and values:
                values[-1] = value
            else:
                values.append(value)

    @functools.wraps(score)
    def scored(inputs):
        out = score(inputs)
        if trainer.model.training:
            weigh_in_loss[0] = (every_step or rollout.handed_staleness > 0) and "sampling_per_token_logps" in out
        return out

    @functools.wraps(loss)
    def stale_loss(model, inputs):
        if not (weigh_in_loss[0] and model.training):
            return loss(model, inputs)
        inputs = dict(inputs)  # the buffered micro-batch stays as TRL made it
        loss_in_thread.waiting = inputs
        try:
            out = loss(model, inputs)
        finally:
            unweighed = loss_in_thread.waiting is not None  # still there: no forward took it
            loss_in_thread.waiting = None
        if unweighed:
            raise RuntimeError("salon's stale correction: TRL's loss ran no log-prob forward "
                               "(_get_per_token_logps_and_entropies) to weigh this stale step by; a TRL loss path "
                               "salon does not know (liger?). Use grpo.max_staleness=0.")
        return out

    @functools.wraps(forward)
    def forward_weighing(*args, **kwargs):
        out = forward(*args, **kwargs)
        inputs = getattr(loss_in_thread, "waiting", None)
        if inputs is not None:  # this thread's loss's own forward, at theta_n: weigh before the loss reads them
            loss_in_thread.waiting = None
            log(weighed(inputs, out[0].detach(), cap))
        return out

    trainer._generate_and_score_completions = scored
    trainer._compute_loss = stale_loss
    trainer._get_per_token_logps_and_entropies = forward_weighing
