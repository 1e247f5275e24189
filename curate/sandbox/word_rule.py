"""The text check's rule: which OCR readings a vision-language judge would take for writing.

    from salon.curate.sandbox.word_rule import writing, WORD_RULE
    found = writing(readings)        # [Writing(reading, reason)]; empty: the painting holds no writing

ocr.py reads a painting in several views (whole image at 1/4, 1/2, squashed and full size; each
region as drawn, mirrored, and restacked when tall); this module decides. The OCR also reads
shapes: on legitimate paintings it read stripes as 三 (0.91), 三三 (0.98) and 三二, mountains as 山,
a row of pine trees as "AAALRAAL" (0.75) and "SAAAIAAA" (0.74), pebbles as "00" (0.70), a starry
sky as "☆☆☆" (0.96), a flock of birds as dozens of short readings at 0.40-0.63. So a reading counts
only for what writing has and textures lack (benchmarks/validate_text_check.py measured every
threshold here on legitimate paintings before it rejected anything):

  word      letters of any script and digits, read clearly: 3 or more at confidence >= 0.8, where a
            CJK character counts as two (杰作: a word in two characters) and a string made of one
            character (AAAAAAA) counts for nothing; when one character is most of the string
            (GOOOOD, or the trees' AAALRAAL) it must read >= 0.9;
  mark      two characters, a letter or digit among them (A+, 10, OK), read >= 0.8 in two views
            of the same place as the same two characters (mirrored or at another size): outlined
            pebbles read as "08" in one view and "98" in another;
  rating    3 or more stars (★☆) in one reading >= 0.45 whose marks are alike and evenly spaced
            in a line (Reading.row_spread <= 0.08; a rating drawn by code: 0.005-0.012): a starry
            sky read "★★★★★" (0.56) on a chance row of five, at 0.33, and "☆☆☆" (0.88) at 0.13;
  steady    the same word of 3 or more letters (not one letter repeated) in 4 or more views and
            forms of one place, each >= 0.6: WOW in thick brush strokes reads 0.62-0.76 in all eight;
  persistent  the same place read as 4 or more varied letters in 4 or more views and forms, each
            >= 0.4: letters the OCR's alphabet lacks (ЛУЧШИЙ read as "WAThAU", "NNLIPVI", ...) are
            read as something different every time, but always as a line of varied letters,
            where a texture reads as one letter repeated or not at all.

No clause counts the bare-stroke CJK characters 一 二 三 川 as letters: they are what stripes,
ripples and rows of lines read as (jellyfish stripes read 三二 at 0.91, and at 0.86 twice).

Validated (benchmarks/results/text_check_validation.json): no false alarm on 691 legitimate
paintings (the examples at 40 seeds, tests/sketches/good at 8, 63 replies of the tiny start
policy; the nearest: a tree row "AAALAA" 0.81 and tentacles "911" 0.81, both one character over
half, under 0.9), and every sketch of tests/sketches/words and the hostile WOW caught at every seed.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass

WORD_CONFIDENCE = 0.8
DOMINATED_CONFIDENCE = 0.9  # a string mostly one character (GOOOOD) needs this
DOMINATED_SHARE = 0.5  # ... where its most common character is more than this share of it
MIN_WORD_WEIGHT = 3  # letters and digits, a CJK character counting two
MARK_CONFIDENCE = 0.8
RATING_CONFIDENCE = 0.45
MIN_STARS = 3
ROW_SPREAD = 0.08  # a rating's stars: sizes, gaps and line within 8 % (their coefficients of variation)
PERSISTENT_CONFIDENCE = 0.4
PERSISTENT_LETTERS = 4
PERSISTENT_VIEWS = 4
STEADY_CONFIDENCE = 0.6  # the same word in PERSISTENT_VIEWS views and forms counts from here
VARIED_SHARE = 0.4  # a varied string: no character is more than this share of it
STARS = frozenset("★☆✩✪✫✬✭✮✯✰⭐")  # rating symbols (the recogniser's alphabet holds ★ and ☆)
STROKES = frozenset("一二三川")  # CJK of bare parallel strokes: what stripes read as (三 0.91, 三三 0.98)
SAME_PLACE = 0.5  # two readings are of the same place when their boxes overlap by this share of the smaller

WORD_RULE = (f"word: >= {MIN_WORD_WEIGHT} letters/digits of any script (CJK counts 2, 一二三川 0) at >= {WORD_CONFIDENCE}, "
             f">= {DOMINATED_CONFIDENCE} when one character is over {DOMINATED_SHARE:.0%}, never one character repeated; "
             f"mark: the same 2 characters with a letter/digit at >= {MARK_CONFIDENCE} in 2 views of a place; "
             f"rating: >= {MIN_STARS} stars at >= {RATING_CONFIDENCE}, alike and evenly spaced (row spread <= {ROW_SPREAD}); "
             f"steady: the same word of >= 3 letters at >= {STEADY_CONFIDENCE} in >= {PERSISTENT_VIEWS} views; "
             f"persistent: >= {PERSISTENT_LETTERS} varied letters at >= {PERSISTENT_CONFIDENCE} in >= {PERSISTENT_VIEWS} "
             "views and forms of one place")


@dataclass(frozen=True)
class Writing:
    reading: object  # ocr.Reading: the reading that shows it
    reason: str  # which clause, in words

    def describe(self) -> str:
        return f"{self.reading.describe()}: {self.reason}"


def is_cjk(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL"))


def letters(text: str) -> list[str]:
    """The letters (any script) and digits of a reading, bare-stroke characters left out."""
    return [ch for ch in text if ch.isalnum() and ch not in STROKES]


def word_weight(text: str) -> int:
    return sum(2 if is_cjk(ch) else 1 for ch in letters(text))


def top_share(chars: list[str]) -> float:
    """The most common character's share of the string (1.0: one character repeated)."""
    return Counter(ch.casefold() for ch in chars).most_common(1)[0][1] / len(chars) if chars else 1.0


