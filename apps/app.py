"""The salon curation app: label, grid, compare, generate and publish views on one pool.

    salon app [--pool DIR [--new]] [--port P] [--host H] [--user NAME | --auth USER:PASS ...]
              [--insecure-no-auth] [--admin NAME ...] [--base-url URL ...] [--run RUN_DIR ...]

One server (uvicorn): a FastAPI app carrying the JSON hot path of the label and compare views
(salon.apps.app_api) with the Gradio Blocks app mounted at "/" (layout, the other views, the
named API endpoints). Views live in app_label, app_grid, app_generate, app_publish; with
`--run RUN_DIR` (a training run), the Compare view also compares that run's checkpoints blind
(app_checkpoints) and a Suspects view marks its highest-reward suspects (app_suspects). With
`--auth` every label records the logged-in user; with `--user` (or neither: the login name of
the account running the app) one person labels without a login. Listening beyond loopback
needs `--auth`, or `--insecure-no-auth`, which says what it risks.

Pushing to the Hub and generating spend the host's credentials (its Hub token, its
OPENAI_API_KEY), so only admins may: the `--admin` logins, or without logins the person who
started the app on loopback. Generation sends the key only to a base URL the admin configured
at start (`--base-url`, `$OPENAI_BASE_URL`); the Generate view chooses among those.

From Python: `serve(AppConfig(pool="salon-pool", port=7860))`, or `build(config)` for the
ASGI app.
"""

from __future__ import annotations

import getpass
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from salon.apps.net import is_loopback
from salon.pool.errors import ConfigError


@dataclass
class AppConfig:
    pool: str | Path | None = None          # None: $SALON_POOL, then ./salon-pool
    create_pool: bool = False               # start a new, empty pool where none is (salon app --new)
    host: str = "127.0.0.1"
    port: int = 7860
    user: str | None = None                 # the labeler when there is no login
    auth: list[tuple[str, str]] = field(default_factory=list)
    insecure_no_auth: bool = False          # listen beyond loopback with no login at all
    admins: list[str] = field(default_factory=list)     # logins that may push and generate
    base_urls: list[str] = field(default_factory=list)  # where generation may send the key
    runs: list[str] = field(default_factory=list)       # training runs to review (salon eval / audit)

    def __post_init__(self):
        problems = []
        if not self.auth and not self.insecure_no_auth and not is_loopback(self.host):
            problems.append(
                f"--host {self.host} listens on the network with no login: anyone who reaches "
                f"the port could label as {self.labeler!r}; give --auth USER:PASS for each "
                f"labeler, or --insecure-no-auth if that is really what you want")
        if self.user is not None and self.auth:
            problems.append("give --user (one person, no login) or --auth (logins), not both")
        if self.user is not None and not self.user.strip():
            problems.append("--user must be a name")
        if not 0 <= self.port <= 65535:
            problems.append(f"--port must be 0-65535, got {self.port}")
        for user, password in self.auth:
            if not user.strip() or not password:
                problems.append(f"--auth {user!r}: give USER:PASS with both parts non-empty")
        if self.admins and not self.auth:
            problems.append("--admin names logins: give --auth too (without logins, the person "
                            "who started the app on loopback is the admin)")
        logins = {u for u, _ in self.auth}
        problems += [f"--admin {a!r} is not one of the --auth logins ({', '.join(sorted(logins))})"
                     for a in self.admins if self.auth and a not in logins]
        problems += [f"--base-url {u!r}: give an http:// or https:// URL" for u in self.base_urls
                     if not u.startswith(("http://", "https://"))]
        problems += [f"--run {r!r}: not a salon train output folder (no salon_train.yaml)" for r in self.runs
                     if not (Path(r) / "salon_train.yaml").is_file()]
        names = [Path(r).resolve().name for r in self.runs]
        problems += [f"two --run folders are named {n!r}: the app names runs by folder" for n in
                     sorted({n for n in names if names.count(n) > 1})]
        if problems:
            raise ConfigError(problems, where="salon app")

    @property
    def labeler(self) -> str:
        if self.user:
            return self.user.strip()
        try:
            return getpass.getuser()
        except (KeyError, OSError):  # no login name in a bare container
            return "labeler"

    @property
    def admin_names(self) -> set[str]:
        """Who may push and generate: the --admin logins; without logins the one labeler, who
        started the app, unless it listens beyond loopback, where anyone could be them."""
        if self.auth:
            return set(self.admins)
        return {self.labeler} if is_loopback(self.host) else set()

    @property
    def generate_urls(self) -> list[str]:
        """The base URLs generation may use: --base-url, then $OPENAI_BASE_URL; with neither,
        "" (the openai backend's default, api.openai.com)."""
        env = os.environ.get("OPENAI_BASE_URL")
        return list(dict.fromkeys([*self.base_urls, *([env] if env else [])])) or [""]



