"""Answer: the model's answer as Markdown, streamed.

Why not Textual's MarkdownStream: it re-parses and re-lays out the whole document as it grows
and falls behind a fast server. Here the text is cut into blocks (blank lines outside code
fences); a finished block is rendered once per width and kept, and only the block still growing
is rendered again, at most once per frame (the view coalesces updates)."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markdown import Markdown
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.transcript import AnswerItem
from mm_tui.widgets.render import strips

FENCES = ("```", "~~~")


def split_blocks(text: str) -> list[str]:
    """Markdown blocks separated by blank lines, never cutting a fenced code block."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence is None:
            if stripped.startswith(FENCES):
                fence = stripped[:3]
            elif not stripped:
                if current:
                    blocks.append("\n".join(current))
                    current = []
                continue
        elif stripped.startswith(fence):
            fence = None
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


class Answer:
    """Renders `AnswerItem`s, keeping the strips of finished blocks per (item, width)."""

    def __init__(
        self, console: Console, style: Callable[[str], Style], code_theme: str = "monokai"
    ) -> None:
        self.console = console
        self.style = style
        self.code_theme = code_theme
        # item id -> (width, [(block source, strips)]) for the finished blocks
        self._done: dict[int, tuple[int, list[tuple[str, list[Strip]]]]] = {}

    def forget(self, item_id: int | None = None) -> None:
        if item_id is None:
            self._done.clear()
        else:
            self._done.pop(item_id, None)

    def _block(self, source: str, width: int) -> list[Strip]:
        markdown = Markdown(source, code_theme=self.code_theme, hyperlinks=False)
        return strips(self.console, markdown, width, self.style("answer--text"))

    def render(self, item: AnswerItem, width: int) -> list[Strip]:
        blocks = split_blocks(item.text)
        finished = len(blocks) if item.done else max(0, len(blocks) - 1)
        cached_width, cached = self._done.get(item.id, (width, []))
        if cached_width != width:
            cached = []
        out: list[Strip] = []
        if item.label:
            label = Text(item.label, style=self.style("answer--label"))
            out.extend(strips(self.console, label, width))
        kept: list[tuple[str, list[Strip]]] = []
        for index, source in enumerate(blocks):
            if index < finished:
                if index < len(cached) and cached[index][0] == source:
                    lines = cached[index][1]
                else:
                    lines = self._block(source, width)
                kept.append((source, lines))
            else:
                lines = self._block(source, width)
            if index:
                out.append(Strip.blank(width))
            out.extend(lines)
        self._done[item.id] = (width, kept)
        if item.done:
            self._done.pop(item.id, None)  # the view caches the whole item from now on
        return out
