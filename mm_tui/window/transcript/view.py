"""TranscriptView: one line-rendering scroll view over the transcript store.

Chosen by measuring against a widget per item: every item renders to lines once per width
and version and is cached (`line_cache.py`); the view paints only the visible lines (the way
Textual's `Log` stays fast); a click or Enter on a line finds its item by bisecting the items'
offsets and folds or unfolds it; only the item still streaming is rendered again, at most once
per frame. A widget per item does not scale to ten thousand tool lines (docs/performance.md);
this costs what the visible lines cost. Each kind of item has its renderer (`renderers/`), found
by the item's type; the scrollbar is painted in the view's own lines (`scrollbar.py`).

Text can be selected with the mouse, as in Textual's `Log`: each painted line carries the
offsets of its characters, Textual's screen turns a drag into a selection of lines and
characters, the view paints it and gives its text (the lines as they are drawn, trailing blanks
cut) to Ctrl+C, which copies it (`MainScreen.interrupt_key`).
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.timer import Timer

from mm_tui.window.frame_clock import FrameClock
from mm_tui.window.theme_style import theme_style
from mm_tui.window.transcript.line_cache import LineCache
from mm_tui.window.transcript.painted_rows import KEPT, PaintedRows
from mm_tui.window.transcript.renderers.strips import blank, highlighted
from mm_tui.window.transcript.scrollbar import BAR, ScrollbarPainter
from mm_tui.window.transcript.store import AnswerItem, Item, ToolItem, Transcript
from mm_tui.window.transcript.styles import LIGHT_STYLES, STYLES

if TYPE_CHECKING:  # made when the first item is drawn: the first frame's transcript is empty
    from mm_tui.window.transcript.renderers.by_item import Renderers

SPIN = 0.1  # running tool lines redraw their spinner and time ten times a second


class TranscriptView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    TranscriptView {
        height: 1fr;
        scrollbar-size-vertical: 0;
        scrollbar-size-horizontal: 0;
        background: $background;
        padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", "Previous"),
        Binding("down", "cursor(1)", "Next"),
        Binding("enter", "fold", "Fold/unfold"),
        Binding("space", "fold", "Fold/unfold", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "End", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown", "page_down", show=False),
    ]

    class Toggled(Message):
        def __init__(self, item: Item) -> None:
            super().__init__()
            self.item = item

    class Typed(Message):
        """A printable key pressed in the transcript: it belongs to the prompt (a person who
        tabbed here and typed lost their characters)."""

        def __init__(self, character: str) -> None:
            super().__init__()
            self.character = character

    def on_key(self, event: events.Key) -> None:
        character = event.character
        if event.is_printable and character and character != " ":
            event.stop()
            event.prevent_default()
            self.post_message(self.Typed(character))

    def __init__(
        self,
        transcript: Transcript,
        *,
        clock: Callable[[], float],
        frames: FrameClock | None = None,
        name: str | None = None,
        id: str | None = None,  # noqa: A002 - Textual's spelling
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._painted = self._styles_cache = PaintedRows()  # a row that only moved: no repaint
        self.transcript = transcript
        self.clock = clock
        self.frames = frames or FrameClock()  # when frames are drawn: docs in frame_clock.py
        self._width = 0  # the width the cache's lines are rendered at; 0: lay out again
        self._empty = True  # whether the last flush had no item (the first frame draws none)
        self._cache = LineCache()
        self._dirty: set[int] = set()
        # The next frame: an event loop handle, not a Textual timer (a Timer is a task, a
        # message and a signature inspection per frame).
        self._frame: asyncio.TimerHandle | None = None
        self._paint_cost = 0.0  # time spent painting the view's lines since the last flush
        self._follow = True
        self.cursor: int | None = None  # index of the selected foldable item
        self._styles: dict[str, Style] = {}
        self._base: Style | None = None
        self._renderers: Renderers | None = None
        self._bar = ScrollbarPainter()
        self._bar_rows: list[Segment] | None = None  # the bar's cells while a frame is painted
        # (id(line), its line of the content, scroll_x) -> (the line, the bar's cell, the row as
        # painted): a line that only moved gives the same row object, which is how
        # `PaintedRows` knows it (Strip's own caches of its offsets keep four)
        self._rows: dict[tuple[int, int, int], tuple[Strip, Segment, Strip]] = {}
        self._dragging = False
        # The spinner's timer runs only while a tool call runs: an idle window wakes for nothing
        # (ten wake-ups a second, forever, cost a model on the same cores its share).
        self._running_tools: set[int] = set()  # indices of the tool lines running
        self._spin: Timer | None = None

    # -- styles and renderers -------------------------------------------------------------

    def style(self, name: str) -> Style:
        """A part's style (`STYLES`); `base` is the view's own."""
        if name == "base":
            return self.base_style
        style = self._styles.get(name)
        if style is None:
            color, text_style = STYLES[name]
            if not self.app.current_theme.dark:
                color = LIGHT_STYLES.get(name, color)
            style = self._styles[name] = theme_style(self, color, text_style)
        return style

    def _code_theme(self) -> str:
        """The answers' code blocks follow the theme: Monokai's dark panel is a black box on a
        light background. Textual's `ansi-dark` and `ansi-light` draw in the terminal's own 16
        colours (for terminals over SSH without more): their code blocks do too (Rich's ANSI
        styles), not Monokai's 256-colour codes."""
        from mm_tui.window.transcript.renderers.answer import DARK_CODE_THEME, LIGHT_CODE_THEME

        dark = self.app.current_theme.dark
        if self.app.current_theme.name.startswith("ansi-"):
            return "ansi_dark" if dark else "ansi_light"
        return DARK_CODE_THEME if dark else LIGHT_CODE_THEME

    @property
    def renderers(self) -> Renderers:
        """The item renderers, made when the first item is measured or drawn, not at mount:
        their modules are 2.5 ms of imports an empty transcript (the first frame's) does not
        need (docs/performance.md). They need the app's console."""
        if self._renderers is None:
            assert self.is_mounted, "the view renders once mounted"
            from mm_tui.window.transcript.renderers.by_item import Renderers

            self._renderers = Renderers(self.app.console, self.style, self._code_theme())
        return self._renderers

    def notify_style_update(self) -> None:
        super().notify_style_update()  # a theme change comes here too, whatever it changed
        self._styles.clear()
        self._painted.forget()
        self._bar.forget()
        self._base = None
        if self._renderers is not None:  # drawn answers draw their code again, in the new style
            self._renderers.answer.code_theme = self._code_theme()
        self._invalidate_all()

    @property
    def base_style(self) -> Style:
        """The view's own style, asked for every painted line: computed once per style change."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def on_mount(self) -> None:
        self.frames.running = True
        self.anchor()
        self._invalidate_all()

    def on_resize(self, event: events.Resize) -> None:
        self._invalidate_all()

    # -- updates --------------------------------------------------------------------------

    def reset(self) -> None:
        """The store was cleared (a new or resumed session): forget every cached line."""
        self._cache.clear()
        self._dirty.clear()
        self._running_tools.clear()
        self._spin_while_running()
        self.cursor = None
        self._follow = True
        self._invalidate_all()

    def _invalidate_all(self) -> None:
        self._width = 0
        self._schedule()

    def update_items(self, items: Iterable[Item]) -> None:
        """Items changed or were added: redraw them at the next frame."""
        for item in items:
            self._dirty.add(item.id - 1)
            if isinstance(item, ToolItem):
                if item.running:
                    self._running_tools.add(item.id - 1)
                else:
                    self._running_tools.discard(item.id - 1)
        self._spin_while_running()
        self._schedule()

    def _spin_while_running(self) -> None:
        if self._running_tools and self._spin is None:
            self._spin = self.set_interval(SPIN, self._tick)
        elif not self._running_tools and self._spin is not None:
            self._spin.stop()
            self._spin = None

    def _schedule(self) -> None:
        if self._frame is not None:
            return
        self._frame = asyncio.get_running_loop().call_later(self.frames.due_in(), self._run_frame)

    def _run_frame(self) -> None:
        self._frame = None
        try:
            self.flush()
        except Exception as error:  # as a Textual timer's callback would: the app shows it
            self.app._handle_exception(error)  # pyright: ignore[reportPrivateUsage]

    def on_unmount(self) -> None:
        self.frames.running = False
        if self._frame is not None:
            self._frame.cancel()
            self._frame = None

    def _content_width(self) -> int:
        """The items' width: the content's, less the scrollbar drawn at its right."""
        return max(10, self.scrollable_content_region.width - BAR)

    def _visible_range(self, margin: int = 0) -> range:
        """Indices of the items that intersect the viewport, `margin` lines more each way."""
        height = self.scrollable_content_region.height
        top = int(self.scroll_y)
        if self._follow:  # the view is about to show the bottom
            top = max(0, self._cache.total - height)
        return self._cache.between(top - margin, top + height + margin)

    def flush(self) -> None:
        """Render what changed and is on screen, estimate the rest, fix the offsets from the
        first change on, and keep the bottom in view unless the person scrolled away from it.

        An item far from the view is never rendered here: its height is estimated from its
        text and corrected when it comes into view. So loading a long session, a resize and
        Ctrl+O cost what the screen costs, whatever the length of the session.

        Its time, with the time the compositor took to paint the view's lines since the last
        flush, is the frame's cost, from which the frame rate adapts (`FrameClock.interval`)."""
        if self._frame is not None:  # called directly: the frame scheduled is this one
            self._frame.cancel()
            self._frame = None
        if not self.is_mounted:
            return
        start = time.thread_time()
        self.frames.frame_begins()
        try:
            self._flush()
        finally:
            self.frames.measured(time.thread_time() - start + self._paint_cost)
            self._paint_cost = 0.0
        self.frames.frame_ended()

    def _flush(self) -> None:
        cache = self._cache
        base = self.rich_style
        if base != self._base:  # the theme or the CSS changed under us: render again
            self._base = base
            self._width = 0
        count = len(self.transcript.items)
        width = self._content_width()
        self._follow = self._follow or self.scroll_y >= self.max_scroll_y - 1
        old_total = cache.total
        reflow_from: int | None = None
        if width != self._width:
            self._width = width
            if self._renderers is not None:  # none yet: nothing drawn to forget
                self._renderers.answer.forget()
            cache.restart([self._estimate(i) for i in range(count)])
            self._dirty.clear()
            reflow_from = 0
        grow = count - len(cache)
        if grow > 0:
            cache.extend(self._estimate(i) for i in range(count - grow, count))
            reflow_from = count - grow if reflow_from is None else min(reflow_from, count - grow)
        if reflow_from is not None:
            cache.reflow(reflow_from)
        dirty, self._dirty = self._dirty, set()
        for index in dirty:
            if 0 <= index < count:
                cache.drop(index)  # its height stays until it is measured or estimated again
        visible = self._visible_range(margin=2)
        for index in dirty:
            if 0 <= index < count and index not in visible:
                height = self._estimate(index)
                if height != cache.heights[index]:
                    cache.heights[index] = height
                    reflow_from = index if reflow_from is None else min(reflow_from, index)
        if reflow_from is not None:
            cache.reflow(reflow_from)
        # Render what is on screen; an exact height may move what is on screen, so again. An
        # item rendered while painting, before this frame, is measured here too.
        anchor = cache.index_at(int(self.scroll_y))
        shift = 0
        for _ in range(4):
            moved: int | None = None
            for index in self._visible_range(margin=2):
                lines = cache.lines[index]
                if lines is None or not cache.measured[index]:
                    lines = self._render_item(index)
                before = cache.heights[index]
                if len(lines) != before:
                    cache.heights[index] = len(lines)
                    if anchor is not None and index < anchor:
                        shift += len(lines) - before
                    moved = index if moved is None else min(moved, index)
            if moved is None:
                break
            cache.reflow(moved)
            reflow_from = moved if reflow_from is None else min(reflow_from, moved)
        total = cache.total
        laid_out = True
        if (width, total) != tuple(self.virtual_size):
            laid_out = self._resize_content(Size(width, total))
        # An empty view that was empty repaints nothing: its first flush, after the first frame
        # drew it, only gives it its width.
        was_empty, self._empty = self._empty, count == 0
        if (reflow_from is not None and not (was_empty and self._empty)) or total != old_total:
            self.refresh()
        else:
            self._refresh_items(dirty)
        if self._follow:
            if laid_out:  # the bottom in view in this same frame: one repaint, not two
                self._stick_to_bottom()
            else:  # once the new size is laid out
                self.call_after_refresh(self._stick_to_bottom)
        elif shift:  # items above the view changed height: keep showing the same lines
            self.scroll_to(y=self.scroll_y + shift, animate=False, immediate=True)

    def _resize_content(self, size: Size) -> bool:
        """A new virtual size; True when it is in force at once. Setting `virtual_size` lays out
        the whole screen (about a frame of CPU); while an answer grows that would happen at every
        frame. With the width unchanged only the scroll state needs to know (the view draws its
        own scrollbar), which is what Textual itself does for a size change without layout. So
        does an empty transcript's width (the first frame's, set once it is drawn): nothing is
        drawn from it, and the layout cost the way to ready a repaint of every widget."""
        old = self.virtual_size
        if old.width == size.width or size.height == old.height == 0:
            self.set_reactive(ScrollView.virtual_size, size)  # pyright: ignore[reportArgumentType] - Textual's descriptor, read through the class
            self._scroll_update(size)
            return True
        self.virtual_size = size
        return False

    def _refresh_items(self, indices: Iterable[int]) -> None:
        """Repaint only the visible rows of items whose height did not change; of an answer
        still streaming, only the rows of its growing block."""
        cache = self._cache
        top = int(self.scroll_y)
        height = self.scrollable_content_region.height
        for index in indices:
            if not 0 <= index < len(cache.offsets):
                continue
            item = self.transcript.items[index]
            same = self.renderers.answer.stable_rows(item.id) if isinstance(item, AnswerItem) else 0
            if same:
                same += self._margin(index)  # the blank line above it
            first = max(cache.offsets[index] + same, top)
            last = min(cache.offsets[index] + cache.heights[index], top + height)
            if last > first:
                self.refresh_lines(first, last - first)  # lines of the content, not the screen

    def _stick_to_bottom(self) -> None:
        if self._follow:
            # force: Textual ignores a scroll while it holds the view as not scrollable, which it
            # may still do right after the content first outgrows the view.
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)

    def _estimate(self, index: int) -> int:
        """An item's height from its text alone, without rendering it: exact for a folded tool
        line, close for the rest."""
        item = self.transcript.items[index]
        return self._margin(index) + self.renderers.of(item).estimate(item, max(1, self._width))

    def _render_item(self, index: int) -> list[Strip]:
        """Render an item into the cache; its height is taken by the next layout."""
        item = self.transcript.items[index]
        width = self._width
        renderer = self.renderers.of(item)
        lines = renderer.render(item, width)
        base = self.base_style
        if not renderer.draws_base:
            lines = [line.apply_style(base) for line in lines]
        if self._margin(index):
            lines = [blank(width, base), *lines]
        self._cache.keep(index, lines, item.version)
        return lines

    def _tick(self) -> None:
        """Redraw the header lines of running tool calls that are on screen."""
        for index in self._visible_range():
            item = self.transcript.items[index]
            if isinstance(item, ToolItem) and item.running:
                self.refresh_lines(self._cache.offsets[index] + self._margin(index), 1)

    def _margin(self, index: int) -> int:
        """1 when a blank line sets the item apart from the one above it, else 0."""
        if index == 0:
            return 0
        return 1 if self.renderers.of(self.transcript.items[index]).margin_before else 0

    # -- the scrollbar ----------------------------------------------------------------------

    def _on_bar(self, event: events.MouseEvent) -> bool:
        offset = event.get_content_offset(self)
        return offset is not None and offset.x >= self._content_width()

    def _drag_bar(self, event: events.MouseEvent) -> None:
        y = self._bar.scroll_for(event.y, self)
        if y is not None:
            self._follow = False
            self.scroll_to(y=y, animate=False)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if self._on_bar(event):
            self.screen.clear_selection()  # a drag on the bar scrolls, it selects nothing
            self._dragging = True
            self.capture_mouse()
            self._drag_bar(event)
            event.stop()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._dragging:
            self._drag_bar(event)
            event.stop()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
            event.stop()

    # -- painting -------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        """The compositor's call for the view's lines of a frame, timed: part of a frame's cost."""
        start = time.thread_time()
        self._bar_rows = self._bar.rows(self, self.base_style)  # once, not once a line
        try:
            return super().render_lines(crop)
        finally:
            self._bar_rows = None
            self._paint_cost += time.thread_time() - start

    def render_line(self, y: int) -> Strip:
        bar = self._bar_rows or self._bar.rows(self, self.base_style)
        bar_cell = bar[y] if y < len(bar) else self._bar.blank(self.base_style)
        scroll_x, scroll_y = self.scroll_offset
        line_y = y + scroll_y
        line = self._line(line_y)
        key = (id(line), line_y, scroll_x)
        selection = self.text_selection  # once a row: Textual finds it through the screen
        if selection is None:
            kept = self._rows.get(key)
            if kept is not None and kept[0] is line and kept[1] == bar_cell:
                return kept[2]
        strip = self._finished(line, line_y, scroll_x, selection)
        row = Strip([*strip, bar_cell], strip.cell_length + BAR)
        if selection is None:
            if len(self._rows) >= KEPT:
                self._rows.clear()
            self._rows[key] = (line, bar_cell, row)
        return row

    def _content_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        line_y = y + scroll_y
        return self._finished(self._line(line_y), line_y, scroll_x, self.text_selection)

    def _finished(
        self, strip: Strip, line_y: int, scroll_x: int, selection: Selection | None
    ) -> Strip:
        """Line `line_y` as painted: the selection shown, cropped to the view, with the offsets
        a selection by mouse reads."""
        width = self._width or self._content_width()
        if selection is not None:
            span = selection.get_span(line_y)
            if span is not None:
                strip = highlighted(
                    strip, *span, self.screen.get_component_rich_style("screen--selection")
                )
        if scroll_x != 0 or strip.cell_length != width:
            strip = strip.crop_extend(scroll_x, scroll_x + width, self.base_style)
        return strip.apply_offsets(scroll_x, line_y)

    def _line(self, line_y: int) -> Strip:
        """Line `line_y` of the content as drawn (a tool header live), not yet cropped."""
        cache = self._cache
        width = self._width or self._content_width()
        base = self.base_style
        index = cache.index_at(line_y)
        if index is None:
            return blank(width, base)
        lines = cache.lines[index]
        if lines is None:  # scrolled into view before the next flush: render it now
            lines = self._render_item(index)
            self._schedule()  # the next layout takes its exact height
        row = line_y - cache.offsets[index]
        if row >= len(lines):
            return blank(width, base)
        item = self.transcript.items[index]
        header = row == self._margin(index)
        if header and isinstance(item, ToolItem) and item.running:  # live: spinner, time
            selected = index == self.cursor
            strip = self.renderers.tool.header(item, self._width, self.clock(), selected=selected)
            return strip.apply_style(base)
        if header and index == self.cursor:
            return lines[row].apply_style(self.style("tool--selected"))
        return lines[row]

    # -- text selection -------------------------------------------------------------------

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text as it is drawn, each line without its trailing blanks (Textual's
        screen asks, for Ctrl+C). Lines of items not in memory are rendered again."""
        total = self._cache.total
        if total == 0:
            return None
        start = selection.start or Offset(0, 0)
        end = selection.end or Offset(len(self._line(total - 1).text), total - 1)
        last = min(end.y, total - 1)
        lines = [self._line(y).text.rstrip() for y in range(start.y, last + 1)]
        shifted = Selection(Offset(start.x, 0), Offset(end.x, last - start.y))
        return shifted.extract("\n".join(lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    # -- read-only views of the state, for tests and tools --------------------------------

    @property
    def spinning(self) -> bool:
        """Whether the view's spinner timer runs (only while a tool call runs)."""
        return self._spin is not None

    @property
    def settled(self) -> bool:
        """Whether everything that changed is drawn: no item waits to be rendered again and no
        frame is scheduled. What a test waits for before it reads the view."""
        return not self._dirty and self._frame is None

    @property
    def line_width(self) -> int:
        """The width the items are rendered at: the content's, less the scrollbar (0 until the
        first frame)."""
        return self._width

    def content_line(self, y: int) -> Strip:
        """Row `y` of the view as it is painted, without the scrollbar."""
        return self._content_line(y)

    def item_top(self, item: Item) -> int:
        """The line of the content where `item` starts (0 is the transcript's first line), as
        last laid out."""
        return self._cache.offsets[item.id - 1]

    def item_rows(self, item: Item) -> range:
        """The lines of the content `item` takes, as last laid out (empty before)."""
        index = item.id - 1
        cache = self._cache
        if not 0 <= index < len(cache.offsets):
            return range(0)
        return range(cache.offsets[index], cache.offsets[index] + cache.heights[index])

    def drawn_version(self, item: Item) -> int | None:
        """The version of `item` its lines were last rendered from (None: the view does not know
        the item yet, or never rendered it at this width)."""
        index = item.id - 1
        versions = self._cache.versions
        version = versions[index] if 0 <= index < len(versions) else -1
        return None if version < 0 else version

    def items_on_screen(self) -> list[Item]:
        """The items that intersect the visible rows."""
        items = self.transcript.items
        return [items[index] for index in self._visible_range()]

    def drawn_lines(self, item: Item) -> list[Strip] | None:
        """The lines `item` is drawn with, as the last frame rendered them (None: not rendered,
        or given back to bound memory); a tool line's header as it is painted now, with its
        spinner and time."""
        index = item.id - 1
        cached = self._cache.lines
        lines = cached[index] if 0 <= index < len(cached) else None
        if lines is None or not isinstance(item, ToolItem) or not item.running:
            return lines
        row = self._margin(index)
        header = self.renderers.tool.header(item, self._width, self.clock())
        return [*lines[:row], header, *lines[row + 1 :]]

    # -- folding --------------------------------------------------------------------------

    def item_at(self, y: int) -> Item | None:
        """The item drawn at a line of the content (0 is the first line of the transcript)."""
        index = self._cache.index_at(y)
        return None if index is None else self.transcript.items[index]

    def toggle(self, item: Item) -> None:
        if self.transcript.toggle(item):
            self._follow = False
            self.update_items([item])
            self.post_message(self.Toggled(item))

    def on_click(self, event: events.Click) -> None:
        if self._on_bar(event) or self.text_selection is not None:  # a drag selected text
            return
        line = event.y + int(self.scroll_y)
        item = self.item_at(line)
        if item is None or not item.foldable:
            return
        index = item.id - 1
        if line - self._cache.offsets[index] == self._margin(index):
            self.cursor = index
            self.toggle(item)

    def action_fold(self) -> None:
        """Enter: fold or unfold the line under the cursor (not `toggle`, which is Textual's
        own action for a widget's attribute)."""
        if self.cursor is not None and self.cursor < len(self.transcript.items):
            self.toggle(self.transcript.items[self.cursor])

    def action_cursor(self, step: int) -> None:
        items = self.transcript.items
        foldable = [i for i in range(len(items)) if items[i].foldable]
        if not foldable:
            return
        if self.cursor is None:
            self.cursor = foldable[-1] if step < 0 else foldable[0]
        else:
            if step > 0:
                position = bisect_right(foldable, self.cursor)
            else:
                position = bisect_left(foldable, self.cursor) - 1
            self.cursor = foldable[max(0, min(len(foldable) - 1, position))]
        self._follow = False
        top = self._cache.offsets[self.cursor]
        height = self.scrollable_content_region.height
        if top < self.scroll_y or top >= self.scroll_y + height:
            self.scroll_to(y=max(0, top - height // 3), animate=False)
        self.refresh()

    def fold_all(self) -> None:
        """Ctrl+O: open every tool output when one is closed, else close them all."""
        tools = [i for i in self.transcript.items if isinstance(i, ToolItem)]
        folded = not any(i.folded for i in tools)
        self.update_items(self.transcript.fold_all(folded))

    # -- scrolling follows the person -----------------------------------------------------

    def action_scroll_home(self) -> None:
        self._follow = False
        self.scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self._follow = True
        self.scroll_end(animate=False)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < old_value:
            self._follow = False
        elif new_value >= self.max_scroll_y - 1:
            self._follow = True
        if round(old_value) != round(new_value) and self._unrendered_in_view():
            self._schedule()  # items coming into view need rendering

    def _unrendered_in_view(self) -> bool:
        """Whether an item in or near the view has no lines yet (only an estimate). Following
        a streaming answer scrolls the view at every frame, onto lines already drawn: a frame
        for that would only wake the event loop."""
        lines = self._cache.lines
        return any(lines[index] is None for index in self._visible_range(margin=2))
