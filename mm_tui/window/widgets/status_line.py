"""StatusLine: what the agent is doing right now (`Thinking`, `Composing a tool call`,
`Fetching`, `Running`), with a spinner, above the prompt; a hint or nothing when idle.

It redraws only when its text changes and never asks for a layout (its height is fixed): an
update per streamed chunk that re-laid out the screen was the largest cost of streaming.

It paints its one line itself, from segments, and keeps each line it painted (a spinner has ten
frames): the spinner redraws ten times a second for the whole of a turn, and a Static (its
Content, wrapping and styling) made each redraw cost a share of a core taken from a model on the
same cores (a stand-in for it: docs/performance.md). A line longer than the widget is cut.
Its text goes through `safe_display` (a retry's reason is a server's words).

While the transcript draws frames (an answer streaming), the spinner rides them: the window's
frame clock (`window/frame_clock.py`) calls `ride` after each frame, and a spinner that moved is
painted in that frame's screen update instead of one of its own (each screen update costs about
a millisecond whatever it paints).
Its own clock (an event-loop handle, not a Textual timer, so that a skipped beat costs nothing)
only draws when no frame came for a tenth of a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from mm_tui.core.terminal_text import safe_display
from mm_tui.window.transcript.painted_rows import PaintedRows
from mm_tui.window.transcript.renderers.tool_line import spinner_frame

DIM = Style(dim=True)
SPIN = 0.1  # the spinner's beat, in seconds (it has ten frames a second: tool_line.py)
RIDE_GAP = 1.5 * SPIN  # how long after the transcript's last frame the spinner moves alone
KEPT = 64  # lines kept (a state's spinner frames, a few hints); all forgotten when full


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        color: $accent;
        padding: 0 2;
    }
    """

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._styles_cache = PaintedRows()  # a line drawn before is not styled again
        self.clock = clock
        self.state: str | None = None
        self.hint = ""
        self._shown: tuple[str | None, str, str] = (None, "", "")
        self._spin: asyncio.TimerHandle | None = None
        self._rode = -1.0  # the event loop's time of the last frame the spinner rode
        self._lines: dict[tuple[object, ...], Strip] = {}

    def show(self, state: str | None, hint: str | None = None) -> None:
        if state:
            state = safe_display(state)
        if hint is not None:
            self.hint = safe_display(hint)
        if state == self.state and hint is None:
            return
        self.state = state
        if state and self._spin is None:
            self._beat(SPIN)
        elif not state and self._spin is not None:
            self._spin.cancel()
            self._spin = None
        self._redraw()

    def _beat(self, delay: float) -> None:
        self._spin = asyncio.get_running_loop().call_later(delay, self._on_beat)

    def _on_beat(self) -> None:
        """The spinner's own clock: draws unless a frame carried the spinner lately (frames
        come at least ten times a second, give or take the loop's delays: a beat and a half
        without one, and the spinner moves by itself again)."""
        since = asyncio.get_running_loop().time() - self._rode
        if since >= RIDE_GAP:
            self._redraw()
            self._beat(SPIN)
        else:
            self._beat(RIDE_GAP - since)

    def ride(self) -> None:
        """A frame of the transcript is being drawn: the spinner moves with it."""
        if self._spin is not None and self.is_mounted:
            self._rode = asyncio.get_running_loop().time()
            self._redraw()

    def on_unmount(self) -> None:
        if self._spin is not None:
            self._spin.cancel()
            self._spin = None

    def _redraw(self) -> None:
        frame = spinner_frame(self.clock()) if self.state else ""
        key = (self.state, self.hint, frame)
        if key != self._shown:
            self._shown = key
            self.refresh()

    @property
    def text(self) -> str:
        """The line as it reads now (uncut)."""
        state, hint, frame = self._shown
        return f"{frame} {state}…   Esc cancels" if state else hint

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        base = self.rich_style
        key = (*self._shown, width, base)
        line = self._lines.get(key)
        if line is None:
            state, hint, frame = self._shown
            if state:
                segments = [
                    Segment(f"{frame} {state}…", base),
                    Segment("   Esc cancels", base + DIM),
                ]
            else:
                segments = [Segment(hint, base + DIM)] if hint else []
            line = Strip(segments).crop_extend(0, width, base)
            if len(self._lines) >= KEPT:
                self._lines.clear()
            self._lines[key] = line
        return line
