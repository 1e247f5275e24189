"""A real `salon env serve` for tests: OpenEnv's app under uvicorn on 127.0.0.1, in a thread."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

from salon.train.env.paint import EnvConfig
from salon.train.env.server import build_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def env_server(config: EnvConfig):
    """Yields (base_url, painter); shuts the server (and the painter's browsers) down after."""
    import httpx
    import uvicorn

    app, painter = build_app(config)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           ws_max_size=64 * 1024 * 1024))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the environment server did not come up")
        time.sleep(0.1)
    try:
        yield url, painter
    finally:
        server.should_exit = True
        thread.join(30)
        painter.close()
