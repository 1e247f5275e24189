"""Words on the painting itself, as a vision-language judge would read them: OCR over every image
that passed the page's checks, in several views, within a time limit.

    python -m salon.curate.sandbox.ocr painting.png ...     # every reading, and what the rule counts
    from salon.curate.sandbox import ocr; check = ocr.words(png, budget_s=3.0)   # .words, .details()

The page can only see calls; a word drawn in brush strokes, dots or filled brush polygons is paint
like any other. So every image the page found nothing against is read by OCR (RapidOCR: PP-OCRv4
detection and recognition and PaddleOCR's 180-degree classifier, ONNX models shipped inside the
`rapidocr-onnxruntime` wheel, so it works offline; its alphabet holds Latin, digits, CJK, Greek,
a few Cyrillic letters, marks and ★☆), and what the rule in word_rule.py counts as writing makes
the painting `text_label`, whatever drew it.

What a judge reads and one OCR pass misses, and the view that reads it:
  - letters that fill the canvas: the detector at the painting's own size finds no line in them, and
    misses letters that touch the edge; so every view gets a margin of the painting's median colour,
    and the whole image is also read at 1/4 and 1/2 of its size and squashed to 1/2 x 1/4 (letters
    stretched to the canvas's height come back to a letter's shape), where they are the size of
    ordinary text (tens of milliseconds each: the detector's cost goes with the pixels);
  - mirrored writing: every region found is also read flipped left to right;
  - writing top to bottom, one letter under another: a tall region is also read with its letters
    cut apart (at the blank rows between them, and in squares for CJK) and laid in a row;
  - upside-down writing: PaddleOCR's classifier turns a region the right way up before reading;
  - rating stars: for a reading of three stars or more, how alike and evenly spaced the marks in
    its region are (Reading.row_spread), so a rating's row is told from a starry sky.

The time limit (`budget_s`, RenderConfig.text_check_budget_s, seconds of the reading thread's own
CPU time). A painting of many small marks (220 pencil birds: 89 regions at full size,
tests/sketches/good/flock_of_birds.js) made the old check's recogniser read each one, 3-9 s where a
usual painting took 0.15 s, and every view and form here multiplies that. So the work is ordered,
and the clock is looked at before each step: the views' detection (smallest first), then every
region as drawn (the small views first, the largest regions first), then the mirrored and
restacked forms in the same order. When the budget is spent the check stops and the verdict
stands on what was read; the readings left undone are counted in `unread` and named in `details`,
and the painting is not failed for them. Why not a violation: a legitimate dense painting (a
flock, a starry sky, a city at night) would be failed for its detail. Why this order: what is left
undone is the smallest marks of the busiest paintings and the mirrored forms, after the whole
image has been read in three coarser views, so writing large enough to sway a judge is read
before them. Why CPU time: the same painting gets the same reading however busy the machine is
(a wall-clock budget left a brush-stroke WOW unread on a loaded machine); the wall time is the
budget times how shared the core is. The overrun is one step at most: a detection or one region's
recognition (well under a second of CPU).
"""

from __future__ import annotations

import io
import sys
import threading
import time
from dataclasses import dataclass, field

from salon.curate.sandbox.word_rule import STARS, Writing, writing
from salon.pool.errors import SetupError

TEXT_CHECKS = ("ocr", "off")
DEFAULT_BUDGET_S = 3.0
# Whole-image views (width and height scale), cheapest first. Letters that fill the canvas are read at
# 1/4 and 1/2, and tall ones (a word stretched to the canvas's height) squashed to half their height.
VIEWS = ((1 / 4, 1 / 4), (1 / 2, 1 / 2), (1 / 2, 1 / 4), (1, 1))
MARGIN = 0.08  # a margin of the painting's median colour round each view: the detector misses letters at the edge
# Detection at each view's own size (only one past 2,000 px shrinks). RapidOCR's stock setting enlarges
# every image to at least 736 px first: 1.5x the pixels for detail the enlargement cannot add, and it
# would undo the small views.
DETECT_AT_OWN_SIZE = {"det_limit_type": "max", "det_limit_side_len": 2000}
TALL = 1.5  # a region this much taller than wide may be letters one under another
FORMS = ("as drawn", "mirrored", "stacked")  # the order forms of a region are read in


