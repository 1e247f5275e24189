"""`salon judge --scorer NAME`: an absolute scorer (HPSv3) on images, validated on a pool, or served.

    salon judge --scorer hpsv3 --model DIR_OR_URL IMAGE... [--prompt TEXT] [--json]
    salon judge validate --scorer hpsv3 --model DIR_OR_URL --pool DIR [--max-per-tier N] [--json]
    salon judge serve --scorer hpsv3 --model DIR [--host 127.0.0.1] [--port 8000]

--model is the folder holding HPSv3.safetensors (Qwen2-VL-7B-Instruct's config and processor in
DIR/base or beside it), the http(s) URL of an HPSv3 service, or tiny:hpsv3 / random:hpsv3 (built
once into the machine's cache, salon.models.names). Scoring prints one line per image; with --json
{"image", "score", "mu", "log_sigma", "error"}: a failed image has score null and the error, and
the command exits 1 if any failed. `serve` answers POST /score and GET /health (the prior art's
HPSv3 service API) on loopback; another host needs --insecure-no-auth, since it has no login.
Called by salon.apps.cmd_judge, which owns the arguments.
"""

from __future__ import annotations

import sys

from salon.apps.output import emit
from salon.pool.errors import ConfigError

PAIRWISE_ONLY = ("refs", "backend", "max_pixels", "server_model")


def run(args) -> int:
    bad = [f"--{name.replace('_', '-')} belongs to the pairwise judge, not to --scorer"
           for name in PAIRWISE_ONLY if getattr(args, name, None)]
    if bad:
        raise ConfigError(bad, "salon judge --scorer")
    verb = args.images[:1]
    if verb == ["validate"]:
        return _validate(args)
    if verb == ["serve"]:
        return _serve(args)
    return _score(args)


def load_scorer(args):
    from salon.judges.registry import judge_for

    kwargs = {k: v for k, v in (("prompt", args.prompt), ("batch_size", args.batch_size), ("dtype", args.dtype),
                                ("device", args.device), ("timeout_s", args.timeout)) if v is not None}
    scorer = judge_for(args.model, args.scorer, field="--model", **kwargs)
    if not hasattr(scorer, "rate"):
        raise ConfigError([f"--scorer {args.scorer} is not a reward model (it has no rate()): use hpsv3"],
                          "salon judge --scorer")
    return scorer


def _score(args) -> int:
    from PIL import Image
    from tqdm import tqdm

    from salon.judges.verdict import Rating

    if not args.images:
        raise ConfigError(["give at least one IMAGE to score"], "salon judge --scorer")
    scorer = load_scorer(args)
    step = scorer.config.batch_size
    failed = 0
    with tqdm(total=len(args.images), desc="scoring", unit="image", file=sys.stderr,
              disable=len(args.images) <= step) as bar:
        for start in range(0, len(args.images), step):
            paths = args.images[start:start + step]
            ratings: dict[int, Rating] = {}
            images = []
            for k, path in enumerate(paths):
                try:
                    with Image.open(path) as im:
                        im.load()
                        images.append((k, im.copy()))
                except OSError as e:
                    ratings[k] = Rating(None, reason=f"cannot read image: {e}")
            ratings.update(zip([k for k, _ in images], scorer.rate([im for _, im in images])))
            for k, path in enumerate(paths):
                r = ratings[k]
                failed += not r.ok
                _print(path, r, args.json)
            bar.update(len(paths))
    if failed:
        print(f"{failed} of {len(args.images)} image(s) without a score", file=sys.stderr)
    return 1 if failed else 0


def _print(path: str, r, as_json: bool) -> None:
    if as_json:
        emit({"image": path, "score": r.score, "mu": r.mu, "log_sigma": r.log_sigma, "error": r.reason})
    elif r.ok:
        print(f"{r.score:.3f}  mu {r.mu:+7.3f}  log_sigma {r.log_sigma:+.3f}  {path}", flush=True)
    else:
        print(f"  --   {path}  ({r.reason})", flush=True)


def _validate(args) -> int:
    from salon.apps.cmd_judge_args import validate_problems
    from salon.judges.validate import pool_labels
    from salon.judges.validate_scorer import ScorerValidationConfig, pool_subjects, validate_scorer

    problems = validate_problems(args)
    if problems:
        raise ConfigError(problems, "salon judge validate --scorer")
    config = ScorerValidationConfig(max_per_tier=args.max_per_tier, seed=args.seed,
                                    **({"subject_prompt": args.subject_prompt} if args.subject_prompt else {}))
    labelled, _ = pool_labels(args.pool)
    report = validate_scorer(load_scorer(args), labelled, pool_subjects(args.pool, [i for i, _, _ in labelled]),
                             config)
    if args.json:
        emit(report.to_dict())
    else:
        print(report.text())
    return 0


def _serve(args) -> int:
    from salon.apps.net import refuses_open_host
    from salon.judges.hpsv3_remote import ScoreServer

    if len(args.images) > 1:
        raise ConfigError([f"`salon judge serve` takes no images (got {' '.join(args.images[1:])})"],
                          "salon judge serve")
    if refuses_open_host("salon judge serve", args.host, args.insecure_no_auth,
                         "spend this host's GPU on the scorer, which has no login"):
        return 2
    scorer = load_scorer(args)
    server = ScoreServer(scorer, host=args.host, port=args.port)
    print(f"serving {scorer.name} on {server.url} (POST /score, GET /health)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.close()
    return 0
