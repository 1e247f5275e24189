"""The train config's `render:` section: the sandbox's own RenderConfig, and where training renders.

    render:
      backend: local        # or ray (render.ray_address, actors), env (render.env_url)
      workers: 2            # local: render processes, `browsers` each
      gpu: auto             # any RenderConfig field (gpu, gl, browsers, timeout_s, text_check, size...)

The RenderConfig fields are given flat beside training's own and checked by RenderConfig itself;
`cfg.render.sandbox` is that RenderConfig (`cfg.render.gpu` reads it through). Loaded as part of
salon.train.config.load_config; the checks run on construction.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass
from typing import Annotated, Literal

from salon.curate.sandbox.render import RenderConfig
from salon.pool.errors import ConfigError
from salon.pool.field_checks import at_least, field_problems, positive, raise_problems

RENDER_BACKENDS = ("local", "ray", "env")


@dataclass(init=False)
class RenderSettings:
    # where the reward's paintings are rendered (salon.train.recipe.build_render_backend):
    #   local  worker processes on this machine (`workers` x `browsers` Chromiums)
    #   ray    Ray actors on a cluster (`ray_address`, `actors`; `browsers` per actor)
    #   env    a remote `salon env serve` at `env_url` (its browsers, its --gpu)
    backend: Literal[RENDER_BACKENDS] = "local"
    workers: Annotated[int, at_least(1)] = 1  # local: render processes (each owns `browsers` Chromiums)
    # local: CPU cores kept for the trainer (the judge's pre-processing and kernel launches); the workers
    # and their browsers run on the rest. 0: anywhere
    trainer_cores: Annotated[int, at_least(0)] = 0
    prefetch: bool = True  # start rendering as soon as generation returns, before TRL's logprob passes
    ray_address: str = "local"  # ray: local (a private cluster on this machine), auto, host:6379, ray://host:10001
    # ray: render actors; 0 = one per `cpus_per_actor` cluster CPUs
    actors: Annotated[int, at_least(0), "0 = one per cpus_per_actor cluster CPUs"] = 0
    cpus_per_actor: Annotated[float, positive] = 2.0  # ray: CPUs each actor reserves (one SwiftShader render keeps ~1.8 busy)
    env_url: str | None = None  # env: the server, e.g. http://127.0.0.1:8000
    env_sessions: Annotated[int, at_least(1)] = 4  # env: concurrent sessions; keep within the server's --max-sessions
    # the renderer's settings (browsers: per local worker or per Ray actor; gpu, gl, text_check...)
    sandbox: RenderConfig | None  # None only while its own settings are refused

    def __init__(self, **settings):
        """Training's own fields by name; every other key is a RenderConfig field."""
        problems = []
        for f in dataclasses.fields(self):
            if f.name != "sandbox":
                setattr(self, f.name, settings.pop(f.name, f.default))
        self.sandbox = None
        try:
            self.sandbox = RenderConfig(**settings)
        except ConfigError as e:
            problems += [f"render.{p}" for p in e.problems]
        problems += field_problems(self, "render.")
        problems += self._placement_problems()
        raise_problems("render", problems)

    def __getattr__(self, name):  # render.gpu, render.browsers...: the sandbox's own, read through
        if name == "sandbox":  # not built (yet): unpickling looks names up before __dict__ is filled
            raise AttributeError(name)
        return getattr(self.sandbox, name)

    @staticmethod
    def keys() -> set[str]:
        """Every key the section takes."""
        own = {f.name for f in dataclasses.fields(RenderSettings)} - {"sandbox"}
        return own | {f.name for f in dataclasses.fields(RenderConfig)}

    def to_dict(self) -> dict:
        """The section as the YAML gives it: flat."""
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "sandbox"}
        return {**own, **dataclasses.asdict(self.sandbox)}

    def _placement_problems(self) -> list[str]:
        # settings that would be ignored are refused, so a run never renders somewhere it was not told to
        p = []
        if self.backend != "local" and self.trainer_cores:
            p.append(f"render.trainer_cores={self.trainer_cores} places the local backend's workers only; with "
                     f"render.backend={self.backend} the renderers run elsewhere: drop it")
        if self.backend != "local" and self.workers != 1:
            p.append(f"render.workers={self.workers} sizes the local backend only; with render.backend="
                     f"{self.backend} set {'render.actors' if self.backend == 'ray' else 'render.env_sessions'}")
        if self.env_url and self.backend != "env":
            p.append(f"render.env_url is set but render.backend={self.backend}: set render.backend=env to "
                     "render on that server, or drop env_url")
        if self.backend == "ray":
            if importlib.util.find_spec("ray") is None:
                p.append("render.backend=ray: Ray is not installed here: pip install 'salon[ray]' (every node of "
                         "the cluster needs it too, with Chromium and the npm assets: ./setup.sh)")
            if not self.ray_address:
                p.append("render.ray_address is empty: give local (starts a cluster here), auto, host:6379 "
                         "or ray://host:10001")
        if self.backend == "env":
            p += self._env_problems()
        return p

    def _env_problems(self) -> list[str]:
        p = []
        if not self.env_url:
            p.append("render.backend=env needs render.env_url: the URL of a running `salon env serve`, "
                     "e.g. http://127.0.0.1:8000")
        elif not self.env_url.startswith(("http://", "https://", "ws://", "wss://")):
            p.append(f"render.env_url={self.env_url!r}: give an http(s):// or ws(s):// URL, "
                     "e.g. http://127.0.0.1:8000")
        if importlib.util.find_spec("openenv") is None:
            p.append("render.backend=env: the OpenEnv client is not installed here: pip install 'salon[env]'")
        sandbox = self.sandbox
        if sandbox and sandbox.gl:
            p.append(f"render.gl={sandbox.gl!r}: with render.backend=env the server draws where its own --gpu says")
        if sandbox and (sandbox.gpu == "on" or sandbox.browsers):
            p.append("render.gpu and render.browsers size this machine's renderers; with render.backend=env "
                     "the server renders with its own (salon env serve --browsers N)")
        return p
