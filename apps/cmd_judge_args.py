"""What every `salon judge validate` needs, whichever judge it validates (the pairwise judge in
cmd_judge.py, an absolute scorer in cmd_judge_scorer.py): a pool, and no images.

    problems = validate_problems(args)     # [] or the problems, named by their flags
"""

from __future__ import annotations


def validate_problems(args) -> list[str]:
    """What `salon judge validate` needs, whatever it validates: a pool, and no images."""
    problems = []
    if not args.pool:
        problems.append("--pool is required: the pool folder with labels")
    if len(args.images) > 1:
        problems.append(f"`salon judge validate` takes no images (got {' '.join(args.images[1:])})")
    return problems
