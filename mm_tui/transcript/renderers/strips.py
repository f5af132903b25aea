"""Rich renderables to Textual strips: what every transcript item renderer uses."""

from __future__ import annotations

from rich.console import Console, RenderableType
from rich.style import Style
from rich.text import Text
from textual.strip import Strip


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


def format_elapsed(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"
