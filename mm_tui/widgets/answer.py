"""Answer: the model's answer as Markdown, streamed.

Why not Textual's MarkdownStream: it re-parses and re-lays out the whole document as it grows
and falls behind a fast server. Here the text is cut into blocks (blank lines outside code
fences). A finished block is rendered once per width and kept, and only the block still growing
is rendered again (the view asks at most once a frame). The text is split only from the end of
the last finished block, so a long answer costs what its last block costs.

A list is one block until a blank line ends it, and models write long ones: while a list grows,
its finished items are rendered once each and only the last item again (Rich draws a list item
by item, so the lines are the same, but for the width of the numbers, which the list takes from
its last number: it may differ while the list grows, and the finished list is drawn whole)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.transcript import AnswerItem
from mm_tui.widgets.render import strips

FENCES = ("```", "~~~")
LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)", re.MULTILINE)


def block_spans(text: str, start: int = 0) -> list[tuple[int, int]]:
    """(start, end) of each Markdown block of `text[start:]`: blocks are separated by blank
    lines, and a fenced code block is never cut."""
    spans: list[tuple[int, int]] = []
    block_start: int | None = None
    block_end = start
    fence: str | None = None
    position = start
    length = len(text)
    while position <= length:
        newline = text.find("\n", position)
        end = length if newline < 0 else newline
        stripped = text[position:end].strip()
        if fence is None and not stripped:
            if block_start is not None:
                spans.append((block_start, block_end))
                block_start = None
        else:
            if block_start is None:
                block_start = position
            block_end = end
            if fence is None:
                if stripped.startswith(FENCES):
                    fence = stripped[:3]
            elif stripped.startswith(fence):
                fence = None
        if newline < 0:
            break
        position = newline + 1
    if block_start is not None:
        spans.append((block_start, block_end))
    return spans


def item_starts(text: str, start: int, end: int) -> list[int] | None:
    """Where the top-level items of the list `text[start:end]` begin; None when the block is not
    one list (it does not begin with an item, or another marker starts a second list) or holds
    a code fence (kept whole, to be safe)."""
    first = LIST_ITEM.match(text, start)
    if not first:
        return None
    marker = _marker(first[0])
    starts = [start]
    position = start
    while True:
        newline = text.find("\n", position, end)
        if newline < 0:
            return starts
        position = newline + 1
        line_end = text.find("\n", position, end)
        line = text[position : end if line_end < 0 else line_end]
        if line.lstrip().startswith(FENCES):
            return None
        item = LIST_ITEM.match(line)
        if item:
            if _marker(item[0]) != marker:
                return None
            starts.append(position)


def _marker(item: str) -> str:
    """What must stay the same for items to be one list: the bullet, or the number's `.`/`)`."""
    item = item.rstrip()
    return item[0] if item[0] in "-*+" else item[-1]


@dataclass
class _Kept:
    width: int
    blocks: list[list[Strip]] = field(default_factory=list)  # finished blocks, rendered
    consumed: int = 0  # text covered by the finished blocks
    items_of: int = -1  # where the growing list begins, whose finished items are below
    items: list[Strip] = field(default_factory=list)  # its finished items, rendered
    items_end: int = 0  # text covered by them


class Answer:
    """Renders `AnswerItem`s, keeping the finished blocks of the answers still streaming."""

    def __init__(
        self, console: Console, style: Callable[[str], Style], code_theme: str = "monokai"
    ) -> None:
        self.console = console
        self.style = style
        self.code_theme = code_theme
        self._kept: dict[int, _Kept] = {}
        self._stable: dict[
            int, int
        ] = {}  # item id -> leading rows the last render left as they were

    def forget(self, item_id: int | None = None) -> None:
        if item_id is None:
            self._kept.clear()
            self._stable.clear()
        else:
            self._kept.pop(item_id, None)
            self._stable.pop(item_id, None)

    def _block(self, source: str, width: int) -> list[Strip]:
        # markdown-it and pygments: not on the first frame
        from mm_tui.widgets.markdown_render import BlockMarkdown

        markdown = BlockMarkdown(source, code_theme=self.code_theme)
        style = self.style("answer--text")
        return strips(self.console, markdown, width, style, self.style("base"))

    def render(self, item: AnswerItem, width: int) -> list[Strip]:
        text = item.text
        kept = self._kept.get(item.id)
        if kept is None or kept.width != width or kept.consumed > len(text):
            kept = _Kept(width)
        spans = block_spans(text, kept.consumed)
        finished = spans if item.done else spans[:-1]
        for start, end in finished:
            kept.blocks.append(self._block(text[start:end], width))
        if finished:
            kept.consumed = finished[-1][1]
        growing: list[list[Strip]] = []
        moving = 0  # rows of the growing block drawn again at each render
        if not item.done and spans:
            lines = self._growing(kept, text, *spans[-1], width)
            growing.append(lines)
            moving = len(lines) - (len(kept.items) if kept.items_of == spans[-1][0] else 0)
        out: list[Strip] = []
        base = self.style("base")
        if item.label:
            label = Text(item.label, style=self.style("answer--label"))
            out.extend(strips(self.console, label, width, base=base))
        blank = Strip.blank(width, base)
        for index, lines in enumerate([*kept.blocks, *growing]):
            if index:
                out.append(blank)
            out.extend(lines)
        if item.done:
            self._kept.pop(item.id, None)  # the view keeps the whole item from now on
            self._stable.pop(item.id, None)
        else:
            self._kept[item.id] = kept
            self._stable[item.id] = max(0, len(out) - moving - 1)
        return out

    def _growing(self, kept: _Kept, text: str, start: int, end: int, width: int) -> list[Strip]:
        """The lines of the block still growing: a list's finished items from the cache."""
        starts = item_starts(text, start, end)
        if starts is None or len(starts) < 2:
            return self._block(text[start:end], width)
        if kept.items_of != start:
            kept.items_of, kept.items, kept.items_end = start, [], start
        for first, after in zip(starts, starts[1:], strict=False):
            if first >= kept.items_end:
                kept.items.extend(self._item(text[first:after].rstrip("\n"), width, first == start))
                kept.items_end = after
        return [*kept.items, *self._item(text[starts[-1] : end], width, False)]

    def _item(self, source: str, width: int, first: bool) -> list[Strip]:
        """One list item drawn alone; Rich opens a list with a blank line, which only the
        list's first item keeps."""
        lines = self._block(source, width)
        if first or not lines or lines[0].text.strip():
            return lines
        return lines[1:]

    def stable_rows(self, item_id: int) -> int:
        """How many leading rows of a streaming answer the last render drew as before (the label
        and the finished blocks), so the view repaints only the growing block."""
        return self._stable.get(item_id, 0)
