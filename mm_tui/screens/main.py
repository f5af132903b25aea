"""MainScreen: header, transcript, the permission box when one is pending, status, prompt,
the key bar."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.screen import Screen

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
    MainScreen { layout: vertical; }
    """

    def __init__(self, transcript: Transcript, clock: Callable[[], float]) -> None:
        super().__init__()
        self._compositor = CroppedCompositor()  # a partial update asks only what it touches
        self.transcript = transcript
        self.clock = clock

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
