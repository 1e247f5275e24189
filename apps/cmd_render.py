"""`salon render`: render sketches (or raw model replies) to PNG with the gate's verdict.

    salon render curate/examples/*.js --out-dir renders
    salon render reply.txt --seed 7 --json      # one JSON object per input, input order
    salon render --ray local sketches/*.js      # on Ray actors (--ray HOST:6379 joins a cluster)

A public interface: the flags and the JSON keys are stable. Exit status 0 when every input got
a verdict (violations are verdicts), 1 when any input hit `render_unavailable`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from salon.apps.output import emit
from salon.curate.sandbox.gpu import GPU_FLAG_SETS, GPU_MODES
from salon.curate.sandbox.ocr import TEXT_CHECKS

DEFAULT_OUT = "salon-renders"


def add_parser(sub) -> None:
    p = sub.add_parser("render", help="render sketches to PNG and gate them",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sketches", nargs="+", metavar="SKETCH", help=".js files or raw model replies")
    p.add_argument("--seed", type=int, default=0, help="PRNG seed for every sketch (default 0)")
    p.add_argument("--size", type=int, default=600, help="canvas side in pixels (default 600)")
    p.add_argument("--timeout", type=float, default=45.0, metavar="SECONDS", help="per sketch (default 45)")
    p.add_argument("--frames", type=int, default=120,
                   help="draw() frames before the painting is read; noLoop() ends sooner (default 120)")
    p.add_argument("--out-dir", default=DEFAULT_OUT, metavar="DIR", help=f"where PNGs go (default ./{DEFAULT_OUT})")
    p.add_argument("--browsers", type=int, default=0, help="parallel browsers (default: one per two cores)")
    p.add_argument("--gpu", choices=GPU_MODES, default="auto",
                   help="WebGL on the node's NVIDIA GPU: auto (the default) uses it when Chromium can draw "
                        "on it and falls back to SwiftShader; on fails without it; off is SwiftShader")
    p.add_argument("--gl", default="", choices=["", *GPU_FLAG_SETS], metavar="FLAG_SET",
                   help="with the GPU: the flag set to draw on, " + " or ".join(GPU_FLAG_SETS) + " (default: the first "
                        "that draws; vulkan-icd paints exact repeats and closer to SwiftShader, 2D canvases on the CPU)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="render on Ray actors: local (starts a local cluster), auto, or host:6379")
    p.add_argument("--actors", type=int, default=0, help="with --ray: actors (default one per two cluster CPUs)")
    p.add_argument("--text-check", choices=TEXT_CHECKS, default="ocr",
                   help="read every painting that passed the page's checks for words: ocr (the default) or off")
    p.add_argument("--json", action="store_true", help="one JSON object per input on its own line")
    p.set_defaults(run=run)


def read_sketch(path: Path) -> str | None:
    """A .js file is the sketch; anything else (or a .js holding a fenced reply) is a reply."""
    from salon.curate.extract import extract_code

    text = path.read_bytes().decode("utf-8", errors="replace")
    if path.suffix == ".js" and "```" not in text:
        return text
    return extract_code(text)


def run(args) -> int:
    from salon.curate.sandbox.render import RenderConfig, Renderer, RenderResult
    from salon.pool.errors import SetupError

    config = RenderConfig(size=args.size, timeout_s=args.timeout, frames=args.frames, browsers=args.browsers,
                          gpu=args.gpu, gl=args.gl, text_check=args.text_check)
    paths = [Path(s) for s in args.sketches]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SetupError(f"no such file: {', '.join(missing)}")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stems = _unique_stems(paths)

    if args.ray:
        return _run_ray(args, config, paths, stems, out_dir)

    async def main() -> int:
        unavailable = 0
        renderer = Renderer(config)
        try:
            await renderer.start()
        except SetupError as e:
            # No browser at all: every input is missing data, not a bad sketch.
            print(f"salon render: {e}", file=sys.stderr)
            for path in paths:
                _report(args.json, path, RenderResult.infra(f"render_unavailable: {e}"), None)
            return 1
        try:
            tasks = [asyncio.ensure_future(renderer.render(read_sketch(p), args.seed)) for p in paths]
            for path, stem, task in zip(paths, stems, tasks):
                unavailable += _emit(args.json, path, out_dir / f"{stem}.png", await task)
        finally:
            await renderer.close()
        return 1 if unavailable else 0

    return asyncio.run(main())


def _run_ray(args, config, paths, stems, out_dir: Path) -> int:
    """The same inputs and output, rendered by a pool of Ray actors (salon.curate.sandbox.ray_pool)."""
    from salon.curate.sandbox.backend import BackendConfig, open_backend

    if not args.browsers:
        config.browsers = 1  # each actor reserves two CPUs: one browser keeps them busy
    pool = open_backend(BackendConfig(backend="ray", address=args.ray, actors=args.actors), config)
    unavailable = 0
    try:
        futures = [pool.submit(read_sketch(p), args.seed) for p in paths]
        for path, stem, fut in zip(paths, stems, futures):
            unavailable += _emit(args.json, path, out_dir / f"{stem}.png", fut.result())
    finally:
        pool.close()
    return 1 if unavailable else 0


def _emit(as_json: bool, path: Path, png_path: Path, result) -> bool:
    """Write the painting (if any) to png_path and report it; True when it was unavailable."""
    image = None
    if result.png is not None:
        png_path.write_bytes(result.png)
        image = png_path
    _report(as_json, path, result, image)
    return bool(result.unavailable)


def _report(as_json: bool, path: Path, result, image: Path | None) -> None:
    violations = list(result.violations) + (["render_unavailable"] if result.unavailable else [])
    if as_json:
        emit({
            "file": str(path), "ok": result.ok, "violations": list(result.violations),
            "paint_fraction": None if result.paint_fraction is None else round(result.paint_fraction, 4),
            "render_ms": result.render_ms, "js_errors": result.js_errors,
            "image": str(image) if image else None, "render_unavailable": result.unavailable,
            "gl": result.gl, "isolation": result.isolation, "ocr_ms": result.ocr_ms,
        })
        return
    mark = "ok " if result.ok else "BAD"
    paint = "" if result.paint_fraction is None else f"paint {result.paint_fraction:5.1%}  "
    what = f"-> {image}" if image else ""
    print(f"{mark} {path}  {paint}{result.render_ms:>5} ms  {' '.join(violations)} {what}".rstrip(), flush=True)
    for detail in result.details[:3]:
        print(f"      {detail}", file=sys.stderr)


def _unique_stems(paths: list[Path]) -> list[str]:
    seen: dict[str, int] = {}
    stems = []
    for p in paths:
        n = seen.get(p.stem, 0)
        seen[p.stem] = n + 1
        stems.append(p.stem if n == 0 else f"{p.stem}-{n}")
    return stems
