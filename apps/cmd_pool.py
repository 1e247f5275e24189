"""`salon pool ...`: the pool store, its labels, and publishing it to the Hugging Face Hub.

    salon pool import PATH... [--subject S] [--model M] [--seed N] [--json]
    salon pool label ID TIER --by NAME          salon pool label ID --undo --by NAME
    salon pool stats [--json]
    salon pool ls [--tier T] [--model M] [--subject S] [--gate ok|rejected|unrendered]
                  [--labelled-by NAME | --unlabelled-by NAME] [--hide-duplicates] [--limit N] [--json]
    salon pool export --to DIR [--force] [--max-shard-mb N] [--license L]
    salon pool push REPO_ID [--private] [--message M]
    salon pool pull REPO_ID [--revision REV] --to DIR
    salon pool check [--fix] [--json]           salon pool dups [--distance N] [--json]

Every command takes ``--pool DIR`` (default ``$SALON_POOL``, then ``./salon-pool``). ID may be a
unique prefix (6+ hex digits). This command line is a public interface: flags are only added.
Exit codes: 0 done, 1 some inputs failed (import) or problems found (check), 2 an error.
"""

from __future__ import annotations

import argparse
import sys

from salon.apps.output import emit


def add_parser(sub) -> None:
    pool = sub.add_parser("pool", help="store, label, export, push and pull candidates")
    verbs = pool.add_subparsers(dest="verb", metavar="VERB", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--pool", metavar="DIR", help="pool folder (default $SALON_POOL, then ./salon-pool)")

    p = verbs.add_parser("import", parents=[common], help="import .js files, replies, folders, JSONL rows")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--subject", help="subject of inputs that do not name one")
    p.add_argument("--model", help="model (backend:name) of inputs that do not name one")
    p.add_argument("--seed", type=int, default=0, help="seed of inputs that do not give one (default 0)")
    p.add_argument("--json", action="store_true", help='one object per input: {"file", "id", "ok", "violations"}')
    p.set_defaults(run=run_import)

    p = verbs.add_parser("label", parents=[common], help="label a candidate love / okay / nope, or undo")
    p.add_argument("id", metavar="ID")
    p.add_argument("tier", nargs="?", metavar="TIER", help="love, okay or nope")
    p.add_argument("--undo", action="store_true",
                   help="clear your current tier for ID (with none, nothing is recorded and it says so)")
    p.add_argument("--by", required=True, metavar="NAME", help="who is labelling")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_label)

    p = verbs.add_parser("stats", parents=[common], help="what the pool holds")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_stats)

    p = verbs.add_parser("ls", parents=[common], help="list candidate ids, filtered (feed them to label)")
    p.add_argument("--tier", choices=["love", "okay", "nope", "unlabelled"], help="consensus tier")
    p.add_argument("--model", help="model (backend:name)")
    p.add_argument("--subject")
    p.add_argument("--gate", choices=["ok", "rejected", "unrendered"], help="gate verdict")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--labelled-by", metavar="NAME", help="only candidates NAME labelled")
    who.add_argument("--unlabelled-by", metavar="NAME", help="only candidates NAME has not labelled")
    p.add_argument("--hide-duplicates", action="store_true", help="leave out near-duplicates")
    p.add_argument("--limit", type=int, help="at most N rows")
    p.add_argument("--json", action="store_true",
                   help='JSON lines, one candidate a line: {"id", "subject", "model", "gate", "violations", '
                        '"tier", "labels", "dup_of", "image", "created_at"}')
    p.set_defaults(run=run_ls)

    p = verbs.add_parser("export", parents=[common], help="write a dataset folder (parquet + card)")
    p.add_argument("--to", required=True, metavar="DIR")
    p.add_argument("--force", action="store_true", help="replace an earlier export in DIR")
    p.add_argument("--max-shard-mb", type=float, default=256.0, help="parquet shard size (default 256)")
    p.add_argument("--license", help="dataset license (default cc-by-4.0; cc-by-sa-4.0 with CC-BY-SA guides)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_export)

    p = verbs.add_parser("push", parents=[common], help="publish the pool as a Hub dataset")
    p.add_argument("repo_id", metavar="REPO_ID", help="namespace/name")
    p.add_argument("--private", action="store_true")
    p.add_argument("--message", "-m", help="commit message")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_push)

    p = verbs.add_parser("pull", parents=[common], help="fetch a pinned release as judge references")
    p.add_argument("repo_id", metavar="REPO_ID")
    p.add_argument("--revision", help="commit, tag or branch (default main; resolved to a commit)")
    p.add_argument("--to", required=True, metavar="DIR")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_pull)

    p = verbs.add_parser("check", parents=[common], help="verify every image file")
    p.add_argument("--fix", action="store_true", help="detach bad images so a re-import re-renders them")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_check)

    p = verbs.add_parser("dups", parents=[common], help="list near-duplicates (perceptual hash)")
    p.add_argument("--distance", type=int, help="recompute with this Hamming distance (bits of 64)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run_dups)


def _open(args, create: bool = False):
    from salon.pool.store import Pool

    return Pool.open(args.pool, create=create)


def _print_json(obj) -> None:
    emit(obj, indent=None if isinstance(obj, dict) and len(obj) < 8 else 1)


def run_import(args) -> int:
    from salon.curate.ingest import Defaults, import_paths

    with _open(args, create=True) as pool:
        outcomes = import_paths(pool, args.paths, Defaults(args.subject, args.model, args.seed),
                                progress=not args.json and sys.stderr.isatty())
    for o in outcomes:
        if args.json:
            emit(o.to_dict())
        elif o.error:
            print(f"{o.file}: {o.error}", file=sys.stderr)
        else:
            verdict = "no render yet" if o.ok is None else "ok" if o.ok else "rejected: " + ", ".join(o.violations)
            print(f"{o.id[:12]}  {'new ' if o.new else 'seen'}  {verdict}  {o.file}")
    warnings = sorted({o.warning for o in outcomes if o.warning})
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    failed = sum(o.error is not None for o in outcomes)
    if not args.json:
        print(f"{len(outcomes) - failed} imported ({sum(o.new for o in outcomes)} new), {failed} failed",
              file=sys.stderr)
    return 1 if failed else 0


def run_label(args) -> int:
    from salon.pool.errors import PoolError

    if args.undo == (args.tier is not None):
        raise PoolError("give either a TIER (love, okay, nope) or --undo")
    with _open(args) as pool:
        cid = pool.resolve_id(args.id)
        by = args.by.strip()
        if not args.undo:
            row = pool.label(cid, args.tier, args.by)
        elif by and by not in pool.current_labels([cid]).get(cid, {}):
            row = None  # nothing of theirs to clear: no row is appended, and the output says so
        else:
            row = pool.undo(cid, args.by)
        tier = pool.consensus_tier(cid)
    if args.json:
        _print_json({"id": cid, "labeler": by, "tier": row and row.tier, "at": row and row.at, "consensus": tier})
    elif row is None:
        print(f"{cid[:12]}  {by} had no label on it: nothing to undo  (consensus: {tier or 'unlabelled'})")
    else:
        print(f"{cid[:12]}  {row.labeler}: {row.tier or 'cleared'}  (consensus: {tier or 'unlabelled'})")
    return 0


def run_stats(args) -> int:
    with _open(args) as pool:
        stats = pool.stats()
    if args.json:
        emit(stats, indent=1)
        return 0
    t = stats["tiers"]
    a = stats["agreement"]
    print(f"{stats['candidates']} candidates: {t['love']} love, {t['okay']} okay, {t['nope']} nope, "
          f"{t['unlabelled']} unlabelled; {stats['near_duplicates']} near-duplicates")
    for title, key in (("model", "by_model"), ("subject", "by_subject")):
        for name, c in stats[key].items():
            print(f"  {title} {name}: {c['candidates']} ({c['ok']} ok, {c['rejected']} rejected, "
                  f"{c['unrendered']} not rendered)")
    if stats["violations"]:
        print("  violations: " + ", ".join(f"{k} {v}" for k, v in stats["violations"].items()))
    if stats["labelers"]:
        kappa = "n/a" if a["kappa"] is None else f"{a['kappa']:.3f}"
        print("  labelers: " + ", ".join(f"{k} ({v})" for k, v in stats["labelers"].items())
              + f"; agreement {a['method'] or '-'} kappa {kappa} over {a['candidates']} shared")
    if stats["latest_release"]:
        r = stats["latest_release"]
        print(f"  latest release: {r['repo_id']}@{r['revision']} ({r['pushed_at']})")
    if stats["candidates"]:
        print("ids: salon pool ls [--tier T] [--model M] [--subject S] [--gate ok|rejected|unrendered]",
              file=sys.stderr)
    return 0


def run_ls(args) -> int:
    ok = {"ok": True, "rejected": False}.get(args.gate)
    with _open(args) as pool:
        rows = [c for c in pool.candidates(subject=args.subject, model=args.model, ok=ok, tier=args.tier,
                                           labeled_by=args.labelled_by, unlabelled_by=args.unlabelled_by,
                                           hide_duplicates=args.hide_duplicates)
                if args.gate != "unrendered" or c.ok is None][:args.limit]
        labels = pool.current_labels([c.id for c in rows])
        tiers = pool.consensus_tiers()
        images = {c.id: pool.image_path(c.id) for c in rows}
    for c in rows:
        gate = "unrendered" if c.ok is None else "ok" if c.ok else "rejected"
        if args.json:
            emit({"id": c.id, "subject": c.subject, "model": c.model, "gate": gate,
                  "violations": c.violations, "tier": tiers.get(c.id), "labels": labels.get(c.id, {}),
                  "dup_of": c.dup_of, "image": str(images[c.id]) if images[c.id] else None,
                  "created_at": c.created_at})
        else:
            verdict = gate if c.ok is not False else "rejected: " + ",".join(c.violations)
            print(f"{c.id[:12]}  {tiers.get(c.id) or '-':<5}  {c.model or '-'}  {c.subject or '-'}  {verdict}"
                  + (f"  near-duplicate of {c.dup_of[:12]}" if c.dup_of else ""))
    if not args.json:
        print(f"{len(rows)} candidate(s); give an id (or 6+ of its digits) to `salon pool label ID TIER "
              f"--by NAME`", file=sys.stderr)
    return 0


def run_export(args) -> int:
    from salon.pool.export import ExportConfig, export_pool

    config = ExportConfig(max_shard_bytes=int(args.max_shard_mb * 2**20), license=args.license,
                          overwrite=args.force)
    with _open(args) as pool:
        result = export_pool(pool, args.to, config)
    if args.json:
        _print_json({"path": str(result.path), "labelled": result.labelled, "candidates": result.candidates,
                     "pairs": result.pairs, "withheld": result.withheld, "shards": result.shards})
    else:
        print(f"exported {result.labelled} labelled / {result.candidates} candidates / {result.pairs} "
              f"pairs to {result.path} ({result.withheld} withheld: non-free guide photo)")
    return 0


def run_push(args) -> int:
    from salon.pool.hub import push

    with _open(args) as pool:
        release = push(pool, args.repo_id, private=args.private, message=args.message)
    if args.json:
        _print_json({"repo_id": release.repo_id, "revision": release.revision,
                     "candidates": release.candidates, "labelled": release.labelled})
    else:
        print(f"pushed {release.repo_id}@{release.revision} ({release.labelled} labelled of "
              f"{release.candidates} candidates)")
        print(release.revision)
    return 0


def run_pull(args) -> int:
    from salon.pool.hub import pull

    pulled = pull(args.repo_id, args.to, revision=args.revision)
    counts = {t: n for t, n in pulled.counts.items() if n}
    if args.json:
        _print_json({"repo_id": pulled.repo_id, "revision": pulled.revision, "to": str(pulled.folder),
                     "counts": counts})
    else:
        print(f"pulled {pulled.release} into {pulled.folder}: "
              + ", ".join(f"{n} {t}" for t, n in counts.items()))
    return 0


def run_check(args) -> int:
    with _open(args) as pool:
        bad = pool.check(fix=args.fix)
    if args.json:
        _print_json({"bad_images": bad, "fixed": bool(args.fix and bad)})
    else:
        for cid in bad:
            print(f"{cid}: image missing or corrupt" + (" (detached: import the sketch again)" if args.fix else ""))
        print(f"{len(bad)} bad image(s)" + ("" if args.fix or not bad else "; run with --fix to detach them"))
    return 1 if bad and not args.fix else 0


def run_dups(args) -> int:
    with _open(args) as pool:
        if args.distance is not None:
            pool.recompute_duplicates(args.distance)
        dups = pool.near_duplicates()
        distance = pool.dup_distance()
    if args.json:
        _print_json({"distance": distance, "near_duplicates": [{"id": k, "dup_of": v} for k, v in dups.items()]})
    else:
        for cid, of in dups.items():
            print(f"{cid[:12]}  near-duplicate of  {of[:12]}")
        print(f"{len(dups)} near-duplicate(s) at distance <= {distance}")
    return 0
