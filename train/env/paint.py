"""The painting environment on OpenEnv: reset gives the prompt and the references, step scores.

    painter = Painter(EnvConfig())                       # shared by every session of a server
    env = PaintEnvironment(painter)                      # one per session (OpenEnv's factory)
    obs = env.reset(seed=7, subject="koi")               # prompt messages + references for seed 7
    obs = env.step(PaintAction(reply=text))              # reward, components, violations, PNG; done

    salon env serve                                      # the server (salon.train.env.server)

One episode is one painting (a single step). step() extracts the sketch from the reply, gates
it, renders it on the configured backend (local browsers or a Ray cluster) and judges it:

    static or in-browser gate fails          -> reward = gate_penalty (an explicit score)
    renderer or judge failed (infrastructure) -> reward = None, render_unavailable or
                                                judge_unavailable set, infra_error says why:
                                                missing data, never a 0
    otherwise                                 -> sum(weight x component) over gate, length, judge

The references (and the render seed) depend only on the reset seed and the subject, so a
trainer that passes one seed per prompt gives every completion of a group the same draw (the
prior art saw one painting's judge score move 0.25 -> 0.625 on a redraw). The default judge
is `paint_fraction` (salon.judges.image_judges: share of the canvas holding paint), which needs
no weights and no references; a pairwise judge (`transformers`, `openai`) scores the win rate
against the drawn references and needs `references`.
"""

from __future__ import annotations

import base64
import io
import threading
import uuid
from dataclasses import dataclass, field

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from salon.curate.sandbox import gate
from salon.curate.extract import extract_code
from salon.curate.prompts import PROMPT_VERSION, SubjectBook, paint_messages
from salon.curate.sandbox.render import RenderConfig, RenderResult
from salon.curate.sandbox.backend import BackendConfig, open_backend
from salon.judges.winrate import draw_references, group_seed, judge_group
from salon.pool.errors import ConfigError
from salon.train.config import RewardSettings
from salon.train.env.wire import PaintAction, PaintObservation, PaintState

PAIRWISE = ("transformers", "openai")
COMPONENTS = ("gate", "length", "judge")


@dataclass
class EnvConfig:
    judge: str = "paint_fraction"  # an image judge (paint_fraction, composition, ...) or transformers / openai
    judge_model: str | None = None  # pairwise judges: a model name (salon.models.names) or an OpenAI URL
    judge_kwargs: dict = field(default_factory=dict)
    references: str | None = None  # folder, pulled release, REPO@REVISION or tiny:refs (needed by pairwise)
    k: int = 4
    mix: dict | None = None  # tier weights of the draw; None = half love, half okay
    weights: dict = field(default_factory=lambda: {"gate": 0.05, "length": 0.05, "judge": 0.9})
    gate_penalty: float = 0.0
    subject: str = "peach hibiscus"  # when reset names none
    subjects_file: str | None = None
    max_sessions: int = 8  # concurrent websocket sessions; one more gets OpenEnv's CAPACITY_REACHED
    render: RenderConfig = field(default_factory=lambda: RenderConfig(timeout_s=45.0))
    backend: BackendConfig = field(default_factory=BackendConfig)
    cache_dir: str | None = None  # where tiny: models and references are built (None: the machine's cache)

    def __post_init__(self):
        from salon.judges.registry import judge_problems

        p = []
        if not self.judge:
            p.append("judge is empty: use paint_fraction, composition, colourfulness, transformers or openai")
        else:
            p += judge_problems(self.judge_model, self.judge, "judge_model", arguments="judge_kwargs",
                                **self.judge_kwargs)
        if self.judge in PAIRWISE and not self.references:
            p.append(f"judge={self.judge} compares with references: give references (folder or REPO@REVISION)")
        if self.k < 1:
            p.append(f"k={self.k}: draw at least one reference")
        if set(self.weights) - set(COMPONENTS):
            p.append(f"weights: unknown components {sorted(set(self.weights) - set(COMPONENTS))}; use "
                     f"{', '.join(COMPONENTS)}")
        if any(not isinstance(w, (int, float)) or w < 0 for w in self.weights.values()):
            p.append(f"weights={self.weights}: every weight is a number >= 0")
        if self.max_sessions < 1:
            p.append(f"max_sessions={self.max_sessions}: at least 1")
        if p:
            raise ConfigError(p, "environment config")


def _length_score(chars: int) -> float:
    try:  # the reward adapter's ramp, so an environment reward equals the trainer's
        from salon.train.scoring import length_score
    except ImportError:
        from salon.train.reward import length_score
    return length_score(chars, RewardSettings())


