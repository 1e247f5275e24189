"""A run's checkpoint-N folders: which one `resume` names, and the step a folder holds.

    resume_checkpoint(cfg, Path(cfg.output_dir))   # None, the newest (resume: latest), or the folder given
    latest_checkpoint(Path(cfg.output_dir))         # the newest checkpoint-N folder, or None
    checkpoint_step("runs/x/checkpoint-40")        # 40
"""

from __future__ import annotations

import logging
from pathlib import Path

from salon.train.config import TrainConfig

log = logging.getLogger(__name__)


def resume_checkpoint(cfg: TrainConfig, out: Path) -> str | None:
    """None, the newest checkpoint-N ("latest"), or the folder given."""
    from salon.pool.errors import ConfigError

    if not cfg.resume:
        return None
    if cfg.resume == "latest":
        last = latest_checkpoint(out)
        if last is None:
            log.info("resume=latest but %s has no checkpoint: starting fresh", out)
        return last
    if not (Path(cfg.resume) / "trainer_state.json").is_file():
        raise ConfigError([f"resume={cfg.resume!r}: not a checkpoint folder (no trainer_state.json); "
                           "use latest or an OUTPUT_DIR/checkpoint-N folder"], "salon train")
    return cfg.resume


def latest_checkpoint(out: Path) -> str | None:
    """The newest checkpoint-N folder in `out`, as `resume: latest` finds it; None when there is none."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(out)) if out.is_dir() else None


def checkpoint_step(path: str | None) -> int:
    return int(Path(path).name.rsplit("-", 1)[1]) if path else 0
