"""The painting environment's wire types: OpenEnv `Action`, `Observation` and `State` models.

    PaintAction(reply="```javascript ... ```")          # what a policy sends to step()
    PaintObservation(...)                                # what reset() and step() answer
    PaintState(episode_id=..., step_count=..., subject=..., seed=...)

These are pydantic models because OpenEnv's server validates and serialises them (`/schema`
publishes their JSON schemas). Subclassing OpenEnv's base models is how its server knows
the fields; nothing else is inherited.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class PaintAction(Action):
    reply: str = Field(description="The painter's raw reply (prose, fences and thinking are stripped) or a bare "
                                   "p5.js + p5.brush sketch")
    # A websocket session takes the episode from reset(); a stateless HTTP /step has no reset
    # before it, so it may name the episode here (otherwise: seed 0, the server's subject).
    seed: int | None = Field(default=None, ge=0, description="Episode seed when no reset preceded this step")
    subject: str | None = Field(default=None, description="Subject when no reset preceded this step")
    return_image: bool = Field(default=True, description="Include the painting as base64 PNG")


class PaintObservation(Observation):
    subject: str = Field(default="", description="What is being painted")
    seed: int = Field(default=0, description="The episode seed: render seed and reference draw")
    prompt: list[dict[str, Any]] = Field(default_factory=list, description="Chat messages asking for the painting")
    prompt_version: str = Field(default="", description="Version of the prompt wording")
    references: list[dict[str, Any]] = Field(
        default_factory=list, description="The references drawn for this seed: [{id, tier}] (same seed, same draw)")
    release: str | None = Field(default=None, description="Pool release the references come from (repo@revision)")
    judge: str = Field(default="", description="Judge that scores the painting")
    gate_passed: bool | None = Field(default=None, description="Static gate and render both passed")
    violations: list[str] = Field(default_factory=list, description="Gate violation codes (bad sketch)")
    js_errors: list[str] = Field(default_factory=list)
    paint_fraction: float | None = None
    render_ms: int = 0
    render_unavailable: bool = Field(default=False, description="The renderer failed (infrastructure): no reward")
    judge_unavailable: bool = Field(default=False, description="The judge could not answer (infrastructure): no "
                                                               "reward")
    infra_error: str | None = Field(default=None, description="Why reward is null: an infrastructure failure, "
                                                              "never a bad painting")
    components: dict[str, float | None] = Field(default_factory=dict, description="gate, length, judge")
    weights: dict[str, float] = Field(default_factory=dict, description="Weight of each component in the reward")
    image_png_base64: str | None = Field(default=None, description="The painting, base64 PNG")


class PaintState(State):
    subject: str = ""
    seed: int = 0
    finished: bool = False
