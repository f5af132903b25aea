"""Recap: the line that closes a turn, with the counters that are not zero, time and tokens."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.core.terminal_text import safe_display
from mm_tui.window.transcript.renderers.strips import text_strip
from mm_tui.window.transcript.store import RecapItem


class Recap:
    margin_before = True
    draws_base = False

    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def render(self, item: RecapItem, width: int) -> list[Strip]:
        text = Text.assemble(
            ("── ", self.style("recap--rule")),
            (safe_display(item.text), self.style("recap--text")),
            " ",
        )
        rule = max(0, width - text.cell_len)
        text.append("─" * rule, style=self.style("recap--rule"))
        return [text_strip(text, width, self.console)]

    def estimate(self, item: RecapItem, width: int) -> int:
        return 1
