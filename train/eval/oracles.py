"""Oracles for `salon eval`: judges the policy never optimised, named by a spec on the command line.

    --oracle paint_fraction                          an ImageJudge from the judge registry
    --oracle hpsv3,model=ckpt,device=cuda            any registered judge, with keyword arguments
    --oracle my_pkg.scorers:Crude,label=not_crude    anything importable (module:Class)
    --oracle openai,model=http://127.0.0.1:8000/v1,server_model=Qwen3-VL-30B-A3B
    --oracle transformers,model=/models/Qwen2.5-VL-7B,references=me/pool@REV,k=4

    specs = check_oracles(["paint_fraction", "openai,model=http://..."])   # parsed, or one ConfigError

A spec is NAME[,key=value...], values read as YAML. NAME goes to `salon.judges.registry`, so an
ImageJudge registered later (HPSv3) works by its name. `model` names the judge's model as every
salon command does (salon.judges.registry.judge_for, salon.models.names): a folder, a Hub id,
tiny:ARCH or random:NAME (built into RUN_DIR/eval/), or an http(s) URL (an openai judge's server,
whose model is `server_model`; an HPSv3 service). Three keys are the oracle's own: `label` (the
column is `oracle_<label>`; default: the name), and for a pairwise judge `references` and `k`
(default: the run's references and k), since a pairwise judge scores a painting by its win rate
against references.

`check_oracles` runs before anything loads or is generated, in seconds: every spec parses, every
judge exists and takes its arguments, every model can be found, every server answers (once,
without retries); all problems come in one ConfigError. An oracle that raises or gives no answer
during the run scores `None` with its reason (stored beside the score), never 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from salon.pool.errors import ConfigError, SalonError

PROBE_TIMEOUT_S = 5.0  # a server that has not answered /models or /health by then is reported down


@dataclass
class OracleSpec:
    spec: str
    name: str
    label: str
    model: str | None
    kwargs: dict
    references: str | None = None
    k: int | None = None

    @property
    def column(self) -> str:
        return f"oracle_{self.label}"

    @property
    def reason_column(self) -> str:
        return f"{self.column}_reason"


def parse_oracle(spec: str) -> OracleSpec:
    import yaml

    name, *pairs = [part.strip() for part in spec.split(",")]
    problems, kwargs = [], {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            problems.append(f"--oracle {spec!r}: {pair!r} is not key=value")
            continue
        try:
            kwargs[key.strip()] = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            problems.append(f"--oracle {spec!r}: the value of {key} is not YAML")
    if not name:
        problems.append(f"--oracle {spec!r}: starts with the judge's name, e.g. paint_fraction")
    label = str(kwargs.pop("label", None) or name.rpartition(":")[2].rpartition(".")[2]).lower()
    label = re.sub(r"[^a-z0-9_]+", "_", label).strip("_") or "oracle"
    references, k = kwargs.pop("references", None), kwargs.pop("k", None)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        problems.append(f"--oracle {spec!r}: k={k} must be a whole number of references, at least 1")
    model = kwargs.pop("model", None)
    if problems:
        raise ConfigError(problems, "salon eval")
    return OracleSpec(spec, name, label, None if model is None else str(model), kwargs, references, k)


def check_oracles(texts: list[str]) -> list[OracleSpec]:
    """The parsed specs, once every oracle is known to work (module doc); else one ConfigError naming
    every problem of every oracle."""
    from salon.judges.registry import judge_for, judge_problems
    from salon.models.names import is_url

    specs, problems = [], []
    for text in texts:
        try:
            specs.append(parse_oracle(text))
        except ConfigError as e:
            problems += e.problems
    labels = [s.label for s in specs]
    problems += [f"two oracles are labelled {x!r}: give one of them label=NAME"
                 for x in sorted({x for x in labels if labels.count(x) > 1})]
    for s in specs:
        where = f"--oracle {s.spec!r}"
        found = judge_problems(s.model, s.name, f"{where}: model", arguments=where, **s.kwargs)
        problems += [p if p.startswith(where) else f"{where}: {p}" for p in found]
        if not found and is_url(s.model):  # a server: does it answer now?
            try:
                judge = judge_for(s.model, s.name, field=f"{where}: model", arguments=where, **s.kwargs)
            except SalonError as e:
                problems.append(f"{where}: {e}")
                continue
            down = getattr(judge, "unreachable", lambda timeout_s: None)(PROBE_TIMEOUT_S)
            if down:
                problems.append(f"{where}: {down}")
    if problems:
        raise ConfigError(problems, "--oracle")
    return specs


class Oracle:
    """A loaded oracle: `score(images, prompt) -> ([float | None], [reason | None])` for one prompt's
    paintings.

    An ImageJudge's `score`; a RatingJudge (a reward model such as HPSv3) is asked to `rate` the
    paintings against the subject's prompt; a pairwise Judge gives each painting's win rate
    against one seeded reference draw per prompt."""

    def __init__(self, spec: OracleSpec, run_dir: Path, train_cfg, run_references=None):
        from salon.judges.registry import judge_for

        self.spec = spec
        where = f"--oracle {spec.spec!r}"
        self.judge = judge_for(spec.model, spec.name, cache=run_dir / "eval", field=f"{where}: model",
                               arguments=where, **spec.kwargs)
        self.pairwise = hasattr(self.judge, "judge") and not hasattr(self.judge, "score")
        self.references, self.k, self.mix = None, spec.k or train_cfg.judge.k, train_cfg.judge.mix
        if self.pairwise:
            self.references = (self._references(spec.references, run_dir) if spec.references
                               else run_references)

    @staticmethod
    def _references(source: str, run_dir: Path):
        from salon.judges.references import load_references
        from salon.models.tiny import resolve_references

        return load_references(resolve_references(source, run_dir / "eval" / "tiny-refs"))

    def score(self, images: list, prompt: str) -> tuple[list[float | None], list[str | None]]:
        from salon.train.scoring import judge_safely, safe_ratings

        if not self.pairwise:  # a reward model (with the prompt where it takes one) or an image judge
            ratings = safe_ratings(self.judge, images, [prompt] * len(images))
            return [None if r.score is None else float(r.score) for r in ratings], [r.reason for r in ratings]
        from salon.judges.winrate import draw_references, group_seed

        # one draw per prompt, the same for every checkpoint: their scores differ by the paintings only
        draw = draw_references(self.references, self.k, self.mix, seed=group_seed(0, "oracle", prompt))
        scores, reasons = judge_safely(self.judge, images, [draw] * len(images))
        return list(scores), list(reasons)
