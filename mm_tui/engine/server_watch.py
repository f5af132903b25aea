"""Whether the model server answers, as the engine last saw it (start-up checks it for a
configured server; a front end hears of each change as a `ServerState`), and whether it may
still be writing an answer mm cancelled (a non-streamed one always is: llama-cpp-python
finishes it, unread, and the next request waits behind it)."""

from __future__ import annotations

from mm_tui.core.events import ServerState
from mm_tui.engine.turn_state import Emit


class ServerWatch:
    def __init__(self) -> None:
        self.answering: bool | None = None  # None until known
        self.busy = False  # a request was cancelled before its answer ended

    def say(self, answering: bool, message: str, emit: Emit) -> None:
        self.answering = answering
        emit(ServerState(answering=answering, message=message))
