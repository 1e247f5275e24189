"""salon.train.record: what a run leaves behind and how it is read: the rollout archive, the audit
and its alarms, the run folder and its card.

    salon audit RUN_DIR [--json]             # audit.audit_run: coverage, diversity, components, alarms
    load_rollouts_dataset("OUTPUT_DIR")      # archive: every rollout, loadable with datasets

Modules: archive (OUTPUT_DIR/rollouts: one parquet shard per reward call, push to the Hub), recorder
(one reward call: rollouts to the archive, statistics to TRL's metrics, the live audit), audit
(coverage, diversity, components, alarms; `salon audit`), audit_collapse (the alarm when the
reward or gate pass falls from its best window), run_folder (a run folder holds one run), run_card
(the run folder's README.md), image_grid (a labelled grid of paintings as one PNG). It stands on
salon.train.config and salon.train.rollout; nothing it imports imports it back.
"""
