"""Pages of a deck as SVG, and the PDF made of them.

A page is 1600 x 900 (16:9). Parts are stacked from the top under a title:
paragraphs and lists wrap to the page width, tables shrink their type until
they fit, pictures share the height that is left. One rsvg-convert
(librsvg2-bin) call turns the pages into one PDF, embedded SVG charts
staying vectors.

Readable from the back of a room: no text on a page is smaller than
MIN_TEXT_PX, and a picture whose smallest type would be drawn below
MIN_PICTURE_TEXT_PX once scaled into its box is refused. A 1600-pixel page
projected 1920 pixels wide grows by a fifth.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

WIDTH, HEIGHT = 1600, 900
MARGIN = 60
TITLE_PX = 46
BODY_PX = 34
SMALL_PX = 26
MIN_TEXT_PX = 24
MIN_TABLE_PX = 24
MIN_PICTURE_TEXT_PX = 20
FOOTER_PX = 18  # the run's name and the page number: for the speaker, not the room
FONT = "DejaVu Sans"
# DejaVu Sans advances about 0.55 em per character in mixed text; wrapping at
# 0.58 em (0.62 bold) keeps lines inside the page.
EM_PER_CHAR = 0.58
EM_PER_CHAR_BOLD = 0.62
GREY = "#555555"


class PageError(Exception):
    pass


@dataclass
class Text:
    text: str
    size: int = BODY_PX
    bold: bool = False
    colour: str = "#222222"


@dataclass
class Bullets:
    items: list[str]
    size: int = BODY_PX


@dataclass
class Grid:
    """A table; the first column is left-aligned, the others centred."""
    header: list[str]
    rows: list[list[str]]
    size: int = BODY_PX
    emphasis: dict[tuple[int, int], str] = field(default_factory=dict)  # (row, col) -> colour


@dataclass
class Picture:
    """Images side by side, each with an optional caption, sharing the height left.
    text_px: the smallest type inside the images, in their own pixels (0: none)."""
    paths: list[Path]
    captions: list[str] = field(default_factory=list)
    text_px: float = 0.0


Part = Text | Bullets | Grid | Picture


@dataclass
class Page:
    title: str
    parts: list[Part]
    footer: str = ""


def wrap(text: str, size: int, width: float, bold: bool = False) -> list[str]:
    per_line = max(8, int(width / (size * (EM_PER_CHAR_BOLD if bold else EM_PER_CHAR))))
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > per_line:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines or [""]


def _text(x: float, y: float, text: str, size: int, *, bold: bool = False,
          colour: str = "#222222", anchor: str = "start") -> str:
    weight = " font-weight='bold'" if bold else ""
    return (f"<text x='{x:.0f}' y='{y:.0f}' font-family='{FONT}' font-size='{size}'"
            f"{weight} fill='{colour}' text-anchor='{anchor}'>{html.escape(text)}</text>")


def text_width(text: str, size: int, bold: bool = False) -> float:
    return len(text) * size * (EM_PER_CHAR_BOLD if bold else EM_PER_CHAR)


def _grid_size(grid: Grid, room: float) -> tuple[int, list[float]]:
    """The largest type (down to MIN_TABLE_PX) at which the table fits the width."""
    size = grid.size
    while True:
        pad = size * 1.2
        widths = [max(text_width(row[c], size, bold=(r == 0)) for r, row in
                      enumerate([grid.header] + grid.rows)) + pad
                  for c in range(len(grid.header))]
        if sum(widths) <= room or size <= MIN_TABLE_PX:
            if sum(widths) > room:
                raise PageError(f"table {grid.header} does not fit the page even at "
                                f"{MIN_TABLE_PX}px")
            return size, widths
        size -= 2


def _height(part: Part, room: float) -> float:
    if isinstance(part, Text):
        return len(wrap(part.text, part.size, room, part.bold)) * part.size * 1.3 + 10
    if isinstance(part, Bullets):
        return sum(len(wrap(i, part.size, room - part.size * 1.2)) * part.size * 1.3
                   + part.size * 0.45 for i in part.items) + 10
    if isinstance(part, Grid):
        size, _ = _grid_size(part, room)
        return (len(part.rows) + 1) * size * 1.75 + 16
    return 0.0  # pictures take what is left


def _box_width(picture: Picture, room: float) -> float:
    """Each image's width when the picture's images share a line, 30 px apart."""
    return (room - (len(picture.paths) - 1) * 30) / len(picture.paths)


def _svg_size(path: Path) -> tuple[float, float] | None:
    """An SVG's own width and height in pixels, from its root element."""
    head = path.read_text(errors="replace")[:4000] if path.is_file() else ""
    found = re.search(r"<svg\b[^>]*>", head, re.S)
    if not found:
        return None
    sizes = []
    for name in ("width", "height"):
        value = re.search(rf"\b{name}\s*=\s*[\"']([\d.]+)(px|pt)?[\"']", found.group(0))
        if not value:
            return None
        sizes.append(float(value.group(1)) * (4 / 3 if value.group(2) == "pt" else 1))
    return sizes[0], sizes[1]


