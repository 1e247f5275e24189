"""The train config's `render:` section: where the reward's paintings render, and how.

    render:
      backend: local        # or ray (render.ray_address, actors), env (render.env_url)
      workers: 2            # local: render processes, `browsers` each
      gpu: auto             # the sandbox's GL path, as `salon render --gpu`

Loaded as part of salon.train.config.load_config; the checks run on construction.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from salon.curate.sandbox.gpu import GPU_FLAG_SETS, GPU_MODES
from salon.curate.sandbox.ocr import TEXT_CHECKS
from salon.train.config_checks import on_off, raise_problems

RENDER_BACKENDS = ("local", "ray", "env")


@dataclass
class RenderSettings:
    # where the reward's paintings are rendered (salon.train.recipe.build_render_backend):
    #   local  worker processes on this machine (`workers` x `browsers` Chromiums)
    #   ray    Ray actors on a cluster (`ray_address`, `actors`; `browsers` per actor)
    #   env    a remote `salon env serve` at `env_url` (its browsers, its --gpu)
    backend: str = "local"
    workers: int = 1  # local: render processes (each owns `browsers` Chromiums)
    browsers: int = 0  # local: per worker, 0 = one per two cores; ray: per actor, 0 = one per two reserved CPUs
    timeout_s: float = 45.0
    prefetch: bool = True  # start rendering as soon as generation returns, before TRL's logprob passes
    gpu: str = "auto"  # WebGL on the node's GPU when Chromium can draw there, else SwiftShader (salon.curate.sandbox.gpu)
    gl: str = ""  # the GPU flag set: "" = the first that draws (vulkan-canvas); vulkan-icd = exact repeats, 2D on the CPU
    text_check: str = "ocr"  # read every painting that passed the page for words (text_label); off: skip (salon.curate.sandbox.ocr)
    ray_address: str = "local"  # ray: local (a private cluster on this machine), auto, host:6379, ray://host:10001
    actors: int = 0  # ray: render actors; 0 = one per `cpus_per_actor` cluster CPUs
    cpus_per_actor: float = 2.0  # ray: CPUs each actor reserves (one SwiftShader render keeps ~1.8 busy)
    env_url: str | None = None  # env: the server, e.g. http://127.0.0.1:8000
    env_sessions: int = 4  # env: concurrent sessions; keep within the server's --max-sessions

    def __post_init__(self):
        p = []
        self.gpu = on_off(self.gpu)
        if isinstance(self.text_check, bool):  # YAML 1.1 reads a bare off as False
            self.text_check = "ocr" if self.text_check else "off"
        if self.backend not in RENDER_BACKENDS:
            p.append(f"render.backend={self.backend!r}: use one of {', '.join(RENDER_BACKENDS)}")
        if self.gpu not in GPU_MODES:
            p.append(f"render.gpu={self.gpu!r}: use {', '.join(GPU_MODES)}")
        if self.gl and self.gl not in GPU_FLAG_SETS:
            p.append(f"render.gl={self.gl!r}: use one of {', '.join(GPU_FLAG_SETS)}, or leave it empty")
        elif self.gl and self.gpu == "off":
            p.append(f"render.gl={self.gl!r} names a GPU flag set, but render.gpu=off: drop one of them")
        elif self.gl and self.backend == "env":
            p.append(f"render.gl={self.gl!r}: with render.backend=env the server draws where its own --gpu says")
        if self.text_check not in TEXT_CHECKS:
            p.append(f"render.text_check={self.text_check!r}: use {', '.join(TEXT_CHECKS)}")
        if self.workers < 1:
            p.append(f"render.workers={self.workers}: must be at least 1")
        if self.browsers < 0:
            p.append(f"render.browsers={self.browsers}: must be 0 (one per two cores) or more")
        if self.timeout_s <= 0:
            p.append(f"render.timeout_s={self.timeout_s}: must be positive")
        for name, bad, want in (("actors", self.actors < 0, "0 (one per cpus_per_actor cluster CPUs) or more"),
                                ("cpus_per_actor", self.cpus_per_actor <= 0, "must be positive"),
                                ("env_sessions", self.env_sessions < 1, "must be at least 1")):
            if bad:
                p.append(f"render.{name}={getattr(self, name)}: {want}")
        # settings that would be ignored are refused, so a run never renders somewhere it was not told to
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
            if not self.env_url:
                p.append("render.backend=env needs render.env_url: the URL of a running `salon env serve`, "
                         "e.g. http://127.0.0.1:8000")
            elif not self.env_url.startswith(("http://", "https://", "ws://", "wss://")):
                p.append(f"render.env_url={self.env_url!r}: give an http(s):// or ws(s):// URL, "
                         "e.g. http://127.0.0.1:8000")
            if importlib.util.find_spec("openenv") is None:
                p.append("render.backend=env: the OpenEnv client is not installed here: pip install 'salon[env]'")
            if self.gpu == "on" or self.browsers:
                p.append("render.gpu and render.browsers size this machine's renderers; with render.backend=env "
                         "the server renders with its own (salon env serve --browsers N)")
        raise_problems("render", p)
