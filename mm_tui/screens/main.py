"""MainScreen: header, transcript, the permission box when one is pending, status, prompt,
the key bar."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual import events
from textual.app import ComposeResult
from textual.screen import UPDATE_PERIOD, Screen

from mm_tui.screens.cropped_compositor import CroppedCompositor
from mm_tui.transcript.store import Transcript
from mm_tui.transcript.view import TranscriptView
from mm_tui.widgets.agent_header import AgentHeader
from mm_tui.widgets.key_bar import KeyBar
from mm_tui.widgets.permission import PermissionBox
from mm_tui.widgets.prompt import Prompt
from mm_tui.widgets.status_line import StatusLine


class MainScreen(Screen[None]):
    AUTO_FOCUS = "#prompt"  # not the transcript: each restyle of it costs a frame's worth
    DEFAULT_CSS = """
    MainScreen { layout: vertical; overflow: hidden; }
    """

    def __init__(self, transcript: Transcript, clock: Callable[[], float]) -> None:
        super().__init__()
        self._compositor = CroppedCompositor()  # a partial update asks only what it touches
        self.transcript = transcript
        self.clock = clock
        self._updated = 0.0  # when `_on_idle` last updated the screen itself

    async def _on_idle(self, event: events.Idle) -> None:
        """Paint what changed now, in this wake-up of the event loop, rather than at the next
        tick of Textual's 60-per-second update timer.

        Why: each wake-up of the event loop costs kernel and loop time, and through the timer
        every frame cost one more: the timer's sleep until its next tick, after the tick that
        painted (what that came to: docs/performance.md). The timer is still how Textual caps
        the rate: an update within UPDATE_PERIOD of the last one made here goes to it, as in
        Textual. This overrides Textual's own `Screen._on_idle`, whose work it calls
        (`_on_timer_update`); Textual is pinned to < 8.3."""
        dirty = (
            self._layout_required
            or self._scroll_required
            or self._repaint_required
            or self._recompose_required
            or self._dirty_widgets
        )
        now = time.monotonic()
        if (
            dirty
            and now - self._updated >= UPDATE_PERIOD
            and not self.app._batch_count  # pyright: ignore[reportPrivateUsage]
            and self.is_current
        ):
            event.prevent_default()
            self._updated = now
            self._on_timer_update()
            return
        await super()._on_idle(event)

    def compose(self) -> ComposeResult:
        yield AgentHeader(id="header")
        yield TranscriptView(self.transcript, clock=self.clock, id="transcript")
        yield PermissionBox(id="permission")
        yield StatusLine(self.clock, id="status")
        yield Prompt(id="prompt")
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        # the status line's spinner moves in the transcript's frames while there are any
        self.query_one(TranscriptView).after_frame = self.query_one(StatusLine).ride
