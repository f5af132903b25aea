"""Answer: the model's answer as Markdown, streamed.

Why not Textual's MarkdownStream: it re-parses and re-lays out the whole document as it grows
and falls behind a fast server. Here the text is cut into blocks (blank lines outside code
fences). A finished block is rendered once per width and kept, and only the block still growing
is rendered again (the view asks at most once a frame). The text is split only from the end of
the last finished block, so a long answer costs what its last block costs.

A list is one block until a blank line ends it, and models write long ones: while a list grows,
its finished items are rendered once each and only the last item again (Rich draws a list item
by item, so the lines are the same). An item of an ordered list drawn alone is told its number
and the list's last number, which sizes the numbers' column: else each item would start at its
own marker (a list written `1.` `1.` `1.` would show 1 1 1) and the column would be as wide as
one item needs, not the list (from the ninth item on, the earlier ones sat a column to the
left). When the list's length changes that width, its finished items are drawn again, once.

Each block goes through `safe_display` before Markdown reads it: an escape sequence in the
answer shows as `\\x1b[…` (Markdown leaves `\\x` as it is), it never reaches the terminal.

Code blocks follow the theme: Monokai's dark panel on a dark theme, a light style on a light
one (the view sets `code_theme` and draws the answers again when the theme changes)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import field

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.core.frozen import mutable
from mm_tui.core.preload import preload
from mm_tui.core.terminal_text import safe_display
from mm_tui.window.transcript.renderers.strips import blank, strips, wrapped_lines
from mm_tui.window.transcript.store import AnswerItem

FENCES = ("```", "~~~")
LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)", re.MULTILINE)
DARK_CODE_THEME = "monokai"
LIGHT_CODE_THEME = "friendly"  # a light grey panel, set apart from a light background
CODE_PIECE = 12  # lines of a growing code block drawn together and kept


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


def code_pieces(text: str, start: int, end: int, size: int = CODE_PIECE) -> list[int] | None:
    """Where the pieces of the open fenced code block `text[start:end]` begin: the first after
    the fence line, each finished piece at least `size` lines long and ending on a line that is
    not blank (a code block drops its trailing blank lines, which would lose them between
    pieces). None when the block is not one open fence."""
    first_end = text.find("\n", start, end)
    if first_end < 0 or not text[start:first_end].lstrip().startswith(FENCES):
        return None
    fence = text[start:first_end].lstrip()[:3]
    starts = [first_end + 1]
    lines = 0
    position = first_end + 1
    while True:
        newline = text.find("\n", position, end)
        line = text[position : end if newline < 0 else newline]
        if line.strip().startswith(fence):
            return None  # closed: the block is drawn whole
        if newline < 0:
            return starts
        lines += 1
        position = newline + 1
        if lines >= size and line.strip() and position < end:
            starts.append(position)
            lines = 0


def _first_number(text: str, start: int) -> int | None:
    """The number of the ordered list starting at `start` (where Rich's numbering starts); None
    for a bulleted list."""
    marker = LIST_ITEM.match(text, start)
    digits = marker[0].rstrip()[:-1] if marker else ""
    return int(digits) if digits.isdigit() else None


def _marker(item: str) -> str:
    """What must stay the same for items to be one list: the bullet, or the number's `.`/`)`."""
    item = item.rstrip()
    return item[0] if item[0] in "-*+" else item[-1]


@mutable
class _Kept:
    width: int
    blocks: list[list[Strip]] = field(default_factory=list)  # finished blocks, rendered
    consumed: int = 0  # text covered by the finished blocks
    items_of: int = -1  # where the growing list begins, whose finished items are below
    items_digits: int = 0  # the width of the numbers its finished items were drawn for
    items: list[Strip] = field(default_factory=list)  # its finished items, rendered
    items_end: int = 0  # text covered by them
    code_of: int = -1  # where the growing code block begins, whose finished pieces are below
    code: list[Strip] = field(default_factory=list)  # its finished pieces, drawn
    code_end: int = 0  # text covered by them
    code_pad: Strip | None = None  # the padding row under a code block


def prepare() -> None:
    """Load what drawing Markdown needs (markdown-it, Rich's Markdown) in a thread: the window
    calls it once ready, so that the first answer's first frame does not wait for the imports
    (docs/performance.md), nor its first code block for its lexer (`warm_lexers`)."""
    preload("mm-markdown", "mm_tui.terminal.block_markdown", then=_warm_lexers)


def _warm_lexers() -> None:
    from mm_tui.terminal.block_markdown import warm_lexers

    warm_lexers()


class Answer:
    """Renders `AnswerItem`s, keeping the finished blocks of the answers still streaming."""

    margin_before = True
    draws_base = True  # its blocks are drawn over the view's base in Rich's one pass

    def __init__(
        self,
        console: Console,
        style: Callable[[str], Style],
        code_theme: str = DARK_CODE_THEME,
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

    def _block(
        self, source: str, width: int, numbers: tuple[int, int] | None = None
    ) -> list[Strip]:
        # markdown-it and pygments: not on the first frame
        from mm_tui.terminal.block_markdown import BlockMarkdown

        markdown = BlockMarkdown(safe_display(source), code_theme=self.code_theme, numbers=numbers)
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
            lines, unchanged = self._growing(kept, text, *spans[-1], width)
            growing.append(lines)
            moving = len(lines) - unchanged
        out: list[Strip] = []
        base = self.style("base")
        if item.label:
            label = Text(safe_display(item.label), style=self.style("answer--label"))
            out.extend(strips(self.console, label, width, base=base))
        between = blank(width, base)
        for index, lines in enumerate([*kept.blocks, *growing]):
            if index:
                out.append(between)
            out.extend(lines)
        if item.done:
            self._kept.pop(item.id, None)  # the view keeps the whole item from now on
            self._stable.pop(item.id, None)
        else:
            self._kept[item.id] = kept
            self._stable[item.id] = max(0, len(out) - moving - 1)
        return out

    def _growing(
        self, kept: _Kept, text: str, start: int, end: int, width: int
    ) -> tuple[list[Strip], int]:
        """The lines of the block still growing, a list's finished items or an open code
        block's finished pieces from the cache; and how many leading lines are drawn as the
        last render drew them (the cached ones, when the last render used the same cache)."""
        pieces = code_pieces(text, start, end)
        if pieces is not None and len(pieces) >= 2:
            kept.items_of = -1
            unchanged = len(kept.code) if kept.code_of == start else 0
            return self._growing_code(kept, text, start, end, pieces, width), unchanged
        kept.code_of = -1
        starts = item_starts(text, start, end)
        if starts is None or len(starts) < 2:
            kept.items_of = -1
            return self._block(text[start:end], width), 0
        number = _first_number(text, start)  # None: a bulleted list
        last = (number or 0) + len(starts)  # Rich sizes the numbers on one past the last item's
        digits = len(str(last)) if number is not None else 0

        def numbers(index: int) -> tuple[int, int] | None:
            return None if number is None else (number + index, last)

        same = kept.items_of == start and kept.items_digits == digits
        unchanged = len(kept.items) if same else 0
        if not same:
            kept.items_of, kept.items, kept.items_end = start, [], start
            kept.items_digits = digits
        for index, (first, after) in enumerate(zip(starts, starts[1:], strict=False)):
            if first >= kept.items_end:
                source = text[first:after].rstrip("\n")
                kept.items.extend(self._item(source, width, first == start, numbers(index)))
                kept.items_end = after
        tail = self._item(text[starts[-1] : end], width, False, numbers(len(starts) - 1))
        return [*kept.items, *tail], unchanged

    def _growing_code(
        self, kept: _Kept, text: str, start: int, end: int, pieces: list[int], width: int
    ) -> list[Strip]:
        """An open code block drawn piece by piece: each finished piece once, the last piece
        at every frame, so a long block costs what its last lines cost. Each piece is drawn as
        a code block of its own (under the same fence) and the padding rows between pieces are
        dropped; the lines are the same as the whole block's, but for a construct that spans
        two pieces (a long string), which the finished block, drawn whole, shows right."""
        fence = text[start : pieces[0]]
        if kept.code_of != start:
            kept.code_of, kept.code, kept.code_end = start, [], pieces[0]
        for first, after in zip(pieces, pieces[1:], strict=False):
            if first >= kept.code_end:
                lines = self._block(fence + text[first:after], width)
                kept.code.extend(lines[1:-1] if kept.code else lines[:-1])
                kept.code_pad = lines[-1]
                kept.code_end = after
        tail = text[pieces[-1] : end]
        if not tail.strip() and kept.code_pad is not None:  # a code block ends on no blank line
            return [*kept.code, kept.code_pad]
        return [*kept.code, *self._block(fence + tail, width)[1:]]

    def _item(
        self, source: str, width: int, first: bool, numbers: tuple[int, int] | None
    ) -> list[Strip]:
        """One list item drawn alone, numbered as in its list when it is ordered; Rich opens a
        list with a blank line, which only the list's first item keeps."""
        lines = self._block(source, width, numbers)
        if first or not lines or lines[0].text.strip():
            return lines
        return lines[1:]

    def estimate(self, item: AnswerItem, width: int) -> int:
        return (1 if item.label else 0) + wrapped_lines(item.text, width)

    def stable_rows(self, item_id: int) -> int:
        """How many leading rows of a streaming answer the last render drew as before (the label
        and the finished blocks), so the view repaints only the growing block."""
        return self._stable.get(item_id, 0)