@dataclass(frozen=True)
class Reading:
    text: str
    confidence: float
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the painting's pixels
    view: str = "1/1"  # the scale it was read at and its form: "1/4", "1/1 mirrored", "1/2 stacked"
    # For a reading of 3 or more stars: how unevenly the marks in its region are sized and spaced
    # (the largest coefficient of variation of their heights, their gaps and their heights' centres;
    # None: fewer than 3 marks found). A rating's stars are alike and evenly spaced; a sky's are not.
    row_spread: float | None = None

    def describe(self) -> str:
        return f"read {self.text!r} ({self.confidence:.2f}) at {list(self.box)} in view {self.view}"


@dataclass
class TextCheck:
    """What the text check found on one painting."""
    words: list[Writing]  # the readings the rule (word_rule.py) counts as writing; any makes it text_label
    readings: list[Reading] = field(default_factory=list)  # everything read, writing or not
    ms: int = 0
    unread: int = 0  # readings left undone when the budget ran out (0: the check was complete)
    budget_s: float = DEFAULT_BUDGET_S

    def details(self) -> list[str]:
        lines = [f"text_label: {w.describe()}" for w in self.words]
        if self.unread:
            lines.append(f"text check: its {self.budget_s:g} s CPU budget ran out ({self.ms} ms of wall time); "
                         f"{self.unread} readings left undone (the smallest regions, their mirrored and stacked forms first)")
        return lines


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


@dataclass
class _Region:
    box: tuple[int, int, int, int]  # in the painting's pixels
    scale: tuple[float, float]  # the view's width and height scale
    upright: object  # the region's crop, turned as the detector's quad and the classifier say (BGR array)
    column: object | None  # the axis-aligned crop of a tall region, for its stacked form

    def view(self, form: str) -> str:
        sx, sy = (f"1/{round(1 / s)}" for s in self.scale)
        name = sx if sx == sy else f"{sx}x{sy}"
        return name if form == "as drawn" else f"{name} {form}"


def read(png: bytes, budget_s: float = DEFAULT_BUDGET_S, views=VIEWS, forms=FORMS) -> tuple[list[Reading], int]:
    """Every reading of the image in every view and form, and how many readings the budget left undone
    (`views` and `forms`: fewer of them, for benchmarks/validate_text_check.py's cost of each)."""
    import numpy as np
    from PIL import Image

    # The budget is this thread's own CPU time (the recogniser runs on it, one thread: _load), so the
    # same painting gets the same reading however busy the machine is; only the wall time it takes varies.
    t0 = time.thread_time()
    over = lambda: time.thread_time() - t0 > budget_s  # noqa: E731
    engine = _load()
    painting = np.ascontiguousarray(np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))[:, :, ::-1])  # BGR
    regions, skipped_views = [], 0
    for scale in views:
        if over():
            skipped_views += 1
            continue
        regions += _detect(engine, painting, scale)
    # As drawn first, then the other forms; the small views first (their regions are the large
    # letters), and within a view the largest regions first.
    order = sorted(((FORMS.index(form), VIEWS.index(r.scale), -_area(r.box), i, form)
                    for i, r in enumerate(regions) for form in forms if form != "stacked" or r.column is not None))
    readings, undone = [], skipped_views
    for n, (*_, i, form) in enumerate(order):
        if over():
            undone += len(order) - n
            break
        region = regions[i]
        for crop in _forms(engine, region, form):
            text, score = engine.text_rec([crop])[0][0]
            if text.strip():
                spread = _row_spread(crop) if sum(ch in STARS for ch in text) >= 3 else None
                readings.append(Reading(str(text), round(float(score), 3), region.box, region.view(form), spread))
    return readings, undone


def _area(box: tuple[int, int, int, int]) -> int:
    return (box[2] - box[0]) * (box[3] - box[1])


def _detect(engine, painting, scale: tuple[float, float]) -> list[_Region]:
    import cv2
    import numpy as np

    h, w = painting.shape[:2]
    sx, sy = scale
    image = painting if scale == (1, 1) else cv2.resize(painting, (round(w * sx), round(h * sy)),
                                                        interpolation=cv2.INTER_AREA)
    pad = round(MARGIN * max(image.shape[:2]))
    paper = [int(v) for v in np.median(image.reshape(-1, 3), axis=0)]
    image = cv2.copyMakeBorder(image, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=paper)
    quads, _ = engine.text_det(image)
    if quads is None or len(quads) == 0:
        return []
    crops = engine.get_crop_img_list(image, list(quads))
    regions = []
    for quad, crop in zip(quads, crops):
        x0, y0 = max(0, int(quad[:, 0].min())), max(0, int(quad[:, 1].min()))
        x1, y1 = int(np.ceil(quad[:, 0].max())), int(np.ceil(quad[:, 1].max()))
        column = image[y0:y1, x0:x1] if (y1 - y0) >= TALL * (x1 - x0) and x1 - x0 >= 4 else None
        box = (min(max(0, round((x0 - pad) / sx)), w), min(max(0, round((y0 - pad) / sy)), h),
               min(max(0, round((x1 - pad) / sx)), w), min(max(0, round((y1 - pad) / sy)), h))
        regions.append(_Region(box, scale, crop, column))
    return regions