class Painter:
    """What every session shares: the render backend, the judge, the references, the subjects."""

    def __init__(self, config: EnvConfig | None = None):
        from pathlib import Path

        from salon.judges.references import cache_dir, load_references
        from salon.judges.registry import judge_for
        from salon.models.tiny import resolve_references

        self.config = c = config or EnvConfig()
        refs = Path(c.cache_dir) if c.cache_dir else cache_dir()
        self.refs = load_references(resolve_references(c.references, refs / "tiny-refs")) if c.references else None
        self.judge = judge_for(c.judge_model, c.judge, cache=c.cache_dir, field="judge_model",
                               arguments="judge_kwargs", **c.judge_kwargs)
        self.pairwise = c.judge in PAIRWISE
        self.subjects = SubjectBook.load(c.subjects_file)
        self.backend = open_backend(c.backend, c.render)
        self._judge_lock = threading.Lock()  # a transformers judge is one model: one forward at a time
        self.steps = 0
        self.infra_failures = 0

    def episode(self, seed: int | None, subject: str | None) -> dict:
        """The prompt and the reference draw of (seed, subject): the same pair, the same draw."""
        seed = int(seed or 0)
        subj = self.subjects.get(subject or self.config.subject)
        draw = None
        if self.refs is not None:
            draw = draw_references(self.refs, self.config.k, self.config.mix, seed=group_seed(seed, subj.name))
        return {"seed": seed, "subject": subj, "draw": draw}

    def describe(self, ep: dict) -> dict:
        draw = ep["draw"]
        return {"subject": ep["subject"].name, "seed": ep["seed"],
                "prompt": [{"role": m.role, "content": m.text} for m in paint_messages(ep["subject"])],
                "prompt_version": PROMPT_VERSION, "judge": self.judge.name,
                "references": [{"id": r.id, "tier": r.tier} for r in draw.references] if draw else [],
                "release": self.refs.release if draw else None, "weights": dict(self.config.weights)}

    def score(self, ep: dict, reply: str, return_image: bool = True) -> PaintObservation:
        self.steps += 1
        code = extract_code(reply)
        static = gate.static_violations(code)
        if static:
            result = RenderResult(ok=False, violations=static)
        else:
            result = self.backend.submit(code, ep["seed"]).result()
        w = self.config.weights
        comp = {"gate": 1.0 if result.ok else 0.0, "length": _length_score(len(reply)), "judge": None}
        obs = dict(self.describe(ep), done=True, gate_passed=result.ok, violations=list(result.violations),
                   js_errors=list(result.js_errors), paint_fraction=result.paint_fraction,
                   render_ms=result.render_ms, components=comp,
                   image_png_base64=base64.b64encode(result.png).decode() if return_image and result.png else None)
        if result.unavailable:
            self.infra_failures += 1
            return PaintObservation(**obs, reward=None, render_unavailable=True,
                                    infra_error=(result.js_errors or ["render unavailable"])[0])
        if not result.ok:
            return PaintObservation(**obs, reward=self.config.gate_penalty)
        judged, why = self._judge(result.png, ep)
        comp["judge"] = judged
        if judged is None:
            self.infra_failures += 1
            return PaintObservation(**obs, reward=None, judge_unavailable=True, infra_error=why)
        reward = sum(w.get(c, 0.0) * comp[c] for c in COMPONENTS)
        return PaintObservation(**obs, reward=reward)

    def _judge(self, png: bytes, ep: dict) -> tuple[float | None, str | None]:
        from PIL import Image

        try:
            image = Image.open(io.BytesIO(png)).convert("RGB")
            with self._judge_lock:
                if self.pairwise:
                    scored = judge_group(self.judge, [image], ep["draw"])
                    return scored.scores[0], scored.reasons[0] if scored.scores[0] is None else None
                value = list(self.judge.score([image]))[0]
            return (None, f"judge {self.judge.name} gave no score") if value is None else (float(value), None)
        except Exception as e:  # a judge that raises is down: missing, never a bad painting
            return None, f"judge failed: {type(e).__name__}: {str(e)[:200]}"

    def close(self) -> None:
        self.backend.close()


class PaintEnvironment(Environment[PaintAction, PaintObservation, PaintState]):
    """One session's episode state over the shared Painter (OpenEnv requires the base class)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # sessions share only the painter, whose parts are thread-safe

    def __init__(self, painter: Painter):
        super().__init__()
        self.painter = painter
        self._episode: dict | None = None
        self._state = PaintState(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, subject: str | None = None,
              **kwargs) -> PaintObservation:
        self._episode = self.painter.episode(seed, subject)
        self._state = PaintState(episode_id=episode_id or str(uuid.uuid4()), step_count=0,
                                 subject=self._episode["subject"].name, seed=self._episode["seed"])
        return PaintObservation(**self.painter.describe(self._episode), done=False, reward=None)

    def step(self, action: PaintAction, timeout_s: float | None = None, **kwargs) -> PaintObservation:
        if self._state.finished:
            raise ValueError("this episode already has its painting: call reset() for the next one")
        ep = self._episode
        if ep is None or action.seed is not None or action.subject is not None:
            ep = self.painter.episode(action.seed if action.seed is not None else (ep or {}).get("seed"),
                                      action.subject or (ep["subject"].name if ep else None))
        obs = self.painter.score(ep, action.reply, action.return_image)
        self._state.step_count += 1
        self._state.finished = True
        return obs

    @property
    def state(self) -> PaintState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="salon_paint", version="0.1.0",
            description="Paint a subject as a p5.js + p5.brush watercolour sketch; the reply is gated, rendered "
                        f"in headless Chromium and judged by {self.painter.judge.name}. One step per episode.")
