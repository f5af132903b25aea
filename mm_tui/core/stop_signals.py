"""SIGTERM and SIGHUP stop mm the way closing its input does, in every mode.

Why: Python's default for both is to die at once, with no `finally` run. The commands a tool
started live in process groups of their own (so that stopping one stops its helpers), and they
outlived mm, still writing files, when an editor stopped `mm -acp` with SIGTERM or a terminal
closed under window mode (SIGHUP). Handled here, the signal cancels the mode's main task: the
turn is cancelled as Esc cancels it (tools stop their process groups, the history is put in
order and saved), the engine closes, and mm exits with 128 + the signal's number, as a shell
reports a death by that signal.

A deadline backs that up (`exit_by`): once a stop signal came, mm ends within STOP_GRACE seconds
however its shutdown goes. A closed terminal can leave window mode's shutdown waiting for ever
(seen under load: Textual's output thread's queue full, its `stop` blocked in `put`), and a
process left behind holds its session folder and nobody sees it.

What most likely left it waiting (`resume_only_after_suspend`): a terminal that closes sends
its session leader SIGCONT with SIGHUP (Linux's tty hangup does; checked: a process exec'd in a
tmux pane gets SIGHUP, then SIGCONT, when the pane is killed), and mm in a tmux pane or an ssh
session is that leader. Textual's driver takes any SIGCONT as a return from Ctrl+Z, suspended or
not: it starts application mode again, with a second output thread and a second input thread
(a test counts them). The new output thread dies at its first write to the closed terminal, the
writes after it fill its queue, and the shutdown's `put` waits for ever; the old output thread,
idle in `get`, is the one gdb showed. A SIGCONT that follows no suspension now reaches nothing.
(The hang itself was never reproduced on demand: the queue holds 30 writes, and the shutdown
writes fewer unless the machine is loaded.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
STOP_GRACE = 15.0  # seconds a stop signal leaves for the shutdown (saving takes milliseconds)


def exit_by(seconds: float, code: int) -> None:
    """End the process with `code` in `seconds` unless it has ended by then: a daemon thread,
    which a normal exit never waits for. `os._exit`: nothing more runs, which is the point (the
    session is saved as the turn is cancelled, long before)."""

    def deadline() -> None:
        time.sleep(seconds)
        os._exit(code)

    threading.Thread(target=deadline, name="mm-stop-deadline", daemon=True).start()


def resume_only_after_suspend() -> None:
    """Pass SIGCONT on to the handler installed for it (Textual's driver, which starts
    application mode again) only after a SIGTSTP went through the handler installed for that:
    a SIGCONT that follows no suspension (a closing terminal sends one, as does `kill -CONT`)
    is ignored. Call it from the main thread once the driver has installed its handlers;
    where either is not a Python function (no terminal), nothing changes."""
    on_stop, on_continue = signal.getsignal(signal.SIGTSTP), signal.getsignal(signal.SIGCONT)
    if not callable(on_stop) or not callable(on_continue):
        return
    suspended = False

    def stopping(signum: int, frame: Any) -> None:
        nonlocal suspended
        suspended = True
        on_stop(signum, frame)  # Textual's: leaves application mode, then SIGSTOP

    def continuing(signum: int, frame: Any) -> None:
        nonlocal suspended
        if suspended:
            suspended = False
            on_continue(signum, frame)

    try:
        signal.signal(signal.SIGTSTP, stopping)
        signal.signal(signal.SIGCONT, continuing)
    except ValueError:  # not the main thread: no signal handlers here
        return


@contextlib.contextmanager
def on_stop_signal(stop: Callable[[int], object]) -> Iterator[list[int]]:
    """While inside, the first SIGTERM or SIGHUP calls `stop(signum)` on the running loop (later
    ones are ignored: mm is already stopping). Yields the list of the signal received, empty
    until one is. Where the loop cannot take signal handlers (not the main thread), nothing
    changes."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def handle(signum: int) -> None:
        if not received:
            received.append(signum)
            stop(signum)

    installed: list[int] = []
    for signum in STOP_SIGNALS:
        try:
            loop.add_signal_handler(signum, handle, signum)
        except (NotImplementedError, RuntimeError, ValueError):
            continue
        installed.append(signum)
    try:
        yield received
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


async def run_stoppable(main: Coroutine[Any, Any, int]) -> int:
    """Await a mode's main coroutine; a stop signal cancels it (its `finally` clauses run) and
    the result is 128 + the signal's number."""
    task = asyncio.current_task()
    assert task is not None, "run_stoppable runs inside a task"
    with on_stop_signal(lambda _signum: task.cancel()) as received:
        result = 0
        try:
            result = await main
        except asyncio.CancelledError:
            if not received:
                raise
            task.uncancel()
        # a stop is reported also when the mode took the cancellation as its end (the ACP
        # connection ends quietly when cancelled)
        return 128 + received[0] if received else result
