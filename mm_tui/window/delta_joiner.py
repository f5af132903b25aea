"""A run of streamed text crossing to the window as one message.

The engine's text and thought deltas of one agent that arrive within a frame are joined, in
order, and posted once: a fast server sends hundreds a second, and each message costs the window
about what a small render does. Any other event sends the run first (`flush`), so the order is
kept and nothing is lost. A run waits until a frame may be drawn (the frame clock's `due_in`): at
once when a frame is due, as it is when the engine's paced reads (`engine/paced_reads.py`) come
no oftener than frames, so the run is drawn in the same wake-up of the event loop that read it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from mm_tui.window.frame_clock import FrameClock

if TYPE_CHECKING:  # the engine's events load after the first frame
    from mm_tui.core.events import TextDelta, ThoughtDelta


class DeltaJoiner:
    def __init__(self, post: Callable[[TextDelta | ThoughtDelta], object], frames: FrameClock):
        self._post = post
        self._frames = frames
        self._run: list[TextDelta | ThoughtDelta] = []  # a run of deltas not yet posted
        self._timer: asyncio.TimerHandle | None = None  # an event loop handle, not a task

    def add(self, delta: TextDelta | ThoughtDelta) -> None:
        run = self._run
        if run and (type(run[0]) is not type(delta) or run[0].agent != delta.agent):
            self.flush()
        self._run.append(delta)
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._frames.due_in(), self.flush)

    def flush(self) -> None:
        """Post the run now (before any other event, and when its frame comes)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        run, self._run = self._run, []
        if run:
            self._post(
                run[0] if len(run) == 1 else replace(run[0], text="".join(d.text for d in run))
            )

    @property
    def pending(self) -> bool:
        """Whether deltas wait to cross (at most a frame)."""
        return bool(self._run)
