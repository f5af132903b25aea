"""The garbage collector's full passes, kept short while the window runs.

A full pass walks every object the collector tracks. In a long session that is a stop of the UI
loop that grows with the session: up to 82 to 91 ms late in a turn of 2,000 tool calls
(bench/bench_window_turn.py counts the passes and times the longest), and a key pressed then
waits it out. Python starts one whenever the objects that survived the younger generations since
the last have grown by a quarter, whatever the person is doing.

So in window mode, once ready, Python's automatic full passes are off (the third threshold out
of reach; the younger generations are collected as ever), what start-up made is frozen as it
is (no pass; what the loading threads made after it, at a check FIRST_CHECK seconds later),
and this runs them:

- when the middle generation has been collected YOUNG_PASSES times since the last pass (as often
  as Python's own threshold asks): a pass, then `gc.freeze()`, so that the next pass walks only
  what was made since (22 ms at most in that turn, as many passes). A callback of the collector
  counts those collections and wakes the window's loop at the one that makes a pass due;
- when something was frozen since the last whole pass, no key came for QUIET seconds and the
  last whole pass is WHOLE_EVERY seconds old: a whole pass, everything unfrozen first (what
  was frozen and has since become garbage in a cycle is freed then), and frozen again. A
  one-shot timer is set for the moment it can be due, and set again if a key came meanwhile.

No timer repeats: an idle window, its whole pass done, is never woken by the collector (a
check every 2 s was most of an idle window's CPU, bench/bench_window_idle.py).

Memory stays where Python's own passes keep it (peak 215 MB in that turn, 216 MB without). The
thresholds are given back, and what was frozen unfrozen, as the window closes. Line mode, `-p`
and ACP keep Python's own collector: nobody types into them while they work."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Protocol

FIRST_CHECK = 2.0  # seconds from the take-over to the check that freezes the loading threads
MIN_DELAY = 0.1  # seconds: the shortest timer set for a whole pass
YOUNG_PASSES = 10  # collections of the middle generation since the last pass: one is due
QUIET = 5.0  # seconds without a key before a whole pass
WHOLE_EVERY = 60.0  # seconds between whole passes at least
OUT_OF_REACH = 1 << 30  # a third threshold that Python's own count never reaches


class Timer(Protocol):
    def stop(self) -> None: ...


class Timers(Protocol):
    """What the collector needs of the app: a one-shot timer (Textual's `set_timer`)."""

    def set_timer(self, delay: float, callback: Callable[[], object]) -> Timer: ...


class FullPasses:
    """The full passes of window mode; `key()` is told of every key."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.passes = 0  # full passes run by this collector
        self._saved: tuple[int, int, int] | None = None
        self._last_key = float("-inf")
        self._last_whole = clock()
        self._frozen_since_whole = False
        self._loading = False  # what the loading threads make is still to be frozen
        self._young = 0  # collections of the middle generation since the last pass
        self._woken = False  # the loop was asked for a check that has not run yet
        self._timers: Timers | None = None
        self._wake: Callable[[Callable[[], object]], object] | None = None
        self._timer: Timer | None = None

    def start(
        self, app: Timers, wake: Callable[[Callable[[], object]], object] | None = None
    ) -> None:
        """Take over the full passes from Python (once: again does nothing), from the window's
        loop. `wake` has a callback run on that loop soon, from any thread (by default the
        running loop's `call_soon_threadsafe`): a collection that makes a pass due may run in
        any thread."""
        if self._saved is not None:
            return
        if wake is None:
            wake = asyncio.get_running_loop().call_soon_threadsafe
        self._saved = gc.get_threshold()
        gc.set_threshold(self._saved[0], self._saved[1], OUT_OF_REACH)
        # Start-up's objects are frozen as they are (a splice of lists, not a pass): the first
        # due pass, most often while the first answer streams, then walks only what was made
        # since ready, not start-up's modules as well (18 ms in bench_peers' paced answer).
        # What start-up left as garbage in cycles waits for the first whole pass. So do the
        # modules the loading threads started at ready bring (`core/preload.py`: Markdown's,
        # httpx's, the lexers), frozen at the first check.
        gc.freeze()
        self._loading = True
        self._frozen_since_whole = True
        self._last_whole = self.clock()
        self._young = 0
        self._woken = False
        self._timers, self._wake = app, wake
        gc.callbacks.append(self._collected)
        self._plan()

    def stop(self) -> None:
        """Give the full passes back to Python."""
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None
            gc.unfreeze()  # what it froze goes back to Python's collector
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._timers = self._wake = None

    def key(self) -> None:
        self._last_key = self.clock()

    def check(self) -> bool:
        """Run the pass that is due, if one is; whether one ran."""
        now = self.clock()
        self._woken = False
        if self._loading:
            self._loading = False
            gc.freeze()
        if self._young >= YOUNG_PASSES:
            gc.collect()  # over what was made since the last freeze: short
            gc.freeze()
            self._frozen_since_whole = True
        elif self._frozen_since_whole and self._quiet_for_whole(now):
            gc.unfreeze()  # all of it, start-up's too: long, but nobody is typing
            gc.collect()
            gc.freeze()
            self._frozen_since_whole = False
            self._last_whole = now
        else:
            return False
        self.passes += 1
        self._young = 0
        return True

    def _checked(self) -> None:
        """A check the loop runs (woken, or at its timer), and the next timer set; none once
        stopped (a wake-up asked just before the stop would freeze what was given back)."""
        if self._saved is None:
            return
        self.check()
        self._plan()

    def _plan(self) -> None:
        """The next timed check, if any: the loading threads' freeze, or the whole pass at the
        moment it can be due (a key since moves it on). None when nothing is frozen since the
        last whole pass: a due pass comes through `_collected`, not a timer."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._timers is None:
            return
        if self._loading:
            delay = FIRST_CHECK
        elif self._frozen_since_whole:
            due = max(self._last_key + QUIET, self._last_whole + WHOLE_EVERY)
            delay = max(due - self.clock(), MIN_DELAY)
        else:
            return
        self._timer = self._timers.set_timer(delay, self._checked)

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        """The collector's callback, in whatever thread collected: counts the middle
        generation's collections and wakes the loop once a pass is due."""
        if phase != "stop" or info.get("generation") != 1:
            return
        self._young += 1
        wake = self._wake
        if self._young >= YOUNG_PASSES and not self._woken and wake is not None:
            self._woken = True
            try:
                wake(self._checked)
            except Exception:  # noqa: BLE001 - the loop closing: nothing to collect for
                self._woken = False

    def _quiet_for_whole(self, now: float) -> bool:
        return now - self._last_key >= QUIET and now - self._last_whole >= WHOLE_EVERY
