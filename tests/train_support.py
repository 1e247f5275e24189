"""Helpers for the trainer tests: judges that fail on purpose, synthetic rollout archives and evals.

`FlakyJudge` (load it as "train_support:FlakyJudge"; tests/ is on sys.path through conftest)
answers like the tiny transformers judge for odd-numbered paintings it is shown and gives `None`
verdicts (a timeout) for even-numbered ones, however they are batched; `DownOracle` always raises.
`write_synthetic_run` writes an archive in the layout `salon train` writes, with paintings drawn
to order; `write_synthetic_eval` writes `salon eval`'s samples of checkpoints drawn to order.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from salon.judges.verdict import Verdict

SMOKE = str(Path(__file__).resolve().parent.parent / "train" / "configs" / "smoke.yaml")
EVAL_SUBJECTS = ["sunflower", "blue iris"]  # held out: smoke.yaml trains on peach hibiscus and koi pond
# `salon eval RUN_DIR` + these: the paint_fraction oracle, and one that is always down (None, counted)
EVAL_ORACLES = ["paint_fraction", "train_support:DownOracle,label=down"]
EVAL_ARGS = ["--prompts", *EVAL_SUBJECTS, "--samples", "2", *(a for o in EVAL_ORACLES for a in ("--oracle", o))]


class DownOracle:
    """An ImageJudge whose service is down: every call raises."""

    name = "test:down"

    def score(self, images):
        raise ConnectionError("scorer unreachable")


class FlakyJudge:
    """A judge that does not answer for every second painting it is shown, however the reward batches them."""

    prompt_version = "flaky-test"

    def __init__(self, model: str | None = None, **kwargs):
        from salon.judges.registry import load_judge

        self.inner = load_judge("transformers", model=model, **kwargs) if model else None
        self.name = "test:flaky"
        self.shown = 0

    def judge(self, candidates, references):
        if self.inner is None:
            rows = [[Verdict(reference=r.id, judge=self.name, prompt_version=self.prompt_version, p=0.5,
                             p_first=0.5, p_second=0.5) for r in references] for _ in candidates]
        else:
            rows = self.inner.judge(candidates, references)
        out = []
        for row in rows:
            self.shown += 1
            out.append(row if self.shown % 2 else [
                Verdict(reference=r.id, judge=self.name, prompt_version=self.prompt_version,
                        reason="timeout: judge did not answer") for r in references])
        return out


def painting(rng, coverage: float, hue, size: int = 96) -> bytes:
    """Paper with random blobs; `coverage` (0..1) says how much of the canvas holds paint."""
    arr = np.full((size, size, 3), 245, dtype=np.uint8)
    yy, xx = np.mgrid[:size, :size]
    n = max(1, int(round(coverage * 16)))
    cells = rng.choice(16, size=n, replace=False)
    for c in cells:
        cy, cx = (c // 4) * size // 4 + size // 8, (c % 4) * size // 4 + size // 8
        r = size // 7
        blob = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
        colour = np.clip(np.asarray(hue) + rng.integers(-40, 40, 3), 0, 255)
        arr[blob] = colour
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG")
    return buf.getvalue()


def write_synthetic_run(run_dir, collapse: bool, steps: int = 30, groups: int = 2, g: int = 4, seed: int = 0):
    """A run whose reward rises; with `collapse`, coverage and diversity fall (one template) as it does.

    Without it, coverage and diversity stay put, and components are independent noise.
    """
    from salon.train.record.archive import RolloutArchive
    from salon.train.rollout import Rollout

    rng = np.random.default_rng(seed)
    archive = RolloutArchive(run_dir / "rollouts", ["reward_gate", "reward_length", "reward_judge"])
    for step in range(steps):
        t = step / (steps - 1)
        rows = []
        for grp in range(groups):
            for pos in range(g):
                passed = rng.random() > 0.15
                template = collapse and rng.random() < t  # the collapsed template: same small painting
                if template:
                    coverage, png = 0.25, painting(np.random.default_rng(999), 0.25, [200, 120, 60])
                else:
                    coverage = float(rng.uniform(0.6, 0.9))
                    png = painting(rng, coverage, rng.integers(0, 255, 3))
                judge = (0.3 + 0.5 * t + rng.normal(0, 0.05)) if collapse else (0.3 + 0.2 * t + rng.normal(0, 0.08))
                png = png if passed else None
                length = float(rng.uniform(0.2, 1.0))
                reward = 0.05 + 0.05 * length + 0.9 * judge if passed else 0.0
                rows.append(Rollout(
                    run="synthetic", step=step, checkpoint=f"checkpoint-{step}", group=f"{step}-{grp}", row=grp,
                    position=pos, prompt="paint", completion="", completion_chars=0, seed=0, image=png,
                    gate_passed=passed, violations=[] if passed else ["no_sketch"],
                    paint_fraction=coverage / 2 if passed else None, coverage=coverage if passed else None,
                    reward=reward, rewards={"gate": float(passed), "length": length,
                                            "judge": judge if passed else None}))
        archive.write(rows, step)
    return run_dir


def write_synthetic_eval(run_dir, proxy: list[float], oracle: list[float], coverage: list[float],
                         prompts: int = 3, samples: int = 4, seed: int = 0):
    """RUN_DIR/eval/ as `salon eval` writes it, one checkpoint per list entry (steps 0, 10, 20, ...):
    each painting's reward is about proxy[i], its oracle_judge about oracle[i], and its paint covers
    coverage[i] of the canvas (a drawn coverage of 0.25 repeats one small template for every prompt)."""
    from salon.train.eval.dataset import EvalDataset, sample_id
    from salon.train.rollout import Rollout

    rng = np.random.default_rng(seed)
    store = EvalDataset(run_dir)
    for i, (p, o, c) in enumerate(zip(proxy, oracle, coverage)):
        step, rows = 10 * i, []
        for row in range(prompts):
            for pos in range(samples):
                template = c <= 0.25
                png = painting(np.random.default_rng(999) if template else rng, c,
                               [200, 120, 60] if template else rng.integers(0, 255, 3))
                prompt, render_seed = f"paint subject {row}", 1000 * row + pos
                r = Rollout(run="synthetic", step=step, checkpoint="base" if step == 0 else f"checkpoint-{step}",
                            group=f"prompt-{row:03d}", row=row, position=pos, prompt=prompt, completion="",
                            completion_chars=0, seed=render_seed, image=png, gate_passed=True,
                            paint_fraction=c / 2, coverage=c, reward=p + rng.normal(0, 0.01),
                            subject=f"subject {row}", rewards={"judge": p})
                rows.append({**r.columns(), "sample_id": sample_id(step, prompt, render_seed), "colourfulness": 20.0,
                             "oracle_judge": o + rng.normal(0, 0.01), "oracle_missing": []})
        store.write(step, rows, ["reward_judge"], ["oracle_judge"], {"fingerprint": "synthetic"})
    return store


def tiny_grpo_trainer(folder, out, prompts, engine, reward, max_new: int, lora: bool = True, **config):
    """A real GRPOTrainer on the tiny policy at `folder` with a rank-4 LoRA (or trained whole: `lora` false),
    float32 on the CPU, one optimiser step of 8 completions (per_device_train_batch_size 4 x
    gradient_accumulation_steps 2, 2 a prompt), generating through `engine` as its rollout_func; `config`: more
    GRPOConfig fields."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    settings = dict(output_dir=str(out), use_cpu=True, bf16=False, report_to=[], max_steps=1, learning_rate=0.05,
                    num_generations=2, per_device_train_batch_size=4, gradient_accumulation_steps=2,
                    max_completion_length=max_new, temperature=0.7, top_p=0.9, top_k=20, save_strategy="no",
                    logging_steps=1, seed=0, model_init_kwargs={"dtype": "float32"}, dataloader_num_workers=0)
    args = GRPOConfig(**settings | config)
    return GRPOTrainer(model=str(folder), reward_funcs=[reward], args=args,
                       train_dataset=Dataset.from_list([{"prompt": p} for p in prompts] * 4),
                       processing_class=AutoTokenizer.from_pretrained(folder), rollout_func=engine,
                       peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
                       if lora else None)