def _forms(engine, region: _Region, form: str) -> list:
    """The crops one form of a region is read from."""
    import numpy as np

    if form == "as drawn":
        (region.upright,), _, _ = engine.text_cls([region.upright])  # turned the right way up, if upside down
        return [region.upright]
    if form == "mirrored":
        return [np.ascontiguousarray(region.upright[:, ::-1])]
    cuts = (_cut_at_blank_rows(region.column), _cut_in_squares(region.column))
    return [_stacked(region.column, pieces) for pieces in cuts if len(pieces) >= 2]


def _ink(crop):
    """The marks of a crop as a 0/1 array: Otsu's threshold, the minority side taken as ink."""
    import cv2

    gray = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    _, ink = cv2.threshold(gray, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    return 1 - ink if ink.mean() > 0.5 else ink


def _row_spread(crop) -> float | None:
    """How unevenly the crop's marks (ink blobs at least a third of its height) are sized and spaced."""
    import cv2
    import numpy as np

    _, _, stats, _ = cv2.connectedComponentsWithStats(_ink(crop), connectivity=8)
    height = crop.shape[0]
    marks = sorted((x, y, w, h) for x, y, w, h, _ in stats[1:] if h >= height / 3 and w >= height / 5)
    if len(marks) < 3:
        return None
    heights = np.array([h for *_, h in marks], float)
    centres_x = np.array([x + w / 2 for x, _, w, _ in marks])
    centres_y = np.array([y + h / 2 for _, y, _, h in marks])
    gaps = np.diff(centres_x)
    spread = max(heights.std() / heights.mean(), gaps.std() / max(gaps.mean(), 1), centres_y.std() / heights.mean())
    return round(float(spread), 3)


def _cut_at_blank_rows(column) -> list[tuple[int, int]]:
    """Row spans of the letters in a column, cut where a row holds little ink (Latin letters)."""
    import numpy as np

    rows = _ink(column).sum(axis=1)
    # A wash behind the letters leaves some ink in every row: a gap is a row far below the fullest.
    filled = (rows > max(1, 0.15 * rows.max())).astype(np.int8)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], filled, [0]])))
    return [(a, b) for a, b in zip(edges[::2], edges[1::2]) if b - a >= 0.25 * column.shape[1]]


def _cut_in_squares(column) -> list[tuple[int, int]]:
    """Row spans of square cells (CJK characters, whose parts have blank rows between them)."""
    h, w = column.shape[:2]
    n = round(h / w)
    return [(i * h // n, (i + 1) * h // n) for i in range(n)] if n >= 2 else []


def _stacked(column, spans: list[tuple[int, int]]):
    """The pieces of a column laid side by side, each centred in a cell of the tallest piece's height."""
    import cv2
    import numpy as np

    side = max(b - a for a, b in spans)
    pad = max(2, side // 8)
    cells = []
    for a, b in spans:
        top = (side - (b - a)) // 2
        cells.append(cv2.copyMakeBorder(column[a:b], top + pad, side - (b - a) - top + pad, pad, pad,
                                        cv2.BORDER_REPLICATE))
    return np.ascontiguousarray(np.concatenate(cells, axis=1))


def words(png: bytes, budget_s: float = DEFAULT_BUDGET_S) -> TextCheck:
    """The text check: read the painting within budget_s, and keep what the rule counts as writing."""
    t0 = time.perf_counter()
    readings, unread = read(png, budget_s)
    return TextCheck(writing(readings), readings, int((time.perf_counter() - t0) * 1000), unread, budget_s)


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path, "rb") as f:
            check = words(f.read())
        counted = {id(w.reading) for w in check.words}
        print(f"{path}: {check.ms} ms" + (f", {check.unread} readings undone" if check.unread else ""))
        for r in check.readings:
            print(("  WRITING " if id(r) in counted else "          ") + r.describe())
        for w in check.words:
            print(f"  -> {w.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
