"""`salon curate generate|guides`: candidate generation and iNaturalist photo guides.

    salon curate guides "peach hibiscus" --taxon "Hibiscus rosa-sinensis" -n 12 --pool POOL
    salon curate generate --subject "peach hibiscus" --model openai:NAME [--model hf:PATH ...] \
        -n 20 [--base-url URL] [--guides] [--rounds R] --pool POOL

(`salon pool import` brings in sketches made elsewhere.) The generate command line is a public
interface: flags are only ever added.
"""

from __future__ import annotations

import sys

from salon.apps.output import emit


def add_parser(sub) -> None:
    curate = sub.add_parser("curate", help="generate candidates; fetch photo guides")
    verbs = curate.add_subparsers(dest="verb", metavar="VERB", required=True)

    gen = verbs.add_parser("generate", help="models paint a subject; render, gate, store all")
    gen.add_argument("--subject", required=True, help="a name from subjects.yaml, or any name")
    gen.add_argument("--model", action="append", required=True, dest="models",
                     metavar="BACKEND:NAME", help="openai:NAME or hf:ID_OR_PATH; repeat for more")
    gen.add_argument("-n", type=int, required=True, help="candidates per model (a rerun tops up)")
    gen.add_argument("--pool", help="pool folder (default $SALON_POOL, then ./salon-pool)")
    gen.add_argument("--base-url", help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    gen.add_argument("--api-key", help="key for --base-url (default $OPENAI_API_KEY)")
    gen.add_argument("--guides", action="store_true", help="show each model a guide photo")
    gen.add_argument("--rounds", type=int, default=0, help="critique-and-revise rounds")
    gen.add_argument("--critic", metavar="BACKEND:NAME",
                     help="image-capable model that critiques (default: the painter itself)")
    gen.add_argument("--subjects", help="a subjects YAML file instead of the bundled one")
    gen.add_argument("--concurrency", type=int, default=4, help="calls in flight per model")
    gen.add_argument("--timeout", type=float, default=180.0, help="seconds per call attempt")
    gen.add_argument("--retries", type=int, default=2, help="retries per call, with backoff")
    gen.add_argument("--max-tokens", type=int, default=4096)
    gen.add_argument("--temperature", type=float, action="append", dest="temperatures",
                     help="repeat to cycle several (default 0.6, 0.9, 1.1)")
    gen.add_argument("--top-p", type=float, default=0.95)
    gen.add_argument("--browsers", type=int, default=0, help="render browsers (0: one per two cores)")
    gen.add_argument("--json", action="store_true", help="print the counts as JSON")
    gen.set_defaults(run=run_generate)

    guides = verbs.add_parser("guides", help="fetch CC-licensed iNaturalist photos of a subject")
    guides.add_argument("subject")
    guides.add_argument("--taxon", help="iNaturalist taxon name or id (default: the subject's)")
    guides.add_argument("-n", type=int, default=12, help="photos to hold in total")
    guides.add_argument("--pool", help="pool folder (default $SALON_POOL, then ./salon-pool)")
    guides.add_argument("--license", action="append", dest="licenses",
                        help="allowed license; repeat (default CC0, CC-BY, CC-BY-SA)")
    guides.add_argument("--size", choices=["medium", "large"], default="large")
    guides.add_argument("--subjects", help="a subjects YAML file instead of the bundled one")
    guides.add_argument("--json", action="store_true", help="print the photos as JSON")
    guides.set_defaults(run=run_guides)


def _pool_dir(args) -> str:
    from salon.pool.store import default_pool_dir

    return str(args.pool or default_pool_dir())


def run_generate(args) -> int:
    import asyncio

    from salon.curate.backends import BackendConfig
    from salon.curate.generate import GenerateConfig, generate_async
    from salon.curate.sandbox.render import RenderConfig, Renderer

    config = GenerateConfig(
        subject=args.subject, models=args.models, n=args.n, pool=_pool_dir(args),
        guides=args.guides, rounds=args.rounds, critic=args.critic,
        temperatures=tuple(args.temperatures or (0.6, 0.9, 1.1)), top_p=args.top_p,
        max_tokens=args.max_tokens, subjects_file=args.subjects, progress=not args.json,
        backend=BackendConfig(base_url=args.base_url, api_key=args.api_key,
                              concurrency=args.concurrency, timeout_s=args.timeout,
                              retries=args.retries))

    async def run():
        async with Renderer(RenderConfig(browsers=args.browsers)) as renderer:
            return await generate_async(config, renderer)

    report = asyncio.run(run())
    if args.json:
        emit(report.as_dict(), indent=1)
    else:
        for model, c in report.counts.items():
            print(f"{model}: ok {c.ok}  rejected {c.rejected}  failed {c.failed}"
                  + (f"  duplicate {c.duplicate}" if c.duplicate else ""))
            for error, times in c.errors.most_common(3):
                print(f"    {times} x {error}")
            if c.stopped:
                print(f"    stopped: {c.stopped}")
        print(f"{report.stored} new candidates in {config.pool}")
    return 1 if any(c.stopped for c in report.counts.values()) else 0


def run_guides(args) -> int:
    from salon.curate.guides import DEFAULT_LICENSES, GuideConfig, fetch_guides
    from salon.curate.prompts import SubjectBook
    from salon.pool.errors import ConfigError

    subject = SubjectBook.load(args.subjects).get(args.subject)
    taxon = args.taxon or subject.taxon
    if not taxon:
        raise ConfigError([f"{subject.name!r} has no taxon in the subjects file; pass --taxon "
                           f"with an iNaturalist name or id"], where="curate guides")
    config = GuideConfig(licenses=tuple(args.licenses or DEFAULT_LICENSES), size=args.size)
    pool = _pool_dir(args)
    report = fetch_guides(pool, subject, taxon, args.n, config)
    if args.json:
        from dataclasses import asdict

        emit({"kept": [asdict(p) for p in report.kept], "already": report.already,
              "wrong_license": report.wrong_license, "download_failed": report.download_failed}, indent=1)
    else:
        print(f"{len(report.kept)} new photos ({report.already} already) for {subject.name!r} "
              f"in {pool}/guides; skipped {report.wrong_license} under other licenses")
        for failure in report.download_failed:
            print(f"    download failed: {failure}", file=sys.stderr)
    return 0