ENGINE_NEW = 12  # new tokens a completion, in the compiled engine's tests
ENGINE_PROMPTS = [[{"role": "user", "content": text}] for text in (
    "A watercolour of a peach hibiscus.", "koi", "Compare composition, colour and finish of the two paintings.",
    "The quick brown fox")]


def engine_trainer(tmp_path_factory):
    """A GRPOTrainer on a tiny Qwen3 with a LoRA that ran one step generating through the compiled engine (8
    completions per generation: per_device_train_batch_size 4 x gradient_accumulation_steps 2), and that engine."""
    from salon.models.tiny import build_lm
    from salon.train.engine.generation import CompiledGeneration

    folder = build_lm(tmp_path_factory.mktemp("policy") / "tiny", "qwen3")
    engine = CompiledGeneration(compile="off", prompt_bucket=16)
    trainer = tiny_grpo_trainer(folder, tmp_path_factory.mktemp("out"), ENGINE_PROMPTS, engine, completion_chars,
                                ENGINE_NEW)
    engine.attach(trainer)
    trainer.train()
    return trainer, engine


def left_padded(trainer, prompts):
    """The prompts' ids left-padded to the longest, as TRL's transformers path pads them."""
    from salon.train.engine.generation import tokenize

    return left_padded_ids(tokenize(prompts, trainer), trainer.processing_class.pad_token_id)


def left_padded_ids(prompt_ids: list[list[int]], pad_id: int) -> dict:
    """Token ids left-padded to the longest by TRL's own pad, with their attention mask."""
    import torch
    from trl.trainer.utils import pad

    rows = [torch.tensor(r) for r in prompt_ids]
    return {"input_ids": pad(rows, padding_value=pad_id, padding_side="left"),
            "attention_mask": pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side="left")}


