"""Serve the painting environment with OpenEnv's server: HTTP /health /schema /reset /step /state
and the /ws websocket (one session per connection, bounded; a full server answers
CAPACITY_REACHED).

    salon env serve [--port 8000] [--host 127.0.0.1] [--judge paint_fraction] [--refs DIR] [--ray ADDRESS]

    app, painter = build_app(EnvConfig())         # a FastAPI app, for uvicorn or tests
    serve(EnvConfig(), host="127.0.0.1", port=8000)

Loopback by default: the server has no authentication, and model-written code reaches a browser
through it. Bind another interface only behind something that authenticates (a private Space).
"""

from __future__ import annotations

import functools
import logging

from salon.train.env.wire import PaintAction, PaintObservation, PaintState
from salon.train.env.paint import EnvConfig, Painter, PaintEnvironment

log = logging.getLogger(__name__)

ENV_NAME = "salon_paint"


def build_app(config: EnvConfig | None = None, painter: Painter | None = None):
    """OpenEnv's FastAPI app around one shared Painter (closed when the app shuts down)."""
    from openenv.core.env_server.http_server import create_app

    config = config or EnvConfig()
    painter = painter or Painter(config)
    app = create_app(functools.partial(PaintEnvironment, painter), PaintAction, PaintObservation,
                     env_name=ENV_NAME, max_concurrent_envs=config.max_sessions, state_cls=PaintState)
    app.router.on_shutdown.append(painter.close)
    return app, painter


def serve(config: EnvConfig | None = None, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    import uvicorn

    if host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("serving on %s: anyone who reaches it can run sketches in this machine's browsers", host)
    app, _ = build_app(config)
    # ws_max_size: a step's answer carries a 600x600 PNG; one uvicorn worker, since sessions live in memory
    uvicorn.run(app, host=host, port=port, log_level=log_level, ws_max_size=64 * 1024 * 1024)


def app_from_environment():
    """`uvicorn salon.train.env.server:app_from_environment --factory` (the Docker image's entry):
    the config comes from SALON_ENV_* variables (JUDGE, JUDGE_MODEL, REFS, MAX_SESSIONS, RAY)."""
    import os

    from salon.curate.sandbox.backend import BackendConfig

    ray = os.environ.get("SALON_ENV_RAY")
    config = EnvConfig(judge=os.environ.get("SALON_ENV_JUDGE", "paint_fraction"),
                       judge_model=os.environ.get("SALON_ENV_JUDGE_MODEL") or None,
                       references=os.environ.get("SALON_ENV_REFS") or None,
                       max_sessions=int(os.environ.get("SALON_ENV_MAX_SESSIONS", "8")),
                       backend=BackendConfig(backend="ray", address=ray) if ray else BackendConfig())
    return build_app(config)[0]
