"""salon.train: GRPO on TRL with render, gate and judge rewards; every rollout archived and audited.

    salon train train/configs/smoke.yaml --output-dir runs/smoke --max-steps 2   # offline, on a CPU

config.py (dataclass config, YAML + overrides), recipe.py (the GRPO recipe; `salon train`),
engines.py (which engine generates: grpo.generation), checkpoints.py (resume, checkpoint steps),
reward.py (the TRL reward adapter), render_workers.py (render processes), archive.py (rollout
archive), audit.py (coverage, diversity, alarms; `salon audit`), audit_collapse.py (the alarm when
the reward or gate pass falls from its best window). The tiny: and random: models it
runs offline are salon.models.
Subpackages: eval/ (`salon eval`, reviews, suspects, `salon compare`) and env/ (the OpenEnv
environment, `salon env serve`).
"""
