"""Textual's Linux driver, with an input thread that sleeps until there is something to read.

Textual's input thread wakes ten times a second whatever happens (a `select` with a 0.1 s
timeout), to see whether the app is stopping and whether a lone Esc has waited long enough to be
a key. On a virtual machine each wake-up costs a few hundred microseconds, which made those
polls most of what an idle window costs (bench/bench_window_idle.py). Here the thread waits
with no timeout at all, but for the parser's own deadline when it holds a lone Esc, and
stopping wakes it through a pipe that its `select` watches as well. The rest of the driver
(modes, signals, suspend and resume, output) is Textual's.

What it reads of Textual: the parser's pending deadline (`Parser._timeout_time`, Textual is
pinned below 8.3); where that is gone, it polls as Textual does."""

from __future__ import annotations

import os
import selectors
import threading
import time
from codecs import getincrementaldecoder
from typing import Any

from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

READ_SIZE = 4096
POLL = 0.1  # seconds: Textual's own interval, if the parser's deadline cannot be read
_UNKNOWN = object()


class WakingEvent(threading.Event):
    """The driver's exit event: setting it also writes to a pipe, so that a thread waiting in
    `select` on the pipe's end wakes at once. The pipe is made by `open`, at each start of the
    input thread, and closed with the driver (which Textual closes at each suspend, too)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._fds: tuple[int, int] | None = None  # (read, write); None when closed

    def open(self) -> int:
        """The pipe's reading end, made now if closed, emptied if not."""
        with self._lock:
            if self._fds is None:
                read, write = os.pipe()
                os.set_blocking(read, False)
                os.set_blocking(write, False)
                self._fds = (read, write)
                return read
            read = self._fds[0]
        self.drain(read)
        return read

    def set(self) -> None:
        super().set()
        with self._lock:
            if self._fds is None:  # no input thread to wake
                return
            try:
                os.write(self._fds[1], b"\0")
            except OSError:  # full: a wake-up is waiting already
                pass

    @staticmethod
    def drain(read: int) -> None:
        try:
            while os.read(read, 512):
                pass
        except OSError:  # empty
            pass

    def close(self) -> None:
        with self._lock:
            if self._fds is not None:
                for fd in self._fds:
                    os.close(fd)
                self._fds = None


class QuietLinuxDriver(LinuxDriver):
    """LinuxDriver whose input thread never polls: it wakes for input, for a lone Esc's
    deadline, and for the stop."""

    def __init__(self, app: Any, **options: Any) -> None:
        super().__init__(app, **options)
        self.exit_event = WakingEvent()

    def run_input_thread(self) -> None:
        exit_event = self.exit_event
        assert isinstance(exit_event, WakingEvent)
        wake_fd = exit_event.open()
        parser = XTermParser(self._debug)
        # a byte that is not UTF-8 (a terminal's 8-bit Meta) is a U+FFFD, not the end of input
        decode = getincrementaldecoder("utf-8")(errors="replace").decode
        selector = selectors.SelectSelector()  # as Textual's: it works on every kind of stdin
        selector.register(self.fileno, selectors.EVENT_READ, "input")
        selector.register(wake_fd, selectors.EVENT_READ, "stop")
        reading = True
        try:
            while not exit_event.is_set():
                for key, _ in selector.select(_wait(parser)):
                    if key.data == "stop":
                        exit_event.drain(wake_fd)
                    elif reading and not self._take(parser, decode):
                        # the end of stdin (a pipe): wait for the stop alone, no busy loop
                        selector.unregister(self.fileno)
                        reading = False
                for event in parser.tick():
                    self.process_message(event)
            if reading:  # what is left of a character cut in two, as Textual does at the end
                for event in parser.feed(decode(b"", final=True)):
                    self.process_message(event)
        finally:
            selector.close()

    def _take(self, parser: XTermParser, decode: Any) -> bool:
        """Read what stdin has and hand its events to the app; False at its end."""
        read = os.read(self.fileno, READ_SIZE)
        if not read:
            return False
        data = decode(read)
        if data:  # empty when the read ended inside a character: the next read completes it
            for event in parser.feed(data):
                self.process_message(event)
        return True

    def close(self) -> None:
        super().close()
        exit_event = self.exit_event
        if isinstance(exit_event, WakingEvent):
            exit_event.close()


def _wait(parser: XTermParser) -> float | None:
    """How long the input thread may sleep: until the parser's deadline for a lone Esc, or for
    good when it holds none."""
    deadline = getattr(parser, "_timeout_time", _UNKNOWN)
    if deadline is None:
        return None
    if not isinstance(deadline, float):  # gone from Textual, or changed: poll as it does
        return POLL
    return max(0.0, deadline - time.monotonic())
