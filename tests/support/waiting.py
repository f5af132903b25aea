"""Waiting for something to happen: poll a condition until it holds or a deadline passes.

A test that sleeps a fixed time "for the command to start" is slow when the time is long and
flaky when the machine is busy; these wait as long as needed and no longer. `wait_until` and
`await_until` return whether the condition came true, for the test to assert with its own
message or to go another way; `until` fails the test itself:

    assert wait_until(lambda: not group_members(pgid), 2), "the group outlived Ctrl-C"
    await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any


def wait_until(condition: Callable[[], object], timeout: float = 10.0, step: float = 0.02) -> bool:
    """Call `condition` every `step` seconds until it is true (True) or `timeout` has passed
    (False). It is checked once more at the deadline, so a slow last step still counts."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


async def await_until(
    condition: Callable[[], object],
    timeout: float = 10.0,
    step: float = 0.02,
    *,
    pilot: Any = None,
) -> bool:
    """`wait_until` in an event loop: the loop runs between checks. With a Textual `pilot`, each
    step is a `pilot.pause(step)`, which also lets the screen's timers fire."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        if pilot is not None:
            await pilot.pause(step)
        else:
            await asyncio.sleep(step)


async def until(
    condition: Callable[[], object],
    what: str,
    timeout: float = 10.0,
    step: float = 0.02,
    *,
    pilot: Any = None,
) -> None:
    """`await_until`, failing the test with "`what` never happened" after `timeout`."""
    assert await await_until(condition, timeout, step, pilot=pilot), f"{what} never happened"
