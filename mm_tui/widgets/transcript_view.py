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
from bisect import bisect_right
from collections.abc import Callable, Iterable

from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
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
from mm_tui.widgets.answer import Answer
from mm_tui.widgets.recap import Recap
from mm_tui.widgets.thought import Thought
from mm_tui.widgets.tool_line import ToolLine
from mm_tui.widgets.user_message import UserMessage

FRAME = 1 / 60  # updates are coalesced to the frame rate
SPIN = 0.1  # running tool lines redraw their spinner and time ten times a second
MARGIN_BEFORE = (UserItem, AnswerItem, AgentHeaderItem, NoticeItem, RecapItem)


class TranscriptView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "tool--bullet",
        "tool--title",
        "tool--ok",
        "tool--error",
        "tool--rejected",
        "tool--cancelled",
        "tool--running",
        "tool--waiting",
        "tool--time",
        "tool--output",
        "tool--output-error",
        "tool--selected",
        "diff--added",
        "diff--removed",
        "diff--hunk",
        "diff--header",
        "user--prompt",
        "user--text",
        "answer--text",
        "answer--label",
        "thought--text",
        "recap--rule",
        "recap--text",
        "notice--error",
        "notice--warning",
        "notice--info",
        "child--header",
    }
    DEFAULT_CSS = """
    TranscriptView {
        height: 1fr;
        scrollbar-gutter: stable;
        background: $background;
        padding: 0 1;
    }
    TranscriptView > .tool--bullet { color: $accent; }
    TranscriptView > .tool--title { color: $text; }
    TranscriptView > .tool--ok { color: $success; }
    TranscriptView > .tool--error { color: $error; }
    TranscriptView > .tool--rejected { color: $warning; }
    TranscriptView > .tool--cancelled { color: $warning; }
    TranscriptView > .tool--running { color: $accent; }
    TranscriptView > .tool--waiting { color: $warning; text-style: bold; }
    TranscriptView > .tool--time { color: $text-muted; }
    TranscriptView > .tool--output { color: $text-muted; }
    TranscriptView > .tool--output-error { color: $error; }
    TranscriptView > .tool--selected { text-style: reverse; }
    TranscriptView > .diff--added { color: $success; }
    TranscriptView > .diff--removed { color: $error; }
    TranscriptView > .diff--hunk { color: $accent; }
    TranscriptView > .diff--header { color: $text-muted; text-style: bold; }
    TranscriptView > .user--prompt { color: $accent; text-style: bold; }
    TranscriptView > .user--text { color: $text; text-style: bold; }
    TranscriptView > .answer--text { color: $text; }
    TranscriptView > .answer--label { color: $secondary; text-style: bold; }
    TranscriptView > .thought--text { color: $text-muted; text-style: italic; }
    TranscriptView > .recap--rule { color: $panel-lighten-2; }
    TranscriptView > .recap--text { color: $text-muted; }
    TranscriptView > .notice--error { color: $error; text-style: bold; }
    TranscriptView > .notice--warning { color: $warning; }
    TranscriptView > .notice--info { color: $text-muted; }
    TranscriptView > .child--header { color: $secondary; text-style: bold; }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", "Previous", show=False),
        Binding("down", "cursor(1)", "Next", show=False),
        Binding("enter", "toggle", "Fold/unfold", show=False),
        Binding("space", "toggle", "Fold/unfold", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "End", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown", "page_down", show=False),
    ]

    class Toggled(Message):
        def __init__(self, item: Item) -> None:
            super().__init__()
            self.item = item

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
        self._lines: list[list[Strip] | None] = []  # per item index, for self._width
        self._versions: list[int] = []
        self._heights: list[int] = []
        self._offsets: list[int] = []
        self._dirty: set[int] = set()
        self._flush_scheduled = False
        self._follow = True
        self.cursor: int | None = None  # index of the selected foldable item
        self._styles: dict[str, Style] = {}
        self._renderers_ready = False

    # -- renderers ------------------------------------------------------------------------

    def style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(name)
        return style

    def _make_renderers(self) -> None:
        console = self.app.console
        self.tool_line = ToolLine(console, self.style)
        self.answer = Answer(console, self.style)
        self.thought = Thought(console, self.style)
        self.recap = Recap(console, self.style)
        self.user = UserMessage(console, self.style)
        self.child = ChildHeader(console, self.style)
        self._renderers_ready = True

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._invalidate_all()

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
        self._lines, self._versions, self._heights, self._offsets = [], [], [], []
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
        return max(10, self.scrollable_content_region.width)

    def flush(self) -> None:
        """Render what changed, fix the offsets from the first change on, keep the bottom in
        view when the person had not scrolled away from it."""
        self._flush_scheduled = False
        if not self.is_mounted or not self._renderers_ready:
            return
        items = self.transcript.items
        width = self._content_width()
        follow = self._follow or self.scroll_y >= self.max_scroll_y - 1
        if width != self._width:
            self._width = width
            self._lines = [None] * len(items)
            self._versions = [-1] * len(items)
            self._heights = [self._render(i) for i in range(len(items))]
            start = 0
            self._dirty.clear()
            self.answer.forget()
        else:
            grow = len(items) - len(self._heights)
            if grow > 0:
                self._lines.extend([None] * grow)
                self._versions.extend([-1] * grow)
                self._heights.extend([0] * grow)
                self._dirty.update(range(len(items) - grow, len(items)))
            if not self._dirty:
                return
            start = min(self._dirty)
            for index in self._dirty:
                if 0 <= index < len(items):
                    self._heights[index] = self._render(index)
            self._dirty.clear()
        initial = self._offsets[start - 1] + self._heights[start - 1] if start > 0 else 0
        self._offsets[start:] = list(itertools.accumulate(self._heights[start:], initial=initial))[
            :-1
        ]
        total = (self._offsets[-1] + self._heights[-1]) if self._heights else 0
        self.virtual_size = Size(width, total)
        self.refresh()
        if follow:  # once the new size is laid out, the bottom stays in view
            self._follow = True
            self.call_after_refresh(self._stick_to_bottom)

    def _stick_to_bottom(self) -> None:
        if self._follow:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def _render(self, index: int) -> int:
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
        if isinstance(item, MARGIN_BEFORE) and index > 0:
            lines = [Strip.blank(width), *lines]
        self._lines[index] = lines
        self._versions[index] = item.version
        return len(lines)

    def _tick(self) -> None:
        """Redraw the header lines of running tool calls that are on screen."""
        if not self._offsets:
            return
        top = int(self.scroll_y)
        bottom = top + self.scrollable_content_region.height
        first = max(0, bisect_right(self._offsets, top) - 1)
        last = bisect_right(self._offsets, bottom)
        for index in range(first, min(last, len(self._offsets))):
            item = self.transcript.items[index]
            if isinstance(item, ToolItem) and item.running:
                self.refresh_lines(self._offsets[index] - top + self._header_row(index), 1)

    def _header_row(self, index: int) -> int:
        item = self.transcript.items[index]
        return 1 if isinstance(item, MARGIN_BEFORE) and index > 0 else 0

    # -- painting -------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        line_y = y + scroll_y
        index = bisect_right(self._offsets, line_y) - 1
        if index < 0 or index >= len(self._offsets) or self._lines[index] is None:
            return Strip.blank(width, base)
        row = line_y - self._offsets[index]
        lines = self._lines[index]
        if row >= len(lines):
            return Strip.blank(width, base)
        item = self.transcript.items[index]
        if isinstance(item, ToolItem) and row == self._header_row(index):
            strip = self.tool_line.header(
                item, self._width, self.clock(), selected=index == self.cursor
            )
        elif (
            isinstance(item, ThoughtItem)
            and row == self._header_row(index)
            and index == self.cursor
        ):
            strip = lines[row].apply_style(self.style("tool--selected"))
        else:
            strip = lines[row]
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_style(base)

    # -- folding --------------------------------------------------------------------------

    def item_at(self, y: int) -> Item | None:
        """The item drawn at a line of the content (0 is the first line of the transcript)."""
        index = bisect_right(self._offsets, y) - 1
        if 0 <= index < len(self._offsets):
            return self.transcript.items[index]
        return None

    def toggle(self, item: Item) -> None:
        if self.transcript.toggle(item):
            self._follow = False
            self.update_items([item])
            self.post_message(self.Toggled(item))

    def on_click(self, event: events.Click) -> None:
        line = event.y + int(self.scroll_y)
        item = self.item_at(line)
        if item is None or not item.foldable:
            return
        index = item.id - 1
        if line - self._offsets[index] == self._header_row(index):
            self.cursor = index
            self.toggle(item)

    def action_toggle(self) -> None:
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
            position = (
                bisect_right(foldable, self.cursor) - 1
                if step < 0
                else bisect_right(foldable, self.cursor)
            )
            if step < 0:
                position = bisect_right(foldable, self.cursor - 1) - 1
            position = max(0, min(len(foldable) - 1, position))
            self.cursor = foldable[position]
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
