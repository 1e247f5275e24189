"""Example: GRPO against `salon env serve` through TRL's OpenEnv integration (`environment_factory`).

    salon env serve --port 8000 &                    # the environment (any judge, any render backend)
    python -m salon.train.env.grpo --env-url http://127.0.0.1:8000 --model Qwen/Qwen3-4B \\
        --subject "peach hibiscus" --repeat 64 --output-dir runs/env-hibiscus
    python -m salon.train.env.grpo --env-url http://127.0.0.1:8000 --model tiny:qwen3 --cpu --max-steps 2

How it talks to the environment (TRL's contract, `GRPOTrainer(environment_factory=...)`): TRL
makes one `SalonPaintEnv` per rollout and calls `reset(**row)` with the dataset row, so each
row's `seed` goes to the server's reset and every completion of a group (TRL repeats a row
num_generations times) faces the same references and render seed. Its one tool, `paint(sketch)`,
steps the episode: a tool-calling model submits its sketch there and reads what the renderer
and the judge said. A model that just answers with a sketch (the usual single-turn painter)
is scored by `environment_reward`, which steps the episode with the whole reply. Either way the
reward is the server's, and an infrastructure failure there is `None` (TRL leaves the sample out
of the group baseline), never 0.

The prompts come from the server too (reset returns the messages), so the environment owns the
prompt wording and its version. Tiny models (`tiny:qwen3`, salon.models.tiny) get TRL's Qwen3
chat template, which can render tool calls, so the example runs offline on a CPU.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path


def make_environment(env_url: str):
    """The class TRL instantiates once per rollout (it takes no arguments, so the URL is closed over)."""
    from salon.train.env.client import PaintEnvClient

    class SalonPaintEnv:
        def __init__(self):
            self._client = PaintEnvClient(env_url)
            self._done = None

        def reset(self, seed: int = 0, subject: str | None = None, **row) -> str | None:
            self._done = None
            self._client.reset(seed=int(seed), subject=subject)
            return None  # the prompt is already the row's (it came from the server's reset)

        def paint(self, sketch: str) -> str:
            """
            Paint a p5.js + p5.brush sketch: render it in the sandbox and have the judge score it.

            Args:
                sketch: The complete sketch, starting with function setup().

            Returns:
                What the sandbox and the judge said about the painting.
            """
            if self._done is not None:
                raise ValueError("The painting is finished: one painting per episode.")
            self._done = obs = self._client.step(sketch, return_image=False)
            if obs.infra_error:
                return f"The painting could not be scored ({obs.infra_error})."
            if obs.violations:
                return f"The sketch was rejected: {', '.join(obs.violations)}."
            return f"Painted: {obs.paint_fraction:.0%} of the canvas holds paint; judge score {obs.components['judge']:.3f}."

        def _reward(self, reply: str) -> float | None:
            if self._done is None:
                self.paint(reply)
            return self._done.reward

    return SalonPaintEnv


def environment_reward(environments, completions, **kwargs) -> list[float | None]:
    """The server's reward per rollout; single-turn replies are submitted here as the painting."""
    # TRL gives a string (standard dataset) or the assistant's messages (conversational)
    texts = [c if isinstance(c, str) else "".join(str(m.get("content") or "") for m in c) for c in completions]
    return [env._reward(text) for env, text in zip(environments, texts)]


def build_dataset(env_url: str, subjects: list[str], repeat: int):
    """One row per (subject, seed): the server's prompt for it, and the seed TRL passes back to reset."""
    from datasets import Dataset

    from salon.train.env.client import PaintEnvClient

    rows = []
    with PaintEnvClient(env_url) as env:
        for subject in subjects:
            for seed in range(repeat):
                obs = env.reset(seed=seed, subject=subject)
                rows.append({"prompt": obs.prompt, "subject": obs.subject, "seed": seed})
    return Dataset.from_list(rows)


def train(env_url: str, model: str, output_dir: str, subjects: list[str], repeat: int = 8, max_steps: int = 100,
          num_generations: int = 8, max_completion_length: int = 4096, learning_rate: float = 5e-5,
          cpu: bool = False):
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from salon.models.names import model_problem, resolve_model
    from salon.models.tiny import is_tiny
    from salon.pool.errors import ConfigError
    from salon.train.progress import quiet_library_warnings

    if problem := model_problem("--model", model):
        raise ConfigError([problem], "salon.train.env.grpo")
    out = Path(output_dir)
    path = resolve_model(model, out)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if is_tiny(model):
        from trl.chat_template_utils import qwen3_chat_template

        tokenizer.chat_template = qwen3_chat_template  # a template that renders tool calls
    args = GRPOConfig(output_dir=str(out), max_steps=max_steps, learning_rate=learning_rate,
                      per_device_train_batch_size=num_generations, num_generations=num_generations,
                      max_completion_length=max_completion_length, logging_steps=1, save_strategy="no",
                      report_to="none", use_cpu=cpu, bf16=not cpu, activation_checkpointing=not cpu,
                      scale_rewards="none", chat_template_kwargs={"enable_thinking": False})
    quiet_library_warnings()  # TRL's generation toggles checkpointing under names transformers 5 deprecated
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using 'environment_factory'")  # TRL marks it experimental
        trainer = GRPOTrainer(model=path, processing_class=tokenizer, args=args,
                              train_dataset=build_dataset(env_url, subjects, repeat),
                              reward_funcs=[environment_reward], environment_factory=make_environment(env_url))
    trainer.train()
    return trainer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-url", default="http://127.0.0.1:8000")
    p.add_argument("--model", default="tiny:qwen3", help="policy: folder, Hub id or tiny:qwen3")
    p.add_argument("--output-dir", default="runs/openenv")
    p.add_argument("--subject", action="append", dest="subjects", help="repeatable (default: peach hibiscus)")
    p.add_argument("--repeat", type=int, default=8, help="rows (seeds) per subject")
    p.add_argument("--max-steps", type=int, default=100)
    p.add_argument("--num-generations", type=int, default=8)
    p.add_argument("--max-completion-length", type=int, default=4096)
    p.add_argument("--cpu", action="store_true")
    a = p.parse_args(argv)
    train(a.env_url, a.model, a.output_dir, a.subjects or ["peach hibiscus"], a.repeat, a.max_steps,
          a.num_generations, a.max_completion_length, cpu=a.cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
