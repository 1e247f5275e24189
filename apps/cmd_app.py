"""`salon app`: the Gradio curation app on a pool (a public interface: flags are only added).

    salon app [--pool DIR [--new]] [--port P] [--host H] [--user NAME | --auth USER:PASS ...]
              [--insecure-no-auth] [--admin NAME ...] [--base-url URL ...] [--run RUN_DIR ...]

The app itself is salon.apps.app; this module only parses the command line.
"""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("app", help="the curation app: label, grid, compare, generate, publish")
    p.add_argument("--pool", metavar="DIR", help="pool folder (default $SALON_POOL, then ./salon-pool)")
    p.add_argument("--new", action="store_true", dest="create_pool",
                   help="start on a new, empty pool when --pool holds none (otherwise refused)")
    p.add_argument("--port", type=int, default=7860, help="port (default 7860; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; beyond loopback needs --auth)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--user", metavar="NAME", help="label as NAME, no login (default: your login name)")
    who.add_argument("--auth", action="append", metavar="USER:PASS", default=[],
                     help="require a login; repeat for several labelers")
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="allow a non-loopback --host without --auth: anyone who reaches the port labels")
    p.add_argument("--admin", action="append", metavar="NAME", default=[],
                   help="a login (of --auth) that may push to the Hub and generate; repeat for several")
    p.add_argument("--base-url", action="append", metavar="URL", default=[], dest="base_urls",
                   help="an OpenAI-compatible base URL the Generate view may send OPENAI_API_KEY to "
                        "(repeatable; $OPENAI_BASE_URL counts too)")
    p.add_argument("--run", action="append", metavar="RUN_DIR", default=[], dest="runs",
                   help="a salon train output folder to review: blind checkpoint comparison in Compare "
                        "(after salon eval), suspects in Suspects (after salon audit --suspects); repeatable")
    p.set_defaults(run=run)


def run(args) -> int:
    import os

    from pathlib import Path

    from salon.apps.app import AppConfig, serve
    from salon.pool.errors import ConfigError, PoolError
    from salon.pool.store import default_pool_dir, missing_pool

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home from a lab machine
    bad = [a for a in args.auth if ":" not in a]
    if bad:
        raise ConfigError([f"--auth {a!r} is not USER:PASS" for a in bad], where="salon app")
    auth = [tuple(a.split(":", 1)) for a in args.auth]
    config = AppConfig(pool=args.pool, create_pool=args.create_pool, host=args.host, port=args.port,
                       user=args.user, auth=auth, insecure_no_auth=args.insecure_no_auth, admins=args.admin,
                       base_urls=args.base_urls, runs=args.runs)
    if not args.create_pool and (missing := missing_pool(Path(args.pool or default_pool_dir()))):
        raise PoolError(f"{missing}; or give --new to start the app on an empty pool there")
    serve(config)
    return 0
