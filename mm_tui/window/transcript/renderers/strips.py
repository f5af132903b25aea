"""Rich renderables to Textual strips, and the sizes of text: what every item renderer uses."""

from __future__ import annotations

from functools import lru_cache

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip


@lru_cache(maxsize=64)
def blank(width: int, style: Style | None = None) -> Strip:
    """A blank line: one object per width and style, so that a blank row of the view that only
    moved is known again by the line it shows (`painted_rows.py`)."""
    return Strip.blank(width, style)


def strips(
    console: Console,
    renderable: RenderableType,
    width: int,
    style: Style | None = None,
    base: Style | None = None,
) -> list[Strip]:
    """The lines of a renderable at a width, each a Strip exactly `width` cells wide; `base`
    goes under every segment (the view's background) and `style` over it, in the one pass Rich
    makes while rendering (the padding too), so that each line costs one Strip."""
    options = console.options.update(width=max(1, width), height=None, highlight=False)
    under = base + style if base is not None and style is not None else base or style
    lines = console.render_lines(renderable, options, style=under, pad=True)
    return [Strip(line, width) for line in lines]


def text_strip(text: Text, width: int, console: Console) -> Strip:
    """One line of text, cut with an ellipsis or padded to the width."""
    text = text.copy()
    text.truncate(width, overflow="ellipsis", pad=True)
    return Strip(list(text.render(console)), width)


def right_aligned(left: Text, right: Text, width: int, console: Console) -> Strip:
    """`left` cut to leave room for `right`, which sits against the right edge."""
    room = max(1, width - right.cell_len - 1)
    left = left.copy()
    left.truncate(room, overflow="ellipsis", pad=True)
    line = Text.assemble(left, " ", right)
    line.truncate(width, pad=True)
    return Strip(list(line.render(console)), width)


def highlighted(strip: Strip, start: int, end: int, style: Style) -> Strip:
    """`strip` with its characters from `start` to `end` (exclusive; -1: to the last one that is
    not blank) drawn with `style` over their own: a text selection. Offsets count characters,
    as Textual's selection does."""
    if end < 0:
        end = len(strip.text.rstrip())
    if end <= start:
        return strip
    segments: list[Segment] = []
    position = 0
    for text, own, control in strip:
        length = len(text)
        first, last = max(start, position) - position, min(end, position + length) - position
        if control or last <= first:
            segments.append(Segment(text, own, control))
        else:
            if first:
                segments.append(Segment(text[:first], own))
            segments.append(Segment(text[first:last], own + style if own else style))
            if last < length:
                segments.append(Segment(text[last:], own))
        position += length
    return Strip(segments, strip.cell_length)


def wrapped_lines(text: str, width: int) -> int:
    """How many lines text takes at a width, without rendering it: a renderer's estimate of an
    item's height before it is drawn."""
    width = max(1, width)
    total = 0
    for line in text.split("\n"):
        total += max(1, -(-len(line) // width))
    return total


def format_elapsed(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"
