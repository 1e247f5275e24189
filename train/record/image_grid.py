"""A labelled grid of paintings as one PNG: the audit's step grids, the eval's checkpoint grid, suspects.

    image_grid([("step 10", [(img, "0.612"), (None, "none")]), ...], path, columns=["koi s1", ...])

Each line has a label on its left (a step, a group) and thumbnails captioned underneath; a
missing painting (failed render, gate without image) is a grey cell with its caption, so the
lines of a grid stay aligned column by column.
"""

from __future__ import annotations

from pathlib import Path

LABEL_W = 90  # the line labels' margin (none when no line has a label)
CAPTION_H = 14
HEADER_H = 16


def image_grid(lines: list[tuple[str, list[tuple[object, str]]]], path: Path, thumb: int = 128,
               columns: list[str] | None = None) -> Path:
    """Write `lines` (label, [(PIL image or None, caption)]) as a PNG grid; returns the path."""
    from PIL import Image, ImageDraw

    margin = LABEL_W if any(label for label, _ in lines) else 0
    top = HEADER_H if columns else 0
    cols = max([len(cells) for _, cells in lines] + [len(columns or []), 1])
    grid = Image.new("RGB", (margin + cols * thumb, top + max(1, len(lines)) * (thumb + CAPTION_H)), "white")
    draw = ImageDraw.Draw(grid)
    for c, name in enumerate(columns or []):
        draw.text((margin + c * thumb + 2, 2), name[:thumb // 6], fill="black")
    for g, (label, cells) in enumerate(lines):
        y = top + g * (thumb + CAPTION_H)
        if label:
            draw.text((2, y + thumb // 2), label[:LABEL_W // 6], fill="black")
        for c, (image, caption) in enumerate(cells):
            x = margin + c * thumb
            if image is not None:
                grid.paste(image.convert("RGB").resize((thumb, thumb)), (x, y))
            else:
                draw.rectangle([x + 1, y + 1, x + thumb - 2, y + thumb - 2], fill=(225, 225, 225))
            draw.text((x + 2, y + thumb), caption[:thumb // 6], fill="black")
    path.parent.mkdir(parents=True, exist_ok=True)
    grid.save(path)
    return path
