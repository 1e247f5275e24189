"""Oracles for `salon eval`: judges the policy never optimised, named by a spec on the command line.

    --oracle paint_fraction                          an ImageJudge from the judge registry
    --oracle hpsv3,device=cuda                       any registered ImageJudge, with keyword arguments
    --oracle my_pkg.scorers:Crude,label=not_crude    anything importable (module:Class)
    --oracle openai,model=http://127.0.0.1:8000/v1,server_model=Qwen3-VL-30B-A3B
    --oracle transformers,model=/models/Qwen2.5-VL-7B,references=me/pool@REV,k=4

A spec is NAME[,key=value...], values read as YAML. NAME goes to `salon.judges.registry`, so an
ImageJudge registered later (HPSv3) works by its name. Three keys are the oracle's own: `label`
(the column is `oracle_<label>`; default: the name), and for a pairwise judge `references` and
`k` (default: the run's references and k), since a pairwise judge scores a painting by its win
rate against references. `model` names the judge's model as every salon command does
(salon.judges.registry.judge_for, salon.models.names): a folder, a Hub id, tiny:ARCH or random:NAME
(built into RUN_DIR/eval/), or an http(s) URL (an openai judge's server, whose model is
`server_model`; an HPSv3 service).

An oracle that raises or gives no answer scores `None` (missing, counted), never 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from salon.pool.errors import ConfigError


@dataclass
class OracleSpec:
    spec: str
    name: str
    label: str
    kwargs: dict
    references: str | None = None
    k: int | None = None

    @property
    def column(self) -> str:
        return f"oracle_{self.label}"


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
    if problems:
        raise ConfigError(problems, "salon eval")
    return OracleSpec(spec, name, label, kwargs, references, k)


def check_specs(specs: list[OracleSpec]) -> None:
    """Before anything loads: every oracle's name resolves (JudgeError says how), labels are unique."""
    from salon.judges.registry import resolve

    for s in specs:
        resolve(s.name)
    labels = [s.label for s in specs]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:
        raise ConfigError([f"two oracles are labelled {x!r}: give one of them label=NAME" for x in twice],
                          "salon eval")


class Oracle:
    """A loaded oracle: `score(images, prompt) -> [float | None]` for one prompt's paintings.

    An ImageJudge's `score`; a RatingJudge (a reward model such as HPSv3) is asked to `rate` the
    paintings against the subject's prompt; a pairwise Judge gives each painting's win rate
    against one seeded reference draw per prompt."""

    def __init__(self, spec: OracleSpec, run_dir: Path, train_cfg, run_references=None):
        from salon.judges.registry import judge_for

        self.spec = spec
        kwargs = dict(spec.kwargs)
        where = f"--oracle {spec.spec!r}"
        self.judge = judge_for(kwargs.pop("model", None), spec.name, cache=run_dir / "eval", field=f"{where}: model",
                               arguments=where, **kwargs)
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

    def score(self, images: list, prompt: str) -> list[float | None]:
        from salon.train.scoring import judge_safely, safe_ratings

        if not self.pairwise:  # a reward model (with the prompt where it takes one) or an image judge
            ratings = safe_ratings(self.judge, images, [prompt] * len(images))
            return [None if r.score is None else float(r.score) for r in ratings]
        from salon.judges.winrate import draw_references, group_seed

        # one draw per prompt, the same for every checkpoint: their scores differ by the paintings only
        draw = draw_references(self.references, self.k, self.mix, seed=group_seed(0, "oracle", prompt))
        return list(judge_safely(self.judge, images, [draw] * len(images))[0])
