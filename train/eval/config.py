"""What `salon eval` evaluates and how alarms are judged: a dataclass validated on construction.

    config = EvalConfig("runs/x", prompts=["sunflower", "blue iris"], samples=4, oracles=["paint_fraction"])
    subjects = eval_subjects(train_cfg, config.prompts)      # [(Subject, held_out)]

`prompts` are subject names (looked up in the run's subject book; an unknown name is painted
as named), a subjects YAML file (every subject in it), or a text file with one name a line.
Empty: every bundled subject the run did not train on. A subject the run trained on is allowed
(its eval seeds are not the training seeds) and reported with `held_out: false`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from salon.pool.errors import ConfigError
from salon.pool.field_checks import Range, at_least, field_problems, raise_problems

Tolerance = Annotated[float, Range(0, says="a tolerance cannot be negative")]


@dataclass
class EvalConfig:
    run_dir: str
    prompts: list[str] = field(default_factory=list)
    samples: Annotated[int, at_least(1)] = 4  # paintings per prompt and checkpoint
    # 0: every kept checkpoint; N: steps that are multiples of N (and the last)
    every: Annotated[int, at_least(0), "0 = every checkpoint"] = 0
    base: bool = True  # the base policy (step 0) too: where a rise is measured from
    oracles: list[str] = field(default_factory=list)  # specs, salon.train.eval.oracles
    resume: bool = False  # keep checkpoints already evaluated with these same settings
    seed: int = 0  # the eval's own seed: render seeds and sampling, never the training ones
    grid_columns: Annotated[int, at_least(1)] = 8  # prompt-and-seed columns of the checkpoint grid
    # alarms (salon.train.eval.report): at a checkpoint whose proxy is above an earlier one's by
    # proxy_rise while a measure is worse than there by more than its tolerance
    proxy_rise: Tolerance = 0.02
    oracle_drop: Tolerance = 0.05  # relative fall of an oracle's mean
    craft_drop: Tolerance = 0.15  # relative fall of coverage, colourfulness, within-prompt diversity
    share_rise: Tolerance = 0.10  # absolute rise of blank share or cross-prompt similarity

    def __post_init__(self):
        p = field_problems(self)
        run = Path(self.run_dir)
        if not (run / "salon_train.yaml").is_file():
            p.append(f"{run}: not a salon train output folder (no salon_train.yaml): give the --output-dir of a run")
        if len(set(self.oracles)) != len(self.oracles):
            p.append(f"--oracle given twice: {self.oracles}")
        raise_problems("salon eval", p)


def eval_subjects(train_cfg, prompts: list[str]) -> list[tuple[object, bool]]:
    """[(Subject, held_out)] for `prompts` (see module doc), held_out = the run never trained on it."""
    from salon.curate.prompts import SubjectBook

    book = SubjectBook.load(train_cfg.data.subjects_file)
    trained = set(train_cfg.data.subjects)
    if not prompts:
        subjects = [s for name, s in book.subjects.items() if name not in trained]
        if not subjects:
            raise ConfigError(["the run trained on every subject of its book: name held-out subjects with "
                               "--prompts SUBJECT... or a file"], "salon eval")
    else:
        subjects = []
        for spec in prompts:
            path = Path(spec)
            if path.suffix in (".yaml", ".yml") and path.is_file():
                subjects += list(SubjectBook.load(path).subjects.values())
            elif path.suffix == ".txt" and path.is_file():
                names = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
                subjects += [book.get(n) for n in names if n and not n.startswith("#")]
            else:
                subjects.append(book.get(spec))
    unique = list({s.name: s for s in subjects}.values())
    return [(s, s.name not in trained) for s in unique]
