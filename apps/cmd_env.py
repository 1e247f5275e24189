"""`salon env serve`: the painting environment as an OpenEnv server (HTTP + websocket).

    salon env serve                                  # 127.0.0.1:8000, paint_fraction judge, local browsers
    salon env serve --port 8001 --judge transformers --judge-model PATH --refs me/pool@REV
    salon env serve --ray local --actors 4           # render on a Ray cluster (local, or host:6379)

With no arguments it runs on a CPU and needs no model weights: the judge is `paint_fraction`
(the share of the canvas holding paint, salon.judges.image_judges) and no references are drawn.
It prints `serving salon_paint on http://HOST:PORT` once the browsers are up; a client speaks
OpenEnv's protocol (salon.train.env.client.PaintEnvClient, or any OpenEnv client).
"""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("env", help="the painting environment as an OpenEnv server",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    s = verbs.add_parser("serve", help="serve the environment (loopback by default)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--host", default="127.0.0.1", help="interface (default loopback: there is no authentication)")
    s.add_argument("--insecure-no-auth", action="store_true",
                   help="listen beyond loopback anyway: anyone who reaches the port can spend this host's "
                        "renderers and judge (put it behind a private Space or a proxy that checks tokens)")
    s.add_argument("--judge", default="paint_fraction",
                   help="paint_fraction (default, no weights), composition, colourfulness, transformers, openai")
    s.add_argument("--judge-model", default=None, help="pairwise judges: folder, Hub id, tiny:qwen2_5_vl or URL")
    s.add_argument("--refs", default=None, help="references: folder, pulled release, REPO@REVISION or tiny:refs")
    s.add_argument("--k", type=int, default=4, help="references drawn per seed (default 4)")
    s.add_argument("--subject", default="peach hibiscus", help="subject when reset names none")
    s.add_argument("--max-sessions", type=int, default=8, help="concurrent websocket sessions (default 8)")
    s.add_argument("--ray", default=None, metavar="ADDRESS", help="render on Ray: local, auto or host:6379")
    s.add_argument("--actors", type=int, default=0, help="Ray actors (default one per two cluster CPUs)")
    s.add_argument("--browsers", type=int, default=0, help="browsers per renderer (default one per two cores)")
    s.add_argument("--timeout", type=float, default=45.0, metavar="SECONDS", help="per sketch (default 45)")
    s.set_defaults(run=run)


def run(args) -> int:
    from salon.apps.net import refuses_open_host
    from salon.curate.sandbox.render import RenderConfig
    from salon.curate.sandbox.backend import BackendConfig
    from salon.train.env.paint import EnvConfig
    from salon.train.env.server import ENV_NAME, serve

    if refuses_open_host("salon env serve", args.host, args.insecure_no_auth,
                         "step the environment, which has no login, and spend this host's renderers and judge"):
        return 2
    backend = BackendConfig(backend="ray", address=args.ray, actors=args.actors) if args.ray else BackendConfig()
    config = EnvConfig(judge=args.judge, judge_model=args.judge_model, references=args.refs, k=args.k,
                       subject=args.subject, max_sessions=args.max_sessions, backend=backend,
                       render=RenderConfig(timeout_s=args.timeout, browsers=args.browsers or (1 if args.ray else 0)))
    print(f"serving {ENV_NAME} on http://{args.host}:{args.port} (judge {args.judge}, "
          f"{'ray ' + args.ray if args.ray else 'local browsers'}, {args.max_sessions} sessions)", flush=True)
    serve(config, host=args.host, port=args.port)
    return 0