def completion_chars(completions, **kwargs):
    """A reward function: each completion's length in characters."""
    return [float(len(c[0]["content"])) for c in completions]


def trl_logprobs(trainer, prompt_ids: list[list[int]], completions: list[list[int]]) -> list[list[float]]:
    """Each completion token's log-prob under the trainer's model by TRL's log-prob pass (what its loss computes
    as the "old" log-probs), prompts left-padded as TRL pads them."""
    import torch

    from salon.train.engine.transformers_sampler import sampler_logprobs

    pad_id = trainer._tokenizer.pad_token_id
    padded = left_padded_ids(prompt_ids, pad_id)
    with torch.no_grad():
        return sampler_logprobs(trainer, trainer.model, padded["input_ids"], padded["attention_mask"], completions,
                                pad_id)


def largest_gap(a: list[list[float]], b: list[list[float]]) -> float:
    """The largest difference between two completions' worth of per-token log-probs (of the same lengths)."""
    assert [len(x) for x in a] == [len(y) for y in b]
    return max(abs(x - y) for xs, ys in zip(a, b) for x, y in zip(xs, ys))


# a learn_tiny-like run (16 rollouts a step, one prompt, a checkpoint every 4 steps) whose gate
# failures fade as it learns: the failures of steps 0..16, then of steps 17..23 with or without a fall
FAILURES_RISING = [4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0]
FAILURES_FALLING = [4, 6, 8, 8, 9, 10, 10]  # runtime errors come back (issue 58, start seed 7)
FAILURES_HOLDING = [0, 1, 0, 0, 1, 0, 0]
FALL_ERROR = "Cannot read properties of undefined (reading 'x')"


def learn_tiny_steps(fall: bool, per_step: int = 16) -> dict[int, list]:
    """Each step's Rollouts of a run whose judge term rises by 0.01 a step to step 16. With `fall`,
    it holds there while runtime errors come back (FALL_ERROR; from step 18 one failure a step is a
    timeout); without, it goes on rising with a failure now and then. A failure scores 0 (gate 0)."""
    from salon.train.rollout import Rollout

    rng = np.random.default_rng(7)
    offsets = np.linspace(-0.15, 0.15, per_step)  # the group's spread of judge scores
    failures = FAILURES_RISING + (FAILURES_FALLING if fall else FAILURES_HOLDING)
    steps = {}
    for step, failing in enumerate(failures):
        judge_mean = 0.30 + 0.01 * (min(step, 16) if fall else step)
        rows = []
        for pos in range(per_step):
            k = per_step - 1 - pos  # the best-scored positions fail first: the reward feels each failure
            passed = k >= failing
            if passed:
                violations, errors = [], []
            elif step >= 17 and fall:
                violations, errors = (["timeout"], []) if step >= 18 and k == 0 else (["runtime_error"], [FALL_ERROR])
            else:
                violations, errors = (["syntax_error"], []) if k % 2 else (["runtime_error"], ["x is not defined"])
            judge = judge_mean + offsets[pos] if passed else None
            coverage = float(rng.uniform(0.6, 0.9)) if passed else None
            rows.append(Rollout(
                run="learn-tiny-fall", step=step, checkpoint=f"checkpoint-{step}" if step else "base",
                group=f"{step}-0000beef", row=0, position=pos, subject="koi", prompt="paint koi",
                completion="```js\n...\n```", completion_chars=12, code="...", seed=step,
                image=painting(rng, coverage, rng.integers(0, 255, 3), size=64) if passed else None,
                gate_passed=passed, violations=violations, js_errors=errors,
                paint_fraction=coverage / 2 if passed else None, coverage=coverage,
                reward=0.1 + 0.9 * judge if passed else 0.0,
                rewards={"gate": float(passed), "length": 0.0, "judge": judge}))
        steps[step] = rows
    return steps


def write_learn_tiny_run(run_dir, fall: bool):
    """RUN_DIR as `salon train train/configs/learn_tiny.yaml` leaves it: the rollout archive of
    `learn_tiny_steps(fall)`, checkpoint-4..24 (a trainer_state.json each) and salon_train.yaml's
    audit section."""
    import json

    import yaml

    from salon.train.record.archive import RolloutArchive

    archive = RolloutArchive(run_dir / "rollouts", ["reward_gate", "reward_length", "reward_judge"])
    steps = learn_tiny_steps(fall)
    for step, rows in steps.items():
        archive.write(rows, step)
    for step in range(4, len(steps) + 1, 4):  # grpo.save_steps: 4
        (run_dir / f"checkpoint-{step}").mkdir()
        (run_dir / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (run_dir / "salon_train.yaml").write_text(yaml.safe_dump({"audit": {"window": 4, "grid_every": 4}}))
    return run_dir
