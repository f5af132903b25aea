"""Whether the model server answers, as the engine last saw it (start-up checks it for a
configured server; a front end hears of each change as a `ServerState`), and whether it may
still be writing an answer mm cancelled.

mm closes the connection the moment a request is cancelled, but a server need not notice:
llama-cpp-python stops a streamed answer at its next token, yet runs a non-streamed one (which
mm sends it once it lost a streamed tool call) to its end, unread, and answers nothing else
meanwhile (docs/cancelling.md has the figures). mm cannot ask it; it sees only that the
request after a cancelled one gets no first word. So that request counts as waiting behind the
old answer when its first word is later than `slow_after` says: three times what the cancelled
request took for its own (the prompt evaluated again, then some), and at least SLOW_FLOOR (a
server that stopped answers in less; one that went on makes mm wait for seconds). Then the
front ends say `ServerFinishing` instead of a bare spinner, and the watchdog waits for the old
answer's end, up to FINISH_WATCHDOGS watchdog times after the cancel, then its own time."""

from __future__ import annotations

from mm_tui.core.events import ServerState
from mm_tui.engine.turn_state import Emit

SLOW_FLOOR = 1.0  # seconds: a first word later than this after a cancel is waiting behind it
SLOW_FACTOR = 3.0  # times the cancelled request's own first word
FINISH_WATCHDOGS = 4.0  # the old answer's end is awaited this many watchdog times at most:
# 8 minutes at the default 120 s, time for a CPU model at 5 tokens a second to write 2,400


class ServerWatch:
    def __init__(self) -> None:
        self.answering: bool | None = None  # None until known
        self.cancelled_at: float | None = None  # the loop's time of a cancel before the end
        self.first_word: float | None = None  # seconds the last request took for its first word
        self.slow_floor = SLOW_FLOOR
        self.finish_watchdogs = FINISH_WATCHDOGS

    def say(self, answering: bool, message: str, emit: Emit) -> None:
        self.answering = answering
        emit(ServerState(answering=answering, message=message))

    def cancelled(self, now: float, first_word: float | None) -> None:
        """A request was cancelled before its answer's end, or stopped by the watchdog: the
        server may go on with it."""
        self.cancelled_at = now
        self.first_word = first_word

    def slow_after(self, now: float, watchdog: float) -> float | None:
        """Seconds without a first word after which a request waits behind a cancelled answer
        (within the watchdog's time), or None: no answer was cancelled, or so long ago that it
        has ended or will never end."""
        if self.cancelled_at is None or now > self.cancelled_at + self.finish_watchdogs * watchdog:
            return None
        slow = max(self.slow_floor, SLOW_FACTOR * (self.first_word or 0.0))
        return min(slow, watchdog / 2)

    def finish_deadline(self, watchdog: float) -> float:
        """The loop's time until which the watchdog waits for the old answer and its own."""
        assert self.cancelled_at is not None
        return self.cancelled_at + (self.finish_watchdogs + 1) * watchdog

    def answered(self) -> None:
        """A first word came: the server is free again."""
        self.cancelled_at = None
