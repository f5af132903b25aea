"""UserMessage: what the person typed, as it opens a turn. Through `safe_display` too: a paste
can hold escape sequences."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.core.terminal_text import safe_display
from mm_tui.window.transcript.renderers.strips import strips, wrapped_lines
from mm_tui.window.transcript.store import UserItem


class UserMessage:
    margin_before = True
    draws_base = False

    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def render(self, item: UserItem, width: int) -> list[Strip]:
        text = Text.assemble(
            ("› ", self.style("user--prompt")),
            (safe_display(item.text), self.style("user--text")),
        )
        return strips(self.console, text, width)

    def estimate(self, item: UserItem, width: int) -> int:
        return wrapped_lines(item.text, width - 2)
