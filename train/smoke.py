"""Stand-in sketches for smoke runs, tests and benchmarks: a planner that swaps in bundled examples.

    planner = ExampleSketches(Planner(seed), share=0.5, files=["still_02_teacup.js"])
    RewardAdapter(scorer, render=..., planner=planner)          # what `smoke:` in a config does

A random policy (the tiny models of a smoke run, random weights in a benchmark) writes no sketch,
so every rollout would fail the gate and nothing would be rendered or judged. This planner gives
the first `share` of each group a bundled example sketch (curate/examples/*.js) in place of the
policy's code, so rendering and judging do their real work; a comment at its end names the example
and the completion, so each completion is its own sketch and its own render, as a policy's are. The
policy's own text is still what the length component and the archive's `completion` see, and each
swapped rollout names its example in the archive's `substituted_example` column. The production
reward never does this: only a config's `smoke:` section, tests and benchmarks opt in.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from salon.judges.winrate import group_seed
from salon.pool.errors import ConfigError
from salon.train.rollout import Planner, Sample

EXAMPLES = Path(__file__).resolve().parent.parent / "curate" / "examples"


@dataclass
class ExampleSketches:
    planner: Planner
    share: float = 0.5  # of each group, rounded up
    files: list[str] = field(default_factory=list)  # names in curate/examples/ (default: all)

    def __post_init__(self):
        p = []
        if not 0 < self.share <= 1:
            p.append(f"share={self.share}: a share of each group in (0, 1]")
        p += [f"{name} is not in curate/examples/" for name in self.files if not (EXAMPLES / name).is_file()]
        if p:
            raise ConfigError(p, "example sketches")
        paths = [EXAMPLES / n for n in self.files] if self.files else sorted(EXAMPLES.glob("*.js"))
        self._examples = [(p.name, p.read_text(encoding="utf-8")) for p in paths]

    def plan(self, prompts, texts, step: int, rows=None, subjects=None) -> list[Sample]:
        samples = self.planner.plan(prompts, texts, step, rows, subjects)
        sizes: dict[str, int] = {}
        for s in samples:
            sizes[s.group] = sizes.get(s.group, 0) + 1
        out = []
        for s in samples:
            if s.position < math.ceil(self.share * sizes[s.group]):
                # chosen by prompt and position in the group: a prefetch (grouping as TRL lays rows out) agrees
                name, code = self._examples[group_seed(self.planner.seed, step, s.prompt, s.position)
                                            % len(self._examples)]
                # marked with the completion it stands in for: each completion is its own sketch, as a
                # policy's are, so two that drew one example are two renders, not one shared painting
                mark = hashlib.sha256(s.completion.encode()).hexdigest()[:16]
                s = replace(s, code=f"{code}\n// salon smoke: {name} in place of completion {mark}\n",
                            substituted_example=name)
            out.append(s)
        return out
