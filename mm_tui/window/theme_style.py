"""Rich styles straight from the theme's variables, for widgets that draw their own lines.

Why not Textual's component classes: the stylesheet applies every component class of a widget
as a virtual node at each restyle (mount, focus, theme change), and the transcript has 27 of
them, on the way to the first frame (docs/performance.md). A style here is what
`get_component_rich_style` gives for `color: $<variable>; text-style: <text_style>` on a child
of the widget: the widget's own style, the text style, and the colour blended over the widget's
background (so `auto 60%`, the theme's muted text, comes out as Textual draws it).
"""

from __future__ import annotations

from rich.style import Style
from textual.color import Color, ColorParseError
from textual.widget import Widget


def theme_color(widget: Widget, variable: str, background: Color) -> Color | None:
    """A theme variable as a colour; `auto N%` is the contrasting text at N% over `background`.
    None for a variable the theme lacks or cannot be read."""
    value = widget.app.theme_variables.get(variable)
    if not value:
        return None
    if value.startswith("auto"):
        alpha = 1.0
        _, _, percent = value.partition(" ")
        if percent.strip().endswith("%"):
            try:
                alpha = float(percent.strip()[:-1]) / 100
            except ValueError:
                pass
        return background.get_contrast_text(alpha)
    try:
        return Color.parse(value)
    except ColorParseError:
        return None


def theme_style(
    widget: Widget,
    color: str | None,
    text_style: str = "",
    *,
    background: str | None = None,
) -> Style:
    """The style of `color: $<color>; text-style: <text_style>` (and `background:
    $<background>`) on a child of `widget`."""
    base = widget.rich_style
    under = Color.from_rich_color(base.bgcolor) if base.bgcolor is not None else Color(0, 0, 0)
    if background is not None:
        fill = theme_color(widget, background, under)
        if fill is not None:
            under = under + fill
    style = base + Style.parse(text_style) if text_style else base
    fg = theme_color(widget, color, under) if color is not None else None
    if fg is None:
        fg = Color.from_rich_color(base.color) if base.color is not None else under
    return style + Style.from_color((under + fg).rich_color, under.rich_color)
