"""StatusLine: what the agent is doing right now (`Thinking`, `Composing a tool call`,
`Fetching`, `Running`), with a spinner, above the prompt; a hint or nothing when idle.

It redraws only when its text changes and never asks for a layout (its height is fixed): an
update per streamed chunk that re-laid out the screen was the largest cost of streaming."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from mm_tui.transcript.renderers.tool_line import spinner_frame


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
        self._shown: tuple[str | None, str, str] | None = None
        self._spin: Timer | None = None

    def show(self, state: str | None, hint: str | None = None) -> None:
        if hint is not None:
            self.hint = hint
        if state == self.state and hint is None:
            return
        self.state = state
        if state and self._spin is None:
            self._spin = self.set_interval(0.1, self._redraw)
        elif not state and self._spin is not None:
            self._spin.stop()
            self._spin = None
        self._redraw()

    def _redraw(self) -> None:
        frame = spinner_frame(self.clock()) if self.state else ""
        key = (self.state, self.hint, frame)
        if key == self._shown:
            return
        self._shown = key
        if self.state:
            text = Text(f"{frame} {self.state}…")
            text.append("   Esc cancels", style="dim")
        else:
            text = Text(self.hint, style="dim")
        self.update(text, layout=False)
