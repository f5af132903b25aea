"""StatusLine: what the agent is doing right now (`Thinking`, `Composing a tool call`,
`Fetching`, `Running`), with a spinner, above the prompt; empty when idle."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widgets import Static

from mm_tui.widgets.tool_line import spinner_frame


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        color: $accent;
        padding: 0 2;
    }
    """

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, markup=False)
        self.clock = clock
        self.state: str | None = None
        self.hint = ""

    def on_mount(self) -> None:
        self.set_interval(0.1, self._redraw)

    def show(self, state: str | None, hint: str = "") -> None:
        self.state = state
        self.hint = hint
        self._redraw()

    def _redraw(self) -> None:
        if self.state:
            text = Text(f"{spinner_frame(self.clock())} {self.state}…")
            text.append("   Esc cancels", style="dim")
        else:
            text = Text(self.hint, style="dim")
        self.update(text)