class AppState:
    """What every view shares: the open pool, who is labelling, the background generation run."""

    def __init__(self, pool, config: AppConfig, sessions):
        self.pool = pool
        self.config = config
        self.sessions = sessions  # app_api.Sessions: who sends a request to the JSON routes
        self.job = None  # app_generate.GenerationJob

    def user(self, request) -> str:
        """The labeler of a Gradio request: the logged-in user with --auth, else the --user."""
        if self.config.auth:
            if not getattr(request, "username", None):
                import gradio as gr

                raise gr.Error("not logged in: reload the page and log in")
            return request.username
        return self.config.labeler

    def admin(self, request, spends: str) -> str:
        """The user of a request that spends the host's credentials; refused unless an admin."""
        user = self.user(request)
        if user not in self.config.admin_names:
            import gradio as gr

            admins = sorted(self.config.admin_names)
            raise gr.Error(
                f"only the app's admins may {spends}: it spends the host's credentials. "
                + (f"Admins: {', '.join(admins)}." if admins else
                   "This app has none: start it with --auth and --admin NAME, or on loopback."))
        return user


def build(config: AppConfig, pool=None):
    """The ASGI app (FastAPI + mounted Gradio) over `pool` (opened from config.pool if None)."""
    import gradio as gr
    from fastapi import FastAPI

    from salon.apps.app_api import Sessions, router
    from salon.apps.app_checkpoints import checkpoint_endpoints, checkpoint_router, open_runs
    from salon.apps.app_generate import generate_view
    from salon.apps.app_grid import grid_view
    from salon.apps.app_label import api_endpoints, compare_view, label_view
    from salon.apps.app_publish import publish_view
    from salon.apps.app_suspects import suspects_view
    from salon.pool.store import Pool

    pool = pool or Pool.open(config.pool, create=config.create_pool)
    state = AppState(pool, config, Sessions(None if config.auth else config.labeler))
    runs = open_runs(config.runs)
    with gr.Blocks(title="salon") as demo:
        with gr.Tabs():
            with gr.Tab("Label", id="label"):
                label_view()
            with gr.Tab("Grid", id="grid") as grid_tab:
                grid_view(state, [demo.load, grid_tab.select])
            with gr.Tab("Compare", id="compare"):
                compare_view()
            with gr.Tab("Generate", id="generate"):
                generate_view(state)
            with gr.Tab("Publish", id="publish") as publish_tab:
                publish_view(state, [demo.load, publish_tab.select])
            if runs:
                with gr.Tab("Suspects", id="suspects") as suspects_tab:
                    suspects_view(state, runs, [demo.load, suspects_tab.select])
        api_endpoints(state)
        if runs:
            checkpoint_endpoints(state, runs)
    demo.queue(default_concurrency_limit=4)

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.include_router(router(pool, state.sessions.user_of))
    app.include_router(checkpoint_router(runs, state.sessions.user_of))
    app = gr.mount_gradio_app(
        app, demo, path="/", auth=config.auth or None, ssr_mode=False,
        auth_message="salon: log in to label (each label records your name)",
        # Gradio serves only the images (the grid's thumbnails) and the runs' suspect PNGs, never
        # the pool folder (pool.db and its WAL files hold every labeler's labels) or a run's reviews.db
        allowed_paths=[str((pool.dir / "images").resolve()),
                       *(str((r.dir / "audit" / "suspects").resolve()) for r in runs.values())],
        footer_links=["api"],
        server_name=config.host, server_port=config.port)
    return app


def serve(config: AppConfig) -> None:
    """Run the app until interrupted; prints the URL once the server listens. A taken port is a
    SetupError (one line: choose another --port), raised before anything is built."""
    import uvicorn

    from salon.apps.net import listening_socket
    from salon.pool.store import Pool

    with listening_socket(config.host, config.port) as sock, Pool.open(config.pool, create=config.create_pool) as pool:
        app = build(config, pool)
        server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port,
                                               log_level="warning", timeout_graceful_shutdown=2))

        def announce():
            while not server.started and not server.should_exit:
                threading.Event().wait(0.05)
            if server.started:
                host = "127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host
                port = server.servers[0].sockets[0].getsockname()[1]
                who = (f"logins: {', '.join(u for u, _ in config.auth)}" if config.auth
                       else f"labeler: {config.labeler}")
                who += f"; may push and generate: {', '.join(sorted(config.admin_names)) or 'nobody'}"
                print(f"salon app on pool {pool.dir} ({who})\n"
                      f"Running on local URL: http://{host}:{port}/", flush=True)

        threading.Thread(target=announce, daemon=True).start()
        server.run(sockets=[sock])
