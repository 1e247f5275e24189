"""salon.train: GRPO on TRL with render, gate and judge rewards; every rollout archived and audited.

    salon train train/configs/smoke.yaml --output-dir runs/smoke --max-steps 2   # offline, on a CPU

Top level: config.py (dataclass config, YAML + overrides; its `grpo:` and `render:` sections in
config_grpo.py and config_render.py, TRL's own fields in trl_fields.py), recipe.py (the GRPO recipe;
`salon train`), checkpoints.py (resume, checkpoint steps), reward.py (the TRL reward adapter),
rollout.py (one rollout, typed), scoring.py (gate, length, judges, the total), render_workers.py
(render processes), smoke.py (stand-in sketches), progress.py (what `salon train` prints),
out_of_memory.py (what it says when the card runs out). The tiny: and random: models it runs
offline are salon.models.
Rooms, each with an __init__ saying what it holds: engine/ (the compiled generation engine and
which engine generates), update/ (the update's pieces installed into TRL's trainer), record/ (the
rollout archive, the audit and its alarms, the run folder and its card; `salon audit`), start/ (a
policy made from nothing), eval/ (`salon eval`, reviews, suspects, `salon compare`) and env/ (the
OpenEnv environment, `salon env serve`). A room imports no top-level module that imports it back
(tests/test_import_floors.py).
"""