def _check_type(page: Page, number: int) -> None:
    """Refuse text too small to read from the back of a room."""
    for part in page.parts:
        size = part.size if isinstance(part, (Text, Bullets)) else None
        if size is not None and size < MIN_TEXT_PX:
            raise PageError(f"slide {number} ({page.title!r}): {size}px text; at least "
                            f"{MIN_TEXT_PX}px reads from the back of a room")


def _layout(page: Page, number: int, room: float, top: float) -> float:
    """Shrink the tables until the page fits; the height left for pictures."""
    bottom = HEIGHT - MARGIN - 10
    fixed = sum(_height(p, room) for p in page.parts)
    grids = [p for p in page.parts if isinstance(p, Grid)]
    # Tables give up type before the page gives up content.
    while top + fixed > bottom and any(g.size > MIN_TABLE_PX for g in grids):
        for g in grids:
            g.size = max(MIN_TABLE_PX, g.size - 2)
        fixed = sum(_height(p, room) for p in page.parts)
    pictures = [p for p in page.parts if isinstance(p, Picture)]
    for p in pictures:
        for caption in p.captions:
            if len(wrap(caption, SMALL_PX, _box_width(p, room))) > 1:
                raise PageError(f"slide {number} ({page.title!r}): the caption {caption!r} "
                                "is wider than its picture; say less in it")
    picture_room = (bottom - top - fixed) / max(1, len(pictures))
    if pictures and picture_room < 200:
        raise PageError(f"slide {number} ({page.title!r}): {picture_room:.0f}px left for "
                        "pictures; say less on it")
    if not pictures and top + fixed > bottom:
        raise PageError(f"slide {number} ({page.title!r}) overflows by "
                        f"{top + fixed - bottom:.0f}px; say less on it")
    return picture_room


def _draw_text(part: Text, y: float, room: float, out: list[str]) -> float:
    for line in wrap(part.text, part.size, room, part.bold):
        y += part.size * 1.3
        out.append(_text(MARGIN, y, line, part.size, bold=part.bold, colour=part.colour))
    return y + 10


def _draw_bullets(part: Bullets, y: float, room: float, out: list[str]) -> float:
    indent = part.size * 1.2
    for item in part.items:
        for i, line in enumerate(wrap(item, part.size, room - indent)):
            y += part.size * 1.3
            if i == 0:
                out.append(f"<circle cx='{MARGIN + part.size * 0.35:.0f}' "
                           f"cy='{y - part.size * 0.33:.0f}' r='{part.size * 0.16:.1f}'"
                           " fill='#1b6ca8'/>")
            out.append(_text(MARGIN + indent, y, line, part.size))
        y += part.size * 0.45
    return y + 10


def _draw_grid(part: Grid, y: float, room: float, out: list[str]) -> float:
    size, widths = _grid_size(part, room)
    row_h = size * 1.75
    for r, row in enumerate([part.header] + part.rows):
        if r % 2 == 0 and r:
            out.append(f"<rect x='{MARGIN}' y='{y:.0f}' width='{sum(widths):.0f}' "
                       f"height='{row_h:.0f}' fill='#f1f4f8'/>")
        x = MARGIN
        for c, cell in enumerate(row):
            colour = part.emphasis.get((r - 1, c), "#222222") if r else "#222222"
            cx, anchor = (x + size * 0.6, "start") if c == 0 else (x + widths[c] / 2, "middle")
            out.append(_text(cx, y + row_h * 0.7, cell, size, bold=(r == 0), colour=colour,
                             anchor=anchor))
            x += widths[c]
        y += row_h
        if r == 0:
            out.append(f"<line x1='{MARGIN}' x2='{MARGIN + sum(widths):.0f}' y1='{y:.0f}' "
                       f"y2='{y:.0f}' stroke='#1b6ca8' stroke-width='2'/>")
    return y + 16


