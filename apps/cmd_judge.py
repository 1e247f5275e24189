"""`salon judge`: score paintings against reference paintings, or validate a judge against people.

    salon judge --model PATH_OR_ID_OR_URL --refs DIR_OR_REPO[@REV] IMAGE... [--k K] [--json]
    salon judge validate --pool DIR --model PATH_OR_ID_OR_URL [--max-pairs N] [--json]
    salon judge --scorer hpsv3 --model DIR_OR_URL IMAGE... [--prompt TEXT] [--json]
    salon judge validate --scorer hpsv3 --model DIR_OR_URL --pool DIR [--json]
    salon judge serve --scorer hpsv3 --model DIR [--host 127.0.0.1] [--port 8000]

Scoring: each IMAGE's score is its mean win probability over K references (default 4; fewer
references: all) drawn with --seed from --refs, every pair shown in both orders. With --json, one
object per image and line: {"image", "score", "verdicts": [{"reference", "p", "p_first",
"p_second"}]} ("reference" is the reference's path for a folder, else its pool id; a verdict the
judge could not give has p null and a "reason"). --model names a model as every salon command
does (salon.models.names): a local folder, a Hub id, tiny:qwen2_5_vl (a tiny random VLM built once,
offline), random:qwen2.5-vl-7b, or the http(s) URL of an OpenAI-compatible server. --backend
measures judges by image measures and takes no --model.

--scorer names an absolute scorer instead (hpsv3, the HPSv3 reward model: no references, one
score per image; see salon.apps.cmd_judge_scorer), which `serve` also serves over HTTP.
"""

from __future__ import annotations

import argparse
import sys

from salon.apps.cmd_judge_args import validate_problems
from salon.apps.output import emit
from salon.pool.errors import ConfigError, JudgeError

USAGE = """salon judge --model PATH_OR_ID_OR_URL --refs DIR_OR_REPO[@REV] IMAGE... [--k K] [--json]
       salon judge validate --pool DIR --model PATH_OR_ID_OR_URL [--max-pairs N] [--json]
       salon judge --scorer hpsv3 --model DIR_OR_URL IMAGE... [--prompt TEXT] [--json]
       salon judge validate --scorer hpsv3 --model DIR_OR_URL --pool DIR [--json]
       salon judge serve --scorer hpsv3 --model DIR [--host 127.0.0.1] [--port 8000]"""


