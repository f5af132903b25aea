"""The window's frames: when the next may be drawn, and what moves with each. One clock, shared by
all that draws or waits on a frame: the transcript view draws its frames by it, the status
line's spinner rides them (`ride`), and the delta joiner sends a run of streamed text across
when a frame may be drawn (`due_in`). Before, each asked the other's timer.

The frame rate adapts to what a frame costs. A frame (the view's flush, then the compositor
painting its lines) may take at most 1/FRAME_COST_FACTOR of the time between two frames, so that
drawing a streaming answer costs a few percent of a core however long the answer grows or however
slow the machine: interval = clamp(FRAME_COST_FACTOR x cost, MIN_FRAME, MAX_FRAME), where cost is
the last frames' cost, taken at once when it grows and followed back by a quarter of the gap at
each frame when it falls (one expensive frame slows the rate at once, a run of cheap ones brings
it back). A change after a quiet spell is drawn at once; the next waits out the interval since
the last frame. The cost is the CPU time of the app's thread (`time.thread_time`), not the wall
time: on a loaded machine a frame that waits for a core costs no more, and slowing the frames
down would not give the core back.

Times are the event loop's (`loop.time()`): the frames are event-loop handles, not Textual timers
(a Timer is a task, a message and a signature inspection per frame)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

MIN_FRAME = 1 / 60
# Three quarters of the engine's READ_GAP (engine/paced_reads.py, not imported: it would bring
# httpcore before the first frame): the slowest frames keep in step with the reads of a streamed
# answer, and a frame drawn between two reads (the turn's start, a tool line) delays one read's
# text at most. At READ_GAP itself the frames gained on the reads only by a sleep's overshoot
# (5 to 8 ms a read), and each of up to eight reads after such a frame waited most of a frame.
MAX_FRAME = 0.06
FRAME_COST_FACTOR = 45
COST_FALL = 0.25
# A frame due within this share of the frame interval is drawn now: waking the event loop
# again costs more than a frame drawn a little early. It also puts the frames in step with the
# engine's paced reads (engine/paced_reads.py), which come about a frame apart: a read's text is
# drawn in the wake-up that read it, not in a wake-up of the frame's own a few ms later.
FRAME_SLACK = 0.25
FIRST_FRAME = 1 / 60  # what a run of deltas waits before the view is mounted (then: its frames)


class FrameClock:
    """When the next frame may be drawn (`due_in`), what frames cost (`measured`), and who moves
    with each frame (`ride`)."""

    def __init__(self) -> None:
        self._last = -1.0  # the event loop's time of the last frame
        self._cost = 0.0  # the last frames' cost, in seconds (see FRAME_COST_FACTOR)
        self._riders: list[Callable[[], None]] = []
        self.running = False  # whether the view draws by this clock (mounted)

    @property
    def interval(self) -> float:
        """The least time between two frames, from what frames cost (see FRAME_COST_FACTOR)."""
        return min(MAX_FRAME, max(MIN_FRAME, FRAME_COST_FACTOR * self._cost))

    def due_in(self) -> float:
        """How long until a frame may be drawn: 0 when that is within FRAME_SLACK of the
        interval; FIRST_FRAME while nothing draws by the clock yet."""
        if not self.running:
            return FIRST_FRAME
        interval = self.interval
        wait = self._last + interval - asyncio.get_running_loop().time()
        return wait if wait > interval * FRAME_SLACK else 0.0

    def frame_begins(self) -> None:
        """A frame is drawn now. A frame drawn early (within FRAME_SLACK) counts from when it
        was due, so the frames keep their rate even when something asks for one all the time."""
        interval = self.interval
        now, due = asyncio.get_running_loop().time(), self._last + interval
        self._last = due if now < due <= now + interval * FRAME_SLACK else now

    def measured(self, cost: float) -> None:
        """A frame's cost: taken at once when it grows, followed back slowly when it falls."""
        if cost >= self._cost:
            self._cost = cost
        else:
            self._cost += (cost - self._cost) * COST_FALL

    def ride(self, rider: Callable[[], None]) -> None:
        """Call `rider` after each frame: what else on screen moves with it (the status line's
        spinner), painted in the same screen update."""
        self._riders.append(rider)

    def frame_ended(self) -> None:
        for rider in self._riders:
            rider()
