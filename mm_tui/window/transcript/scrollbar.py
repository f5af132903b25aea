"""The transcript view's scrollbar, painted by the view in its own lines.

Why not Textual's ScrollBar: it is a widget of its own that renders all its rows again whenever
the content grows by a line, a large share of a streaming answer's CPU (docs/performance.md).
This paints the same bar (Textual's renderer, colours and glyphs) as one cell pair per row,
computed once per size and position, and turns a press or a drag on it into a scroll position as
Textual's does.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBarRender

BAR = 2  # columns of the scrollbar, at the right of the view's lines


class ScrollbarPainter:
    def __init__(self) -> None:
        self._rows: tuple[tuple[object, ...], list[Segment]] | None = None

    def forget(self) -> None:
        """The style changed: paint again."""
        self._rows = None

    def blank(self, base: Style) -> Segment:
        return Segment(" " * BAR, base)

    def rows(self, view: ScrollView, base: Style) -> list[Segment]:
        """The bar's cell pair for each row of `view`, blank while everything fits."""
        height = view.size.height
        total = view.virtual_size.height
        scroll_y = view.scroll_offset.y
        key = (height, total, scroll_y, base)
        if self._rows is not None and self._rows[0] == key:
            return self._rows[1]
        if total <= height:
            rows = [self.blank(base)] * height
        else:
            styles = view.styles
            base_background, _ = view.background_colors
            background = styles.scrollbar_background
            if background.a < 1:
                background = base_background + background
            color = background + styles.scrollbar_color
            bar = ScrollBarRender.render_bar(
                size=height,
                virtual_size=total,
                window_size=height,
                position=scroll_y,
                thickness=BAR,
                vertical=True,
                back_color=background.rich_color,  # type: ignore[arg-type] - as Textual passes it
                bar_color=color.rich_color,  # type: ignore[arg-type]
            )
            under = base + Style(bgcolor=background.rich_color)
            rows = [
                Segment(segment.text, under + segment.style.clear_meta_and_links())
                for segment in bar.segments
                if segment.text != "\n" and segment.style is not None
            ]
        self._rows = (key, rows)
        return rows

    @staticmethod
    def scroll_for(pointer_y: int, view: ScrollView) -> int | None:
        """The scroll position that puts the thumb under the pointer, as dragging Textual's
        would; None while everything fits."""
        height = view.size.height
        total = view.virtual_size.height
        if total <= height:
            return None
        thumb = max(1.0, height * height / total)
        ratio = (pointer_y - thumb / 2) / max(1.0, height - thumb)
        return round(min(1.0, max(0.0, ratio)) * view.max_scroll_y)
