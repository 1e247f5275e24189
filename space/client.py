"""The environment's client: `PaintEnvClient(base_url)` (reset / step), from salon."""

from salon.train.env.client import EnvRenderBackend, PaintEnvClient  # noqa: F401
