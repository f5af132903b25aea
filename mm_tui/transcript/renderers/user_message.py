"""UserMessage: what the person typed, as it opens a turn."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.transcript import NoticeItem, UserItem
from mm_tui.widgets.render import strips


class UserMessage:
    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def render(self, item: UserItem, width: int) -> list[Strip]:
        text = Text.assemble(
            ("› ", self.style("user--prompt")), (item.text, self.style("user--text"))
        )
        return strips(self.console, text, width)

    def notice(self, item: NoticeItem, width: int) -> list[Strip]:
        """An engine error or warning, in the transcript where it happened."""
        return strips(
            self.console, Text(item.text, style=self.style(f"notice--{item.level}")), width
        )