def add_parser(sub) -> None:
    p = sub.add_parser("judge", usage=USAGE, help="score paintings with a pairwise judge, or validate one",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("images", nargs="*", metavar="IMAGE", help="paintings to score (or the word 'validate' or 'serve')")
    p.add_argument("--model", help="model folder, Hub id, tiny:qwen2_5_vl, random:NAME or http(s)://server/v1 "
                   "(none with --backend measures); with --scorer hpsv3: the HPSv3.safetensors folder, an HPSv3 "
                   "service URL, tiny:hpsv3 or random:hpsv3")
    p.add_argument("--backend", help="judge registry name or module:Class (default: from --model's form)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    g = p.add_argument_group("scoring")
    g.add_argument("--refs", help="reference folder, pulled pool folder, or Hub dataset REPO[@REV]")
    g.add_argument("--k", type=int, default=4, help="references per image (default 4)")
    g.add_argument("--mix", default="love=0.5,okay=0.5", help="tier weights of the draw (default love=0.5,okay=0.5)")
    g.add_argument("--seed", type=int, default=0, help="seed of the reference draw (and of validation sampling)")
    v = p.add_argument_group("validate")
    v.add_argument("--pool", help="pool folder with labelled candidates and pairwise choices")
    v.add_argument("--max-pairs", type=int, default=64, help="pairs per tier comparison (default 64)")
    b = p.add_argument_group("backend")
    b.add_argument("--device", help="transformers, hpsv3: cuda, cpu ... (default: cuda when available)")
    b.add_argument("--max-pixels", type=int, help="transformers: bound on image size in pixels")
    b.add_argument("--timeout", type=float, help="openai: seconds per request (default 120); an HPSv3 service: 90")
    b.add_argument("--server-model", help="openai: model name on the server (default: the first listed)")
    a = p.add_argument_group("absolute scorer")
    a.add_argument("--scorer", help="an absolute scorer instead of the pairwise judge: hpsv3")
    a.add_argument("--prompt", help="the text prompt HPSv3 scores against (default 'a loose watercolour flower')")
    a.add_argument("--batch-size", type=int, help="images per forward pass (a service: requests in flight)")
    a.add_argument("--dtype", help="auto (default), bfloat16, float16 or float32")
    a.add_argument("--max-per-tier", type=int, default=64, help="validate: paintings per tier (default 64)")
    a.add_argument("--subject-prompt", help="validate: the prompt naming the subject (default "
                   "'a {subject} painted in loose watercolour')")
    s = p.add_argument_group("serve")
    s.add_argument("--host", default="127.0.0.1", help="interface (default loopback: there is no authentication)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--insecure-no-auth", action="store_true",
                   help="listen beyond loopback anyway: anyone who reaches the port can spend this host's GPU")
    p.set_defaults(run=run)


def _parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in filter(None, text.split(",")):
        tier, sep, weight = part.partition("=")
        try:
            mix[tier.strip()] = float(weight) if sep else 1.0
        except ValueError:
            raise ConfigError([f"--mix {text!r}: write tier=weight pairs, e.g. love=0.5,okay=0.5"], "salon judge")
    return mix


def _judge(args):
    from salon.judges.registry import backend_for, judge_for

    backend = backend_for(args.model, args.backend)
    flags = {"openai": (("timeout_s", args.timeout),),
             "transformers": (("device", args.device), ("max_pixels", args.max_pixels))}
    kwargs = {k: v for k, v in flags.get(backend, ()) if v is not None}
    return judge_for(args.model, backend, field="--model", server_model=args.server_model, **kwargs)


def run(args) -> int:
    if args.scorer:
        from salon.apps.cmd_judge_scorer import run as run_scorer

        return run_scorer(args)
    if args.images[:1] == ["serve"]:
        raise ConfigError(["`salon judge serve` serves an absolute scorer: add --scorer hpsv3 (serve a pairwise "
                           "judge's model with vLLM or TGI and point --model at it)"], "salon judge")
    if args.images[:1] == ["validate"]:
        return _validate(args)
    return _score(args)


def _score(args) -> int:
    from PIL import Image

    from salon.judges.references import load_references
    from salon.judges.winrate import draw_references, judge_group

    problems = []
    if not args.refs:
        problems.append("--refs is required: a folder of reference paintings or a pool release")
    if not args.images:
        problems.append("give at least one IMAGE to score")
    if args.k < 1:
        problems.append(f"--k {args.k}: must be at least 1")
    if args.pool:
        problems.append("--pool belongs to `salon judge validate`")
    if problems:
        raise ConfigError(problems, "salon judge")
    images = []
    for path in args.images:
        try:
            with Image.open(path) as im:
                im.load()
                images.append(im.copy())
        except OSError as e:
            raise JudgeError(f"cannot read image {path}: {e}") from None
    refs = load_references(args.refs)
    draw = draw_references(refs, k=args.k, mix=_parse_mix(args.mix), seed=args.seed)
    judge = _judge(args)
    scored = judge_group(judge, images, draw)
    print(f"judge {judge.name} ({judge.prompt_version}); references "
          f"{refs.release or args.refs}: " + ", ".join(r.id for r in draw.references), file=sys.stderr)
    for path, score, row in zip(args.images, scored.scores, scored.verdicts):
        if args.json:
            verdicts = []
            for v in row:
                d = {"reference": v.reference, "p": v.p, "p_first": v.p_first, "p_second": v.p_second}
                if v.p is None:
                    d["reason"] = v.reason
                verdicts.append(d)
            emit({"image": path, "score": score, "verdicts": verdicts})
        else:
            ps = " ".join("  --  " if v.p is None else f"{v.p:.3f}" for v in row)
            print(f"{'  --  ' if score is None else f'{score:.3f}'}  {path}   [{ps}]")
    missing = [r for r in scored.reasons if r]
    if missing:
        print(f"{len(missing)} image(s) without a score: {missing[0]}", file=sys.stderr)
    return 0


def _validate(args) -> int:
    from salon.judges.validate import ValidationConfig, pool_labels, validate

    problems = validate_problems(args)
    if args.refs:
        problems.append("--refs belongs to scoring: validation compares the pool's own paintings")
    if problems:
        raise ConfigError(problems, "salon judge validate")
    labelled, choices = pool_labels(args.pool)
    report = validate(_judge(args), labelled, choices, ValidationConfig(max_pairs=args.max_pairs, seed=args.seed))
    if args.json:
        emit(report.to_dict())
    else:
        print(report.text())
    return 0
