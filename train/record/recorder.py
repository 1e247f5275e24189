"""Recording a reward call: the rollouts to the archive, their statistics to TRL's metrics, the audit.

    recorder = Recorder(components, archive=RolloutArchive(...), audit=AuditSettings(), audit_dir=out / "audit")
    recorder.record(rollouts, step, log_metric, timing={"render_wait_s": ..., "judge_s": ...})

Every rollout goes to the archive (salon.train.record.archive) as written, and the same rows feed the
audit statistics (salon.train.record.audit): means and stds of every component, coverage, blank share,
diversity, the none count, correlation and saturation over the recent window, and the collapse
alarms over the per-step history. They reach trackio through TRL's `log_metric` as `salon/...`.
A fall of the reward's mean or gate pass from its best window (salon.train.record.audit_collapse) logs one
warning per fall, naming the checkpoint before it, `salon/fall_from_best/<measure>` at every step, and
`salon/alarm/<name>` = 1 at every step while the fall holds.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

from salon.train.record import audit
from salon.train.record.audit_collapse import FallWatch
from salon.train.config import AuditSettings
from salon.train.rollout import Rollout

log = logging.getLogger(__name__)


@dataclass
class Recorder:
    components: list[str]
    archive: object | None = None  # a RolloutArchive; None records metrics only
    audit: AuditSettings = field(default_factory=AuditSettings)
    audit_dir: Path | None = None  # rollout image grids go under audit_dir/grids/
    run_dir: Path | None = None  # where the checkpoint-N folders are: a collapse alarm names the one before the fall
    process: int = 0
    history: list[dict] = field(default_factory=list)  # per-step statistics, for the alarms
    recent: list[dict] = field(default_factory=list)  # rows of the last audit window (no images)
    falls: FallWatch = field(init=False)

    def __post_init__(self):
        self.falls = FallWatch(self.audit, self.run_dir)

    def record(self, rollouts: list[Rollout], step: int, log_metric=None, timing: dict | None = None) -> dict:
        """Archive, compute and log; returns the statistics logged."""
        rows = [r.columns() for r in rollouts]
        images = [r.painting for r in rollouts]
        if self.archive is not None:
            self.archive.write(rollouts, step)
        stats = audit.batch_stats(rows, images, self.components)
        stats["image_unreadable"] = sum("image" in r.missing for r in rollouts)
        for row in rows:
            row.pop("image")  # the window keeps numbers, not paintings
        self.recent = [r for r in self.recent if r["step"] > step - self.audit.window] + rows
        checks = audit.window_checks(self.recent, self.components, self.audit)
        stats.update({f"corr/{k}": v for k, v in checks["correlation"].items()})
        stats.update({f"alarm/correlated/{k}": 1.0 for k in checks["correlated"]})
        stats.update({f"alarm/saturated/{c}": 1.0 for c in checks["saturated"]})
        stats.update({f"time/{k}": v for k, v in (timing or {}).items()})
        self._remember(step, stats)
        alarms = [a for a in audit.alarms(self.history, self.audit) if a["step"] == step]
        for alarm in alarms:
            log.warning("audit alarm at step %d: %s", step, alarm["message"])
        stats.update({f"alarm/{a['name']}": 1.0 for a in alarms})
        for alarm in self.falls.add(step, rows):
            log.warning("audit alarm at step %d: %s: %s", step, alarm["name"], alarm["message"])
        stats.update({f"fall_from_best/{m}": v for m, v in self.falls.falls().items()})
        stats.update({f"alarm/{name}": 1.0 for name in self.falls.fallen()})
        if log_metric is not None:
            for name, value in stats.items():
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    log_metric(f"salon/{name}", float(value))
        every = self.audit.grid_every
        if self.audit_dir is not None and every and step % every == 0 and self.process == 0:
            audit.save_grid(images, [r.columns() for r in rollouts], self.audit_dir / "grids" / f"step-{step:06d}.png")
        return stats

    def _remember(self, step: int, stats: dict) -> None:
        if self.history and self.history[-1]["step"] == step:
            self.history[-1] = {**self.history[-1], **stats}  # another call of the same step
        else:
            self.history.append({"step": step, **stats})
