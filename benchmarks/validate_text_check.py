"""Validate the text check's rule (salon.curate.sandbox.ocr.WORD_RULE) before it rejects anything.

    .venv/bin/python benchmarks/validate_text_check.py [--seeds 15] [--json benchmarks/results/text_check_validation.json]

Renders every bundled example at many seeds (legitimate paintings: none holds a word), and the
hostile sketches that write words without a glyph call, with the text check off; then reads each
image with the OCR and applies the rule. Prints the false alarms on the legitimate paintings (with
what was read, and every near miss: a reading of 3+ Latin characters that the rule let pass), what
it catches among the word sketches, and the OCR's milliseconds per image; and beside them the same
images read with RapidOCR's stock detection size (every image enlarged to 736 px): its time, and
every painting whose verdict it would change.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from salon.curate.sandbox import ocr  # noqa: E402
from salon.curate.sandbox.render import Renderer, RenderConfig  # noqa: E402

WORD_SKETCHES = ["brush_words", "pixels_words", "gl_scissor_words", "text_plain"]


async def render_all(items):
    async with Renderer(RenderConfig(text_check="off", render_rejects=True)) as renderer:
        return await renderer.render_many(items, progress=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=15)
    ap.add_argument("--json", default="", help="write the figures here")
    args = ap.parse_args()
    examples = sorted((ROOT / "curate/examples").glob("*.js"))
    legit = [(p.stem, p.read_text(), seed) for p in examples for seed in range(args.seeds)]
    # The word sketches are judged on their image alone: the page-level checks are switched off by
    # reading the image whatever the verdict (the page skips their bare paint, so the words that
    # remain are what brush strokes drew).
    hostile = ROOT / "tests/sketches/hostile"
    words = [(name, (hostile / f"{name}.js").read_text(), seed) for name in WORD_SKETCHES for seed in range(3)]
    results = asyncio.run(render_all([(code, seed) for _, code, seed in legit + words]))
    ocr.preload()
    stock = stock_reader()
    rows, times, stock_times, changed = [], [], [], []
    for i, ((name, _, seed), result) in enumerate(zip(legit + words, results)):
        if result.png is None:
            rows.append({"sketch": name, "seed": seed, "legit": i < len(legit), "rendered": False})
            continue
        t0 = time.perf_counter()
        readings = ocr.read(result.png)
        times.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        stock_words = [r.text for r in stock(result.png) if r.is_word]
        stock_times.append((time.perf_counter() - t0) * 1000)
        if bool(stock_words) != any(r.is_word for r in readings):
            changed.append(f"{name}@{seed}: stock size {'reads ' + repr(stock_words) if stock_words else 'reads no word'}")
        rows.append({"sketch": name, "seed": seed, "legit": i < len(legit), "rendered": True,
                     "words": [r.describe() for r in readings if r.is_word],
                     "near": [r.describe() for r in readings if not r.is_word and len(ocr._LATIN.findall(r.text)) >= 3]})
    legit_rows = [r for r in rows if r["legit"] and r["rendered"]]
    word_rows = [r for r in rows if not r["legit"] and r["rendered"]]
    summary = {
        "rule": ocr.WORD_RULE,
        "legitimate_paintings": len(legit_rows),
        "false_alarms": sum(1 for r in legit_rows if r["words"]),
        "false_alarm_readings": [f"{r['sketch']}@{r['seed']}: {w}" for r in legit_rows for w in r["words"]],
        "near_misses": [f"{r['sketch']}@{r['seed']}: {w}" for r in legit_rows for w in r["near"]],
        "word_sketches": len(word_rows),
        "caught": {f"{r['sketch']}@{r['seed']}": r["words"] for r in word_rows},
        "ocr_ms_per_image": {"median": round(statistics.median(times), 1), "max": round(max(times), 1)} if times else None,
    }
    print(f"rule: {summary['rule']}")
    print(f"legitimate paintings: {summary['legitimate_paintings']}, false alarms: {summary['false_alarms']}")
    for line in summary["false_alarm_readings"]:
        print(f"  FALSE ALARM {line}")
    for line in summary["near_misses"]:
        print(f"  near miss   {line}")
    caught = sum(1 for w in summary["caught"].values() if w)
    print(f"word sketches: {caught} of {summary['word_sketches']} read as words")
    for name, found in summary["caught"].items():
        print(f"  {name}: {'; '.join(found) or 'missed'}")
    print(f"OCR per image (one thread): {summary['ocr_ms_per_image']}")
    if times:
        mine, theirs = statistics.median(times), statistics.median(stock_times)
        print(f"  at RapidOCR's stock detection size: median {theirs:.1f} ms ({theirs / mine:.2f}x the time); "
              f"verdicts it changes: {'; '.join(changed) or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


def stock_reader():
    """ocr.read with RapidOCR's stock detection size (one thread, as salon's)."""
    import io

    import numpy as np
    from PIL import Image
    from rapidocr_onnxruntime import RapidOCR

    engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)

    def read(png: bytes) -> list[ocr.Reading]:
        found, _ = engine(np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))[:, :, ::-1])
        return [ocr.Reading(str(text), float(score), (0, 0, 0, 0)) for _, text, score in found or []]

    return read


if __name__ == "__main__":
    sys.exit(main())
