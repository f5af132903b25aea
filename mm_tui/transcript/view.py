"""TranscriptView: one line-rendering scroll view over the transcript store.

Design (2) of the design notes, chosen by measuring: every item renders to lines once per width
and version and is cached; the view paints only the visible lines (the way Textual's `Log` stays
fast); a click or Enter on a line finds its item by bisecting the items' offsets and folds or
unfolds it; only the item still streaming is rendered again, at most once per frame. Mounting a
widget per item costs seconds and hundreds of MB at ten thousand tool lines; this costs what the
visible lines cost.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBarRender
from textual.strip import Strip

from mm_tui.transcript import (
    AgentHeaderItem,
    AnswerItem,
    Item,
    NoticeItem,
    RecapItem,
    ThoughtItem,
    ToolItem,
    Transcript,
    UserItem,
)
from mm_tui.widgets.agent_header import ChildHeader
from mm_tui.widgets.answer import DARK_CODE_THEME, LIGHT_CODE_THEME, Answer
from mm_tui.widgets.recap import Recap
from mm_tui.widgets.theme_style import theme_style
from mm_tui.widgets.thought import Thought
from mm_tui.widgets.tool_line import ToolLine
from mm_tui.widgets.user_message import UserMessage

FRAME = 1 / 20  # updates are coalesced: 20 frames a second read as smooth streaming text
SPIN = 0.1  # running tool lines redraw their spinner and time ten times a second
HELD_LINES = 4000  # rendered lines kept; beyond, the oldest items give theirs back
MARGIN_BEFORE = (UserItem, AnswerItem, AgentHeaderItem, NoticeItem, RecapItem)
BAR = 2  # columns of the scrollbar the view draws at the right of its lines


# What each part of an item is drawn in: (theme variable for the colour, text style). Styles come
# from the theme directly (see widgets/theme_style.py) rather than from component classes.
STYLES: dict[str, tuple[str | None, str]] = {
    "tool--bullet": ("accent", ""),
    "tool--title": ("text", ""),
    "tool--ok": ("success", ""),
    "tool--error": ("error", ""),
    "tool--rejected": ("warning", ""),
    "tool--cancelled": ("warning", ""),
    "tool--running": ("accent", ""),
    "tool--waiting": ("warning", "bold"),
    "tool--time": ("text-muted", ""),
    "tool--output": ("text-muted", ""),
    "tool--output-error": ("error", ""),
    "tool--selected": (None, "reverse"),
    "diff--added": ("success", ""),
    "diff--removed": ("error", ""),
    "diff--hunk": ("accent", ""),
    "diff--header": ("text-muted", "bold"),
    "user--prompt": ("accent", "bold"),
    "user--text": ("text", "bold"),
    "answer--text": ("text", ""),
    "answer--label": ("secondary", "bold"),
    "thought--text": ("text-muted", "italic"),
    "recap--rule": ("panel-lighten-2", ""),
    "recap--text": ("text-muted", ""),
    "notice--error": ("error", "bold"),
    "notice--warning": ("warning", ""),
    "notice--info": ("text-muted", ""),
    "child--header": ("secondary", "bold"),
}
# In a light theme, the colours of STYLES that would vanish into the background: the panel's
# lighter shade is near white there. `text-disabled` is the contrasting text at 38% in every
# theme, so it shows on any background and stays dimmer than the recap's muted text.
LIGHT_STYLES: dict[str, str] = {"recap--rule": "text-disabled"}


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
        name: str | None = None,
        id: str | None = None,  # noqa: A002 - Textual's spelling
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.transcript = transcript
        self.clock = clock
        self._width = 0
        # Per item index, at self._width: its lines when rendered (None: not rendered, or given
        # back to bound memory), the version they show, whether its height is measured (else
        # estimated), its height, and the line where it starts.
        self._lines: list[list[Strip] | None] = []
        self._versions: list[int] = []
        self._measured: list[bool] = []
        self._heights: list[int] = []
        self._offsets: list[int] = []
        self._held: OrderedDict[int, int] = OrderedDict()  # items holding lines, oldest first
        self._held_lines = 0
        self._dirty: set[int] = set()
        self._flush_scheduled = False
        self._follow = True
        self.cursor: int | None = None  # index of the selected foldable item
        self._styles: dict[str, Style] = {}
        self._base: Style | None = None
        self._renderers_ready = False
        self._bar: tuple[tuple, list[Segment]] | None = None
        self._dragging = False

    # -- renderers ------------------------------------------------------------------------

    def style(self, name: str) -> Style:
        """A component class's style; `base` is the view's own."""
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
        light background."""
        return DARK_CODE_THEME if self.app.current_theme.dark else LIGHT_CODE_THEME

    def _make_renderers(self) -> None:
        console = self.app.console
        self.tool_line = ToolLine(console, self.style)
        self.answer = Answer(console, self.style, code_theme=self._code_theme())
        self.thought = Thought(console, self.style)
        self.recap = Recap(console, self.style)
        self.user = UserMessage(console, self.style)
        self.child = ChildHeader(console, self.style)
        self._renderers_ready = True

    def notify_style_update(self) -> None:
        super().notify_style_update()  # a theme change comes here too, whatever it changed
        self._styles.clear()
        self._bar = None
        self._base = None
        if self._renderers_ready:  # drawn answers draw their code again, in the new theme's style
            self.answer.code_theme = self._code_theme()
        self._invalidate_all()

    @property
    def base_style(self) -> Style:
        """The view's own style, asked for every painted line: computed once per style change."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def on_mount(self) -> None:
        self._make_renderers()
        self.anchor()
        self.set_interval(SPIN, self._tick)
        self._invalidate_all()

    def on_resize(self, event: events.Resize) -> None:
        self._invalidate_all()

    # -- updates --------------------------------------------------------------------------

    def reset(self) -> None:
        """The store was cleared (a new or resumed session): forget every cached line."""
        self._lines, self._versions, self._measured = [], [], []
        self._heights, self._offsets = [], []
        self._held.clear()
        self._held_lines = 0
        self._dirty.clear()
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
        self._schedule()

    def _schedule(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.set_timer(FRAME, self.flush)

    def _content_width(self) -> int:
        """The items' width: the content's, less the scrollbar drawn at its right."""
        return max(10, self.scrollable_content_region.width - BAR)

    # -- the scrollbar ----------------------------------------------------------------------

    def _bar_rows(self) -> list[Segment]:
        """The scrollbar's cell pair for each row of the view, as Textual's ScrollBar draws it
        (its renderer, colours and glyphs), blank while everything fits. Drawn by the view in
        its own lines because Textual's ScrollBar is a widget of its own that renders all its
        rows again whenever the content grows by a line: about a quarter of the CPU of a
        streaming answer."""
        height = self.size.height
        total = self.virtual_size.height
        scroll_y = self.scroll_offset.y
        key = (height, total, scroll_y, self.base_style)
        if self._bar is not None and self._bar[0] == key:
            return self._bar[1]
        if total <= height:
            rows = [Segment(" " * BAR, self.base_style)] * height
        else:
            styles = self.styles
            base_background, _ = self.background_colors
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
            under = self.base_style + Style(bgcolor=background.rich_color)
            rows = [
                Segment(segment.text, under + segment.style.clear_meta_and_links())
                for segment in bar.segments
                if segment.text != "\n" and segment.style is not None
            ]
        self._bar = (key, rows)
        return rows

    def _on_bar(self, event: events.MouseEvent) -> bool:
        offset = event.get_content_offset(self)
        return offset is not None and offset.x >= self._content_width()

    def _drag_bar(self, event: events.MouseEvent) -> None:
        """Scroll so that the thumb is under the pointer, as dragging Textual's would."""
        height = self.size.height
        total = self.virtual_size.height
        if total <= height:
            return
        thumb = max(1.0, height * height / total)
        ratio = (event.y - thumb / 2) / max(1.0, height - thumb)
        self._follow = False
        self.scroll_to(y=round(min(1.0, max(0.0, ratio)) * self.max_scroll_y), animate=False)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if self._on_bar(event):
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

    def _total(self) -> int:
        return (self._offsets[-1] + self._heights[-1]) if self._heights else 0

    def _visible_range(self, margin: int = 0) -> range:
        """Indices of the items that intersect the viewport, `margin` lines more each way."""
        if not self._offsets:
            return range(0)
        height = self.scrollable_content_region.height
        top = int(self.scroll_y)
        if self._follow:  # the view is about to show the bottom
            top = max(0, self._total() - height)
        first = max(0, bisect_right(self._offsets, top - margin) - 1)
        last = min(len(self._offsets), bisect_right(self._offsets, top + height + margin))
        return range(first, max(first, last))

    def flush(self) -> None:
        """Render what changed and is on screen, estimate the rest, fix the offsets from the
        first change on, and keep the bottom in view unless the person scrolled away from it.

        An item far from the view is never rendered here: its height is estimated from its
        text and corrected when it comes into view. So loading a long session, a resize and
        Ctrl+O cost what the screen costs, whatever the length of the session."""
        self._flush_scheduled = False
        if not self.is_mounted or not self._renderers_ready:
            return
        base = self.rich_style
        if base != self._base:  # the theme or the CSS changed under us: render again
            self._base = base
            self._width = 0
        items = self.transcript.items
        count = len(items)
        width = self._content_width()
        self._follow = self._follow or self.scroll_y >= self.max_scroll_y - 1
        old_total = self._total()
        reflow_from: int | None = None
        if width != self._width:
            self._width = width
            self._lines = [None] * count
            self._versions = [-1] * count
            self._measured = [False] * count
            self._held.clear()
            self._held_lines = 0
            self.answer.forget()
            self._heights = [self._estimate(i) for i in range(count)]
            self._dirty.clear()
            reflow_from = 0
        grow = count - len(self._heights)
        if grow > 0:
            self._lines.extend([None] * grow)
            self._versions.extend([-1] * grow)
            self._measured.extend([False] * grow)
            self._heights.extend(self._estimate(i) for i in range(count - grow, count))
            reflow_from = count - grow if reflow_from is None else min(reflow_from, count - grow)
        if reflow_from is not None:
            self._reflow(reflow_from)
        dirty, self._dirty = self._dirty, set()
        for index in dirty:
            if 0 <= index < count:
                self._drop(index)  # its height stays until it is measured or estimated again
        visible = self._visible_range(margin=2)
        for index in dirty:
            if 0 <= index < count and index not in visible:
                height = self._estimate(index)
                if height != self._heights[index]:
                    self._heights[index] = height
                    reflow_from = index if reflow_from is None else min(reflow_from, index)
        if reflow_from is not None:
            self._reflow(reflow_from)
        # Render what is on screen; an exact height may move what is on screen, so again.
        anchor = self.item_index_at(int(self.scroll_y))
        shift = 0
        for _ in range(4):
            moved: int | None = None
            for index in self._visible_range(margin=2):
                if self._lines[index] is None or not self._measured[index]:
                    before = self._heights[index]
                    self._heights[index] = self._render_item(index)
                    if self._heights[index] != before:
                        if anchor is not None and index < anchor:
                            shift += self._heights[index] - before
                        moved = index if moved is None else min(moved, index)
            if moved is None:
                break
            self._reflow(moved)
            reflow_from = moved if reflow_from is None else min(reflow_from, moved)
        total = self._total()
        laid_out = True
        if (width, total) != tuple(self.virtual_size):
            laid_out = self._resize_content(Size(width, total))
        if reflow_from is not None or total != old_total:
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
        own scrollbar), which is what Textual itself does for a size change without layout."""
        old = self.virtual_size
        if old.width == size.width:
            self.set_reactive(ScrollView.virtual_size, size)  # pyright: ignore[reportArgumentType] - Textual's descriptor, read through the class
            self._scroll_update(size)
            return True
        self.virtual_size = size
        return False

    def _reflow(self, start: int) -> None:
        """Offsets from item `start` on, after heights changed."""
        del self._offsets[start:]
        if start >= len(self._heights):
            return
        initial = self._offsets[start - 1] + self._heights[start - 1] if start > 0 else 0
        self._offsets.extend(itertools.accumulate(self._heights[start:-1], initial=initial))

    def _refresh_items(self, indices: Iterable[int]) -> None:
        """Repaint only the visible rows of items whose height did not change; of an answer
        still streaming, only the rows of its growing block."""
        top = int(self.scroll_y)
        height = self.scrollable_content_region.height
        for index in indices:
            if not 0 <= index < len(self._offsets):
                continue
            item = self.transcript.items[index]
            same = self.answer.stable_rows(item.id) if isinstance(item, AnswerItem) else 0
            if same:
                same += self._header_row(index)  # the blank line above it
            first = max(self._offsets[index] + same, top)
            last = min(self._offsets[index] + self._heights[index], top + height)
            if last > first:
                self.refresh_lines(first, last - first)  # lines of the content, not the screen

    def _stick_to_bottom(self) -> None:
        if self._follow:
            # force: Textual ignores a scroll while it holds the view as not scrollable, which it
            # may still do right after the content first outgrows the view.
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)

    def _drop(self, index: int) -> None:
        """Forget an item's lines: it changed."""
        held = self._held.pop(index, None)
        if held is not None:
            self._held_lines -= held
        self._lines[index] = None
        self._measured[index] = False

    def _estimate(self, index: int) -> int:
        """An item's height from its text alone, without rendering it: exact for a folded tool
        line, close for the rest."""
        item = self.transcript.items[index]
        width = max(1, self._width)
        margin = self._header_row(index)  # the blank line above it
        if isinstance(item, ToolItem):
            if item.folded:
                return 1
            body = item.diff if item.diff and item.status == "ok" else item.output
            return 2 + _wrapped_lines(body or "", width - 4)
        if isinstance(item, AnswerItem):
            label = 1 if item.label else 0
            return margin + label + _wrapped_lines(item.text, width)
        if isinstance(item, ThoughtItem):
            return 1 if item.folded else 1 + _wrapped_lines(item.text, width)
        if isinstance(item, UserItem):
            return margin + _wrapped_lines(item.text, width - 2)
        if isinstance(item, NoticeItem):
            return margin + _wrapped_lines(item.text, width)
        return margin + 1

    def item_index_at(self, y: int) -> int | None:
        index = bisect_right(self._offsets, y) - 1
        return index if 0 <= index < len(self._offsets) else None

    def _render_item(self, index: int) -> int:
        item = self.transcript.items[index]
        width = self._width
        if isinstance(item, ToolItem):
            lines = [Strip.blank(width)]  # header: drawn live in render_line
            if not item.folded:
                lines.extend(self.tool_line.body(item, width))
        elif isinstance(item, AnswerItem):
            lines = self.answer.render(item, width)
        elif isinstance(item, ThoughtItem):
            lines = self.thought.render(item, width)
        elif isinstance(item, UserItem):
            lines = self.user.render(item, width)
        elif isinstance(item, RecapItem):
            lines = self.recap.render(item, width)
        elif isinstance(item, AgentHeaderItem):
            lines = self.child.render(item, width)
        elif isinstance(item, NoticeItem):
            lines = self.user.notice(item, width)
        else:
            lines = []
        base = self.base_style
        if not isinstance(item, AnswerItem):  # an answer's blocks carry the base already
            lines = [line.apply_style(base) for line in lines]
        if self._header_row(index):
            lines = [Strip.blank(width, base), *lines]
        self._lines[index] = lines
        self._versions[index] = item.version
        self._measured[index] = True
        self._hold(index, len(lines))
        return len(lines)

    def _hold(self, index: int, count: int) -> None:
        """Keep an item's lines, giving back the oldest others' beyond the budget (their heights
        stay known; they render again when they come back into view)."""
        previous = self._held.pop(index, None)
        if previous is not None:
            self._held_lines -= previous
        self._held[index] = count
        self._held_lines += count
        while self._held_lines > HELD_LINES and len(self._held) > 1:
            oldest, lines = self._held.popitem(last=False)
            self._held_lines -= lines
            self._lines[oldest] = None

    def _tick(self) -> None:
        """Redraw the header lines of running tool calls that are on screen."""
        for index in self._visible_range():
            item = self.transcript.items[index]
            if isinstance(item, ToolItem) and item.running:
                self.refresh_lines(self._offsets[index] + self._header_row(index), 1)

    def _header_row(self, index: int) -> int:
        item = self.transcript.items[index]
        return 1 if isinstance(item, MARGIN_BEFORE) and index > 0 else 0

    # -- painting -------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        bar = self._bar_rows()
        bar_cell = bar[y] if y < len(bar) else Segment(" " * BAR, self.base_style)
        strip = self._content_line(y)
        return Strip([*strip, bar_cell], strip.cell_length + BAR)

    def _content_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self._width or self._content_width()
        base = self.base_style
        line_y = y + scroll_y
        index = bisect_right(self._offsets, line_y) - 1
        if index < 0 or index >= len(self._offsets):
            return Strip.blank(width, base)
        lines = self._lines[index]
        if lines is None:  # scrolled into view before the next flush: render it now
            self._render_item(index)
            self._schedule()  # its exact height may differ from the estimate
            lines = self._lines[index] or []
        row = line_y - self._offsets[index]
        if row >= len(lines):
            return Strip.blank(width, base)
        item = self.transcript.items[index]
        header = row == self._header_row(index)
        if header and isinstance(item, ToolItem):  # drawn live: spinner, time, selection
            selected = index == self.cursor
            strip = self.tool_line.header(item, self._width, self.clock(), selected=selected)
            strip = strip.apply_style(base)
        elif header and index == self.cursor:
            strip = lines[row].apply_style(self.style("tool--selected"))
        else:
            strip = lines[row]
        if scroll_x == 0 and strip.cell_length == width:
            return strip  # stored ready to paint: no new Strip per painted line
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    # -- read-only views of the state, for tests and tools --------------------------------

    @property
    def settled(self) -> bool:
        """Whether everything that changed is drawn: no item waits to be rendered again and no
        frame is scheduled. What a test waits for before it reads the view."""
        return not self._dirty and not self._flush_scheduled

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
        return self._offsets[item.id - 1]

    def drawn_lines(self, item: Item) -> list[Strip] | None:
        """The lines `item` is drawn with, as the last frame rendered them (None: not rendered,
        or given back to bound memory); a tool line's header as it is painted now, with its
        spinner and time."""
        index = item.id - 1
        lines = self._lines[index] if 0 <= index < len(self._lines) else None
        if lines is None or not isinstance(item, ToolItem):
            return lines
        row = self._header_row(index)
        header = self.tool_line.header(item, self._width, self.clock())
        return [*lines[:row], header, *lines[row + 1 :]]

    # -- folding --------------------------------------------------------------------------

    def item_at(self, y: int) -> Item | None:
        """The item drawn at a line of the content (0 is the first line of the transcript)."""
        index = self.item_index_at(y)
        return None if index is None else self.transcript.items[index]

    def toggle(self, item: Item) -> None:
        if self.transcript.toggle(item):
            self._follow = False
            self.update_items([item])
            self.post_message(self.Toggled(item))

    def on_click(self, event: events.Click) -> None:
        if self._on_bar(event):
            return
        line = event.y + int(self.scroll_y)
        item = self.item_at(line)
        if item is None or not item.foldable:
            return
        index = item.id - 1
        if line - self._offsets[index] == self._header_row(index):
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
        top = self._offsets[self.cursor]
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
        if round(old_value) != round(new_value):
            self._schedule()  # items coming into view may need rendering


def _wrapped_lines(text: str, width: int) -> int:
    """How many lines text takes at a width, without rendering it."""
    width = max(1, width)
    total = 0
    for line in text.split("\n"):
        total += max(1, -(-len(line) // width))
    return total
