"""NoticeLine: an engine error, warning or note, in the transcript where it happened."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.core.terminal_text import safe_display
from mm_tui.window.transcript.renderers.strips import strips, wrapped_lines
from mm_tui.window.transcript.store import NoticeItem


class NoticeLine:
    margin_before = True
    draws_base = False

    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def render(self, item: NoticeItem, width: int) -> list[Strip]:
        text = Text(safe_display(item.text), style=self.style(f"notice--{item.level}"))
        return strips(self.console, text, width)

    def estimate(self, item: NoticeItem, width: int) -> int:
        return wrapped_lines(item.text, width)