def _draw_picture(part: Picture, y: float, room: float, height: float, out: list[str],
                  where: str) -> float:
    caption_h = SMALL_PX * 1.6 if part.captions else 0
    box_w = _box_width(part, room)
    box_h = height - caption_h - 10
    for i, path in enumerate(part.paths):
        size = _svg_size(path)
        if part.text_px and size:
            drawn = part.text_px * min(box_w / size[0], box_h / size[1])
            if drawn < MIN_PICTURE_TEXT_PX:
                raise PageError(f"{where}: {path.name} shows its smallest type at "
                                f"{drawn:.0f}px; at least {MIN_PICTURE_TEXT_PX}px reads "
                                "from the back of a room")
        x = MARGIN + i * (box_w + 30)
        out.append(f"<image x='{x:.0f}' y='{y:.0f}' width='{box_w:.0f}' height='{box_h:.0f}' "
                   f"preserveAspectRatio='xMidYMid meet' xlink:href='{html.escape(path.name)}'/>")
        if i < len(part.captions):
            out.append(_text(x + box_w / 2, y + box_h + SMALL_PX * 1.3, part.captions[i],
                             SMALL_PX, colour=GREY, anchor="middle"))
    return y + height


def render(page: Page, number: int, total: int) -> str:
    room = WIDTH - 2 * MARGIN
    _check_type(page, number)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink'"
           f" width='{WIDTH}' height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}'>",
           f"<rect width='{WIDTH}' height='{HEIGHT}' fill='white'/>",
           f"<rect width='{WIDTH}' height='10' fill='#1b6ca8'/>"]
    y = MARGIN + 20
    for line in wrap(page.title, TITLE_PX, room, bold=True):
        y += TITLE_PX
        out.append(_text(MARGIN, y, line, TITLE_PX, bold=True))
        y += TITLE_PX * 0.25
    y += 24
    picture_room = _layout(page, number, room, y)
    for part in page.parts:
        if isinstance(part, Text):
            y = _draw_text(part, y, room, out)
        elif isinstance(part, Bullets):
            y = _draw_bullets(part, y, room, out)
        elif isinstance(part, Grid):
            y = _draw_grid(part, y, room, out)
        else:
            y = _draw_picture(part, y, room, picture_room, out,
                              f"slide {number} ({page.title!r})")
    out.append(_text(MARGIN, HEIGHT - 24, page.footer, FOOTER_PX, colour=GREY))
    out.append(_text(WIDTH - MARGIN, HEIGHT - 24, f"{number}/{total}", FOOTER_PX, colour=GREY,
                     anchor="end"))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def page_text(page: Page) -> str:
    """Everything a page says in words (title, text, lists, tables), charts aside."""
    words = [page.title]
    for part in page.parts:
        if isinstance(part, Text):
            words.append(part.text)
        elif isinstance(part, Bullets):
            words += part.items
        elif isinstance(part, Grid):
            words += ["   ".join(row) for row in [part.header] + part.rows]  # cells apart
        else:
            words += part.captions
    return "\n".join(words)


def write_pdf(pages: list[Page], folder: Path, target: Path, created: int) -> list[Path]:
    """Each page as folder/NN.svg (pictures must be in folder), all of them in one PDF.

    created: the PDF's creation time (seconds since the epoch); with it fixed, the same
    pages make the same bytes, so a regenerated deck changes only when a slide does."""
    if not shutil.which("rsvg-convert"):
        raise PageError("rsvg-convert not found: apt-get install librsvg2-bin")
    svgs = []
    for number, page in enumerate(pages, 1):
        for part in page.parts:
            for path in part.paths if isinstance(part, Picture) else []:
                if path.parent != folder:
                    raise PageError(f"{path}: pictures of a page must be in {folder}")
        svg = folder / f"{number:02d}.svg"
        svg.write_text(render(page, number, len(pages)))
        svgs.append(svg)
    # cairo, under rsvg-convert, dates the PDF from SOURCE_DATE_EPOCH when it is set.
    done = subprocess.run(["rsvg-convert", "-f", "pdf", "-o", str(target), *map(str, svgs)],
                          capture_output=True, text=True,
                          env=dict(os.environ, SOURCE_DATE_EPOCH=str(created)))
    if done.returncode != 0:
        raise PageError(f"rsvg-convert {folder} failed: {done.stderr.strip()}")
    return svgs
