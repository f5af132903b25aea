"""The collector's full passes in window mode (`window/full_passes.py`): Python's own are off
once the window is ready; a pass runs when due and freezes what it kept, so that the next walks
only what is new; a whole pass runs when nobody types; all is given back as the window closes."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.scripted_model import ScriptedModel
from support.waiting import until
from support.window_helpers import make_app

from mm_tui.window import full_passes
from mm_tui.window.full_passes import FullPasses


@pytest.fixture
def collector_state() -> Iterator[tuple[int, int, int]]:
    """This process's thresholds, as they were, and nothing left frozen, whatever the test
    did."""
    saved = gc.get_threshold()
    yield saved
    gc.set_threshold(*saved)
    gc.unfreeze()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Timers:
    """One-shot timers that the test fires itself (`set_timer`'s part of the app), and the
    wake-ups asked of the loop (`call_soon_threadsafe`'s part)."""

    def __init__(self) -> None:
        self.set: list[Timer] = []
        self.woken: list[Callable[[], object]] = []

    def set_timer(self, delay: float, callback: Callable[[], object]) -> Timer:
        self.set.append(Timer(delay, callback))
        return self.set[-1]

    def wake(self, callback: Callable[[], object]) -> None:
        self.woken.append(callback)

    def pending(self) -> list[Timer]:
        return [timer for timer in self.set if not timer.stopped]

    def fire(self) -> float:
        """Run the one timer pending; its delay."""
        (timer,) = self.pending()
        timer.stopped = True
        timer.callback()
        return timer.delay


class Timer:
    def __init__(self, delay: float, callback: Callable[[], object]) -> None:
        self.delay, self.callback = delay, callback
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class Passes:
    """The full passes that run, and how many objects each walked (the frozen ones are not)."""

    def __init__(self) -> None:
        self.walked: list[int] = []

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            self.walked.append(sum(len(gc.get_objects(g)) for g in range(3)))


def young(count: int) -> None:
    for _ in range(count):
        gc.collect(1)


def test_a_due_pass_runs_and_freezes_what_it_kept(
    collector_state: tuple[int, int, int],
) -> None:
    """Python's automatic full passes are off; the collection of the middle generation that
    makes a pass due (as often as Python's threshold asks) wakes the loop, once; the pass runs
    then, whatever the keys, and what survives it is frozen: the next pass walks only what was
    made since."""
    clock, timers = Clock(), Timers()
    collector = FullPasses(clock)
    collector.start(timers, timers.wake)
    passes = Passes()
    gc.callbacks.append(passes)
    kept: list[list[int]] = []
    try:
        assert gc.get_threshold() == (*collector_state[:2], full_passes.OUT_OF_REACH)
        assert [timer.delay for timer in timers.pending()] == [full_passes.FIRST_CHECK]
        assert not collector.check()  # nothing collected since: nothing to do
        young(full_passes.YOUNG_PASSES - 1)
        assert not timers.woken
        young(1)
        young(2)  # more, before the loop runs the check: still one wake-up
        assert len(timers.woken) == 1
        collector.key()  # typing: a due pass runs anyway, it is short
        timers.woken.pop()()  # the loop runs it
        assert len(passes.walked) == 1 and gc.get_freeze_count() > 0
        kept.extend([i] for i in range(10_000))  # new objects, after the freeze
        young(full_passes.YOUNG_PASSES)
        assert len(timers.woken) == 1
        timers.woken.pop()()
        assert len(passes.walked) == 2
        assert passes.walked[1] < 20_000 < gc.get_freeze_count()  # the frozen ones not walked
        young(full_passes.YOUNG_PASSES)  # due again, the window closing before the loop runs it
    finally:
        gc.callbacks.remove(passes)
        collector.stop()
    assert gc.get_threshold() == collector_state and not timers.pending()
    assert gc.get_freeze_count() == 0
    timers.woken.pop()()  # the wake-up asked just before the stop, run after it: nothing
    assert gc.get_freeze_count() == 0 and collector.passes == 2
    young(full_passes.YOUNG_PASSES)  # stopped: nothing counts them any more
    assert not timers.woken


def test_an_idle_window_is_not_woken_once_its_whole_pass_is_done(
    collector_state: tuple[int, int, int],
) -> None:
    """No timer repeats: the first check (the loading threads' freeze), then one for the
    moment the whole pass can be due, moved on by a key that came meanwhile; once it ran,
    nothing is set, and only a due pass (a collection) wakes the loop again."""
    clock, timers = Clock(), Timers()
    collector = FullPasses(clock)
    collector.start(timers, timers.wake)
    try:
        clock.now += full_passes.FIRST_CHECK
        assert timers.fire() == full_passes.FIRST_CHECK
        assert collector.passes == 0  # the loading threads' freeze; then the whole pass's timer
        clock.now += full_passes.WHOLE_EVERY - full_passes.FIRST_CHECK - 1
        collector.key()
        clock.now += 1
        assert timers.fire() == full_passes.WHOLE_EVERY - full_passes.FIRST_CHECK
        assert collector.passes == 0  # a key a moment ago: set again, for QUIET after it
        clock.now += full_passes.QUIET - 1 - 0.05
        assert timers.fire() == pytest.approx(full_passes.QUIET - 1)
        assert collector.passes == 0  # the timer a little early: set again, shortly
        clock.now += full_passes.MIN_DELAY
        assert timers.fire() == full_passes.MIN_DELAY
        assert collector.passes == 1  # the whole pass
        assert not timers.pending()
        young(full_passes.YOUNG_PASSES - 1)
        assert not timers.woken and not timers.pending()
    finally:
        collector.stop()


def test_start_up_is_frozen_and_the_first_pass_walks_only_what_came_after(
    collector_state: tuple[int, int, int],
) -> None:
    """Taking over freezes what start-up made, without a pass, and the first check what the
    loading threads made after it: the first due pass (most often while the first answer
    streams) walks only what was made since; start-up's garbage waits for the first whole
    pass."""
    clock, timers = Clock(), Timers()
    collector = FullPasses(clock)
    made = sum(len(gc.get_objects(g)) for g in range(3))  # this test process's, tens of thousands
    passes = Passes()
    collector.start(timers, timers.wake)
    gc.callbacks.append(passes)
    try:
        assert gc.get_freeze_count() >= made
        gc.disable()  # no young passes meanwhile, which would make a pass due at the check
        try:
            loaded = [[n] for n in range(made)]  # what the loading threads make, after ready
        finally:
            gc.enable()
        frozen = gc.get_freeze_count()
        assert not collector.check()  # no pass: a freeze
        assert gc.get_freeze_count() >= frozen + len(loaded)
        young(full_passes.YOUNG_PASSES)
        assert collector.check()
        assert passes.walked and passes.walked[0] < made / 4
        clock.now += full_passes.WHOLE_EVERY + full_passes.QUIET
        assert collector.check()  # quiet long enough: the whole pass, start-up's objects too
        assert passes.walked[1] >= made + len(loaded)
    finally:
        gc.callbacks.remove(passes)
        collector.stop()
    assert gc.get_freeze_count() == 0


def test_a_whole_pass_waits_until_nobody_types(collector_state: tuple[int, int, int]) -> None:
    """What was frozen and became garbage since is freed by a whole pass, which walks all:
    only when no key came for a while, and not more often than WHOLE_EVERY."""
    clock, timers = Clock(), Timers()
    collector = FullPasses(clock)
    collector.start(timers, timers.wake)
    passes = Passes()
    try:
        young(full_passes.YOUNG_PASSES)
        assert collector.check()  # a due pass: something is frozen now
        gc.callbacks.append(passes)
        clock.now += full_passes.WHOLE_EVERY
        collector.key()
        clock.now += full_passes.QUIET / 2
        assert not collector.check()  # a key a moment ago
        clock.now += full_passes.QUIET
        frozen = gc.get_freeze_count()
        assert collector.check()  # quiet: the whole pass
        assert passes.walked and passes.walked[0] >= frozen  # the frozen ones walked too
        assert not collector.check()  # nothing frozen since
        young(full_passes.YOUNG_PASSES)
        assert collector.check()  # due again
        clock.now += full_passes.QUIET
        assert not collector.check()  # the last whole pass is too recent
    finally:
        if passes in gc.callbacks:
            gc.callbacks.remove(passes)
        collector.stop()


async def test_the_window_takes_the_full_passes_once_ready_and_gives_them_back(
    folder: Path, collector_state: tuple[int, int, int]
) -> None:
    """Before ready Python runs them; once ready the window does, told of every key; once
    the window has closed Python runs them again."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.prompt_in_place, "ready", pilot=pilot)
        assert gc.get_threshold()[2] == full_passes.OUT_OF_REACH
        # a due pass wakes the loop, from its own thread or another (a tool's, a loader's)
        ran = app.collector.passes
        young(full_passes.YOUNG_PASSES)
        await until(lambda: app.collector.passes > ran, "the pass woken", pilot=pilot)
        ran = app.collector.passes
        worker = threading.Thread(target=young, args=(full_passes.YOUNG_PASSES,))
        worker.start()
        worker.join()
        await until(lambda: app.collector.passes > ran, "woken by a thread", pilot=pilot)
        young(full_passes.YOUNG_PASSES)
        assert app.collector.check()  # a due pass, which freezes
        app.collector.clock = lambda: 1e9  # long after: a whole pass is due if nobody types
        await pilot.press("a")
        assert not app.collector.check()  # a key "a moment ago" (the frozen clock's now)
    assert gc.get_threshold() == collector_state
    assert gc.get_freeze_count() == 0
