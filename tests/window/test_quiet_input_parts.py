"""The parts of the input thread that does not poll (`window/quiet_input.py`): how long it may
sleep, and the exit event that wakes it, across a suspend (the driver closed, then started
again). The whole driver runs in a real terminal in tests/program/test_quiet_input.py."""

from __future__ import annotations

import selectors
import threading

from textual._xterm_parser import XTermParser

from mm_tui.window import quiet_input
from mm_tui.window.quiet_input import WakingEvent


def test_the_thread_sleeps_for_good_but_for_a_lone_escape() -> None:
    parser = XTermParser()
    assert quiet_input._wait(parser) is None  # nothing pending: no timeout at all
    list(parser.feed("\x1b"))  # a lone Esc: a key only if nothing follows soon
    wait = quiet_input._wait(parser)
    assert wait is not None and 0 <= wait <= 1
    list(parser.feed("[A"))  # it was an arrow
    assert quiet_input._wait(parser) is None


def test_a_parser_without_its_deadline_is_polled_as_textual_polls() -> None:
    class Changed:
        pass

    assert quiet_input._wait(Changed()) == quiet_input.POLL  # pyright: ignore[reportArgumentType]


def wakes(event: WakingEvent, read: int) -> bool:
    """Whether `set`, from another thread, wakes a select on the pipe (within 10 s)."""
    with selectors.SelectSelector() as selector:
        selector.register(read, selectors.EVENT_READ)
        threading.Timer(0.05, event.set).start()
        return bool(selector.select(10))


def test_stopping_wakes_the_select_after_a_suspend_too() -> None:
    """Textual closes the driver at a suspend and starts its input thread again at the resume:
    the pipe is made again then, and a stop still wakes the new thread."""
    event = WakingEvent()
    event.set()  # before any thread: nothing to wake, nothing fails
    event.clear()
    read = event.open()
    assert wakes(event, read)
    event.clear()
    assert event.open() == read  # the next thread's: the same pipe, emptied
    with selectors.SelectSelector() as selector:
        selector.register(read, selectors.EVENT_READ)
        assert selector.select(0) == []
    event.close()  # a suspend
    event.set()  # writes nowhere (a closed number may be another file's by now)
    event.clear()
    assert wakes(event, event.open())  # the resume's thread
    event.close()
