"""Words on the painting itself: OCR over every image that passed the page's checks.

    python -m salon.curate.sandbox.ocr painting.png ...     # what it reads, and which readings are words

The page can only see calls; a word drawn in thick brush strokes, written into pixels or made of
scissored clears is paint like any other. So every image the page found nothing against is read
by OCR (RapidOCR: PP-OCRv4 detection and recognition, ONNX models shipped inside the
`rapidocr-onnxruntime` wheel, so it works offline), and a reading that is a word makes the
painting `text_label`, whatever drew it. The model is loaded once per process, on first use.

The rule (WORD_RULE) was validated on legitimate paintings before it rejected anything
(benchmarks/validate_text_check.py): the OCR reads shapes as CJK characters and single letters,
and a row of pine trees once as "SAAAAALA" at 0.69, while a word in soft brush strokes reads at
0.62-0.91. So a word is at least MIN_CHARS Latin letters or digits read at MIN_CONFIDENCE or more,
with no character three times in a row (a row of trees, stripes, a texture). On the 14 examples
at 15 seeds each (210 paintings) it fired once: a dusk mountain range read as 'SAAEELAA' at 0.62
(benchmarks/results/text_check_validation.json; at RapidOCR's stock detection size, a teacup as
'1388903' at 0.61 instead).
"""

from __future__ import annotations

import io
import re
import sys
import threading
import time
from dataclasses import dataclass

from salon.pool.errors import SetupError

TEXT_CHECKS = ("ocr", "off")
MIN_CHARS = 3  # Latin letters or digits in one reading
MIN_CONFIDENCE = 0.6  # the recogniser's score: a brush-stroke WOW read 0.62-0.91, pixel fonts 0.81-0.97
WORD_RULE = f">= {MIN_CHARS} Latin letters or digits at confidence >= {MIN_CONFIDENCE}, no character thrice in a row"
# Detection at the painting's own size (only one past 2,000 px shrinks). RapidOCR's stock setting
# enlarges every image to at least 736 px first: 600 px paintings cost 1.5x the pixels for detail the
# enlargement cannot add. On the validation set a reading took 151 ms (median, one thread of a 2-core
# CPU) against 224, every word sketch was caught either way, and one false alarm in 210 each
# (benchmarks/validate_text_check.py prints both).
DETECT_AT_OWN_SIZE = {"det_limit_type": "max", "det_limit_side_len": 2000}
_LATIN = re.compile(r"[A-Za-z0-9]")
_RUN = re.compile(r"(.)\1\1")


@dataclass(frozen=True)
class Reading:
    text: str
    confidence: float
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels

    @property
    def is_word(self) -> bool:
        latin = "".join(_LATIN.findall(self.text)).lower()
        return len(latin) >= MIN_CHARS and self.confidence >= MIN_CONFIDENCE and not _RUN.search(latin)

    def describe(self) -> str:
        return f"read {self.text!r} ({self.confidence:.2f}) at {list(self.box)}"


_engine = None
_engine_lock = threading.Lock()


def _load():
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError as e:
                raise SetupError("render.text_check=ocr needs rapidocr-onnxruntime: pip install 'salon[curate]' "
                                 "(or set render.text_check=off)") from e
            # One thread per call: renders run side by side, each reading its own painting.
            _engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1, **DETECT_AT_OWN_SIZE)
    return _engine


def preload() -> None:
    """Load the model now (Renderer.start does, so the first painting does not pay for it)."""
    _load()


def read(png: bytes) -> list[Reading]:
    """Every reading OCR makes of the image, words or not."""
    import numpy as np
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))[:, :, ::-1]  # RapidOCR wants BGR
    found, _ = _load()(image)
    readings = []
    for box, text, score in found or []:
        xs, ys = [int(p[0]) for p in box], [int(p[1]) for p in box]
        readings.append(Reading(str(text), float(score), (min(xs), min(ys), max(xs), max(ys))))
    return readings


def words(png: bytes) -> tuple[list[Reading], int]:
    """The readings that are words (WORD_RULE), and the milliseconds the reading took."""
    t0 = time.perf_counter()
    found = [r for r in read(png) if r.is_word]
    return found, int((time.perf_counter() - t0) * 1000)


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path, "rb") as f:
            readings = read(f.read())
        print(f"{path}: " + ("; ".join(("WORD " if r.is_word else "") + r.describe() for r in readings) or "nothing read"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
