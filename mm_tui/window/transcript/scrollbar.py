"""The transcript view's scrollbar, painted by the view in its own lines.

Why not Textual's ScrollBar: it is a widget of its own that renders all its rows again whenever
the content grows by a line, a large share of a streaming answer's CPU (docs/performance.md).
This paints the same bar (Textual's renderer, colours and glyphs) as one cell pair per row,
computed once per size and position, and turns a press or a drag on it into a scroll position as
Textual's does.
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBarRender

BAR = 2  # columns of the scrollbar, at the right of the view's lines
CELLS = 64  # painted glyph pairs kept (a bar has a few: the track, the thumb, its two ends)


class ScrollbarPainter:
    def __init__(self) -> None:
        self._rows: tuple[tuple[object, ...], list[Segment]] | None = None
        # the bar's colours, from the view's styles (its background is its ancestors' blend):
        # worked out again only when the styles or the base change, not as the thumb moves
        self._colors: tuple[tuple[object, ...], Color, Color, Style] | None = None
        self._cells: dict[tuple[str, Style | None], Segment] = {}  # a glyph pair, painted

    def forget(self) -> None:
        """The style changed: paint again."""
        self._rows = None
        self._colors = None
        self._cells.clear()

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
            background, color, under = self._colors_of(view, base)
            bar = ScrollBarRender.render_bar(
                size=height,
                virtual_size=total,
                window_size=height,
                position=scroll_y,
                thickness=BAR,
                vertical=True,
                back_color=background,
                bar_color=color,
            )
            cells = self._cells
            if len(cells) > CELLS:
                cells.clear()
            rows = []
            for segment in bar.segments:
                if segment.text != "\n" and segment.style is not None:
                    cell = cells.get((segment.text, segment.style))
                    if cell is None:
                        cell = Segment(segment.text, under + segment.style.clear_meta_and_links())
                        cells[segment.text, segment.style] = cell
                    rows.append(cell)
        self._rows = (key, rows)
        return rows

    def _colors_of(self, view: ScrollView, base: Style) -> tuple[Color, Color, Style]:
        """The bar's back and thumb colours as Textual's bar gets them, and the style under it."""
        styles = view.styles
        key = (styles.scrollbar_background, styles.scrollbar_color, base)
        if self._colors is None or self._colors[0] != key:
            background = styles.scrollbar_background
            if background.a < 1:
                base_background, _ = view.background_colors
                background = base_background + background
            color = background + styles.scrollbar_color
            back, thumb = background.rich_color, color.rich_color
            self._colors = (key, back, thumb, base + Style(bgcolor=back))
        return self._colors[1:]

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
