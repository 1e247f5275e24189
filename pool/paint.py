"""Paint coverage of a rendered painting: the one image statistic every layer shares.

`paint_fraction` is the share of pixels that differ from the paper. The paper is the modal
colour (most sketches call `background()` once), and a pixel counts as paint when any RGB
channel is more than PAPER_TOLERANCE away from it. A canvas with less than BLANK_FRACTION
paint is blank.
It lives in `pool` because the render sandbox and its gate (curate), the image judges and the
audit (train) all use it and `pool` is the layer they all stand on: they import it, so a
painting is blank, or covered, by one measure everywhere.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

PAPER_TOLERANCE = 16  # the prior art used 32, which misses pale washes (a peach petal on cream)
# Below this share of painted pixels a canvas is blank: the gate's `blank_canvas` and the audit's
# blank share. 0.5 % of a 600x600 canvas is 1,800 pixels, about one short brush stroke.
BLANK_FRACTION = 0.005


def to_rgb_array(image: bytes | Image.Image | np.ndarray) -> np.ndarray:
    """PNG bytes, a PIL image or an array -> HxWx3 uint8."""
    if isinstance(image, np.ndarray):
        return image[..., :3].astype(np.uint8, copy=False)
    if isinstance(image, (bytes, bytearray)):
        image = Image.open(io.BytesIO(image))
    return np.asarray(image.convert("RGB"))


def paper_colour(rgb: np.ndarray) -> np.ndarray:
    """The modal colour, found on colours quantised to 4 bits a channel, then refined."""
    flat = rgb.reshape(-1, 3)
    q = (flat >> 4).astype(np.int32)
    keys = (q[:, 0] << 8) | (q[:, 1] << 4) | q[:, 2]
    mode = np.bincount(keys, minlength=4096).argmax()
    members = flat[keys == mode]
    return np.median(members, axis=0)


def paint_mask(image: bytes | Image.Image | np.ndarray) -> np.ndarray:
    """Boolean HxW mask of painted pixels."""
    rgb = to_rgb_array(image)
    diff = np.abs(rgb.astype(np.int16) - paper_colour(rgb).astype(np.int16))
    return diff.max(axis=-1) > PAPER_TOLERANCE


def paint_fraction(image: bytes | Image.Image | np.ndarray) -> float:
    """Share of pixels that carry paint, in [0, 1]."""
    return float(paint_mask(image).mean())
