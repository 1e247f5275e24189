"""Do paintings change with the sandbox? Every bundled example and good test sketch, rendered by this
checkout and by another revision, side by side.

    .venv/bin/python benchmarks/parity_render.py --against 6217296 [--seeds 0,1] [--json out.json]

Both render with the text check off (words are not what is compared), one browser each, the other
revision in a child process over a worktree of it (render_ways.salon_at). Prints, per sketch and
seed: the verdict now and before, and the share of pixels more than 8 levels apart in some channel
(what the sandbox's own tests call the same image: under 0.1 %).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from render_support import SAME_IMAGE_MAX_PIXEL_SHARE, differing_share  # noqa: E402
from render_ways import salon_at  # noqa: E402
from salon.curate.sandbox.assets import find_node_modules  # noqa: E402
from salon.curate.sandbox.render import Renderer, RenderConfig  # noqa: E402

# The child that renders with the other revision (its editable install's finder taken out).
_CHILD = """
import asyncio, base64, json, sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
shim, items_file = sys.argv[1:3]
sys.path.insert(0, shim)
from salon.curate.sandbox import render
assert render.__file__.startswith(shim), render.__file__
items = json.load(open(items_file))
async def run():
    async with render.Renderer(render.RenderConfig(gpu="off", browsers=1, text_check="off")) as r:
        return await r.render_many([(c, s) for c, s in items])
print(json.dumps([{"violations": x.violations, "png": base64.b64encode(x.png).decode() if x.png else None}
                  for x in asyncio.run(run())]))
"""


def sketches() -> dict[str, str]:
    found = sorted((ROOT / "curate" / "examples").glob("*.js")) + sorted((ROOT / "tests" / "sketches" / "good").glob("*.js"))
    return {p.stem: p.read_text() for p in found}


async def render_here(items):
    async with Renderer(RenderConfig(gpu="off", browsers=1, text_check="off")) as r:
        return await r.render_many(items, progress=True, desc="this checkout")


def render_at(ref: str, items) -> list[dict]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(items, f)
    env = {**os.environ, "SALON_NODE_MODULES": str(find_node_modules().resolve())}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(salon_at(ref)), f.name], capture_output=True, text=True,
                         env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", required=True, metavar="REF", help="the revision to compare with")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    ap.add_argument("--json", default="", metavar="PATH", help="also write the rows as JSON")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    named = sketches()
    keys = [(name, seed) for name in named for seed in seeds]
    items = [(named[name], seed) for name, seed in keys]
    now = asyncio.run(render_here(items))
    before = render_at(args.against, items)
    rows = []
    print(f"{'sketch':28} {'seed':>4}  {'now':22} {'before':22} {'pixels apart':>12}")
    for (name, seed), a, b in zip(keys, now, before):
        share = differing_share(a.png, base64.b64decode(b["png"])) if a.png and b["png"] else None
        rows.append({"sketch": name, "seed": seed, "now": a.violations, "before": b["violations"], "pixels_apart": share})
        shown = "-" if share is None else f"{share:.4%}" + (" *" if share >= SAME_IMAGE_MAX_PIXEL_SHARE else "")
        print(f"{name:28} {seed:>4}  {' '.join(a.violations) or 'ok':22} {' '.join(b['violations']) or 'ok':22} {shown:>12}")
    same = sum(1 for r in rows if r["pixels_apart"] is not None and r["pixels_apart"] < SAME_IMAGE_MAX_PIXEL_SHARE)
    compared = sum(1 for r in rows if r["pixels_apart"] is not None)
    print(f"\nthe same image (under {SAME_IMAGE_MAX_PIXEL_SHARE:.1%} of pixels apart): {same} of {compared} compared; "
          f"verdicts changed: {sum(1 for r in rows if r['now'] != r['before'])} of {len(rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"against": args.against, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
