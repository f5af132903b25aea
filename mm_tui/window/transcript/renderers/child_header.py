"""ChildHeader: an asked agent's header inside the transcript, `name · model @ provider ·
asked by <parent>`, above what that agent does."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.core.terminal_text import safe_display
from mm_tui.core.text import agent_header
from mm_tui.window.transcript.renderers.strips import strips
from mm_tui.window.transcript.store import AgentHeaderItem


class ChildHeader:
    margin_before = True
    draws_base = False

    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def render(self, item: AgentHeaderItem, width: int) -> list[Strip]:
        name, rest = agent_header(item.title, item.model, item.provider, item.asked_by)
        text = Text.assemble((safe_display(name), "bold"), safe_display(rest))
        text.stylize(self.style("child--header"))
        return strips(self.console, text, width)

    def estimate(self, item: AgentHeaderItem, width: int) -> int:
        return 1