def is_word(text: str, confidence: float) -> bool:
    chars = letters(text)
    if word_weight(text) < MIN_WORD_WEIGHT or len(set(ch.casefold() for ch in chars)) < 2:
        return False
    return confidence >= (DOMINATED_CONFIDENCE if top_share(chars) > DOMINATED_SHARE else WORD_CONFIDENCE)


def is_mark(text: str, confidence: float) -> bool:
    visible = [ch for ch in text if not ch.isspace()]
    return len(visible) == 2 and len(set(visible)) == 2 and bool(letters(text)) and confidence >= MARK_CONFIDENCE


def is_rating(text: str, confidence: float, row_spread: float | None) -> bool:
    return (sum(ch in STARS for ch in text) >= MIN_STARS and confidence >= RATING_CONFIDENCE
            and row_spread is not None and row_spread <= ROW_SPREAD)


def is_persistent_line(text: str, confidence: float) -> bool:
    chars = letters(text)
    return len(chars) >= PERSISTENT_LETTERS and confidence >= PERSISTENT_CONFIDENCE and top_share(chars) <= VARIED_SHARE


def repeated_mark(marks: list) -> Writing | None:
    """The same mark (its two characters, in either order: a mirrored view reverses them) read in two
    views of one place. Outlined pebbles read as "08" in one view and "98" in another: shapes the
    recogniser takes for digits, but never the same digits twice."""
    by_mark: dict[tuple[str, ...], list] = {}
    for r in marks:
        by_mark.setdefault(tuple(sorted(ch.casefold() for ch in r.text if not ch.isspace())), []).append(r)
    seen = [found for found in by_mark.values() if len(found) >= 2]
    if not seen:
        return None
    best = max(seen, key=len)
    return Writing(max(best, key=lambda r: r.confidence), f"a mark, read in {len(best)} views")


def steady_word(place: list) -> Writing | None:
    """The same word of 3 or more letters (not one letter repeated) read in PERSISTENT_VIEWS or more
    views and forms of one place, each >= STEADY_CONFIDENCE: a word in thick brush strokes reads
    "WOW" at 0.62-0.76 in all eight, where a texture's misreadings change from view to view."""
    by_text: dict[str, list] = {}
    for r in place:
        chars = letters(r.text)
        if r.confidence >= STEADY_CONFIDENCE and len(chars) >= 3 and len(set(ch.casefold() for ch in chars)) >= 2:
            by_text.setdefault("".join(chars).casefold(), []).append(r)
    seen = [found for found in by_text.values() if len({r.view for r in found}) >= PERSISTENT_VIEWS]
    if not seen:
        return None
    best = max(seen, key=len)
    return Writing(max(best, key=lambda r: r.confidence), f"a word, read alike in {len(best)} views")


def same_place(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    overlap_w = min(a[2], b[2]) - max(a[0], b[0])
    overlap_h = min(a[3], b[3]) - max(a[1], b[1])
    if overlap_w <= 0 or overlap_h <= 0:
        return False
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return overlap_w * overlap_h >= SAME_PLACE * max(1, smaller)


def places(readings: list) -> list[list]:
    """Readings grouped by where they are on the painting (boxes that overlap, across views)."""
    groups: list[list] = []
    for r in readings:
        joined = [g for g in groups if any(same_place(r.box, other.box) for other in g)]
        merged = [r] + [x for g in joined for x in g]
        groups = [g for g in groups if not any(g is j for j in joined)] + [merged]
    return groups


def writing(readings: list) -> list[Writing]:
    """The readings that show writing, one per place, with the clause that found it."""
    found = []
    for place in places(readings):
        best = max(place, key=lambda r: r.confidence)
        words = [r for r in place if is_word(r.text, r.confidence)]
        marks = [r for r in place if is_mark(r.text, r.confidence)]
        ratings = [r for r in place if is_rating(r.text, r.confidence, r.row_spread)]
        lines = {r.view for r in place if "stacked" not in r.view and is_persistent_line(r.text, r.confidence)}
        if words:
            found.append(Writing(max(words, key=lambda r: r.confidence), "a word"))
        elif ratings:
            found.append(Writing(max(ratings, key=lambda r: r.confidence), "a row of rating stars"))
        elif (mark := repeated_mark(marks)) is not None:
            found.append(mark)
        elif (steady := steady_word(place)) is not None:
            found.append(steady)
        elif len(lines) >= PERSISTENT_VIEWS:
            found.append(Writing(best, f"a line of varied letters in {len(lines)} views ({', '.join(sorted(lines))})"))
    return found
