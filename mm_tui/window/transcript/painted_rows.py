"""PaintedRows: Textual's cache of the view's painted rows, which also knows each row by the line
it shows.

Why: while an answer streams and the view follows the bottom, every new line moves all the rows
up by one, and Textual's cache, which keeps rows by their position, paints every row of the view
again (padding, background, the colour filters; what that costs: docs/performance.md). A painted
row is a function of the view's line (the same `Strip` object while the line does not change:
`TranscriptView.render_line` keeps it so) and of the widget's styles, so a row that only moved
costs a lookup here.

Only for a widget without vertical padding or borders, where each row is a line of content. The
rows outlive Textual's own clearing of its cache (a refresh of the whole widget, which the view
asks for whenever its content grows: that is the case this is for); they are forgotten when what
a row is painted with changes (size, padding, colours, and, through `forget`, which the widget
calls when its styles change).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual._styles_cache import StylesCache  # pyright: ignore[reportPrivateUsage]
from textual.geometry import Size
from textual.strip import Strip

KEPT = 512  # painted rows kept (about twenty screens); all forgotten when full


class PaintedRows(StylesCache):
    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[int, tuple[Strip, Strip]] = {}  # id(line) -> (line, painted row)
        self._inputs: tuple[object, ...] | None = None

    def forget(self) -> None:
        """The widget's styles changed: paint every row again."""
        self.clear()
        self._rows.clear()

    def render_line(  # noqa: PLR0913 - Textual's signature
        self,
        styles: Any,
        y: int,
        size: Size,
        content_size: Size,
        padding: Any,
        base_background: Any,
        background: Any,
        render_content_line: Callable[[int], Strip],
        border_title: Any,
        border_subtitle: Any,
        opacity: float,
        ansi_theme: Any,
        native_ansi: bool,
    ) -> Strip:
        gutter = styles.gutter
        rest = (border_title, border_subtitle, opacity, ansi_theme, native_ansi)
        if gutter.top or gutter.bottom or content_size.height != size.height:
            return super().render_line(
                styles, y, size, content_size, padding, base_background, background,
                render_content_line, *rest,
            )  # fmt: skip
        inputs = (size, content_size, padding, base_background, background, *rest)
        if inputs != self._inputs:
            self._inputs = inputs
            self._rows.clear()
        line = render_content_line(y)
        kept = self._rows.get(id(line))
        if kept is not None and kept[0] is line:
            return kept[1]
        row = super().render_line(
            styles, y, size, content_size, padding, base_background, background,
            lambda _y: line, *rest,
        )  # fmt: skip
        if len(self._rows) >= KEPT:
            self._rows.clear()
        self._rows[id(line)] = (line, row)
        return row
