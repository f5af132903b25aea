"""Counting how often an event loop sleeps and wakes: what a streamed answer costs.

On a virtual machine each wake-up of the event loop costs a few hundred microseconds of kernel
and loop time, which is most of what a trickled answer costs (`engine/paced_reads.py`). Used by
tests/window/test_wakeups.py and bench/bench_e2e.py."""

from __future__ import annotations

import asyncio
from typing import Any


class Sleeps:
    """Polls of the running loop that may sleep (a timeout other than 0), counted through the
    loop's selector, a private part of asyncio wrapped until `close`."""

    def __init__(self) -> None:
        self.count = 0
        self._selector: Any = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
        select = self._selector.select

        def counted(timeout: float | None = None) -> Any:
            if timeout != 0:
                self.count += 1
            return select(timeout)

        self._selector.select = counted

    def close(self) -> None:
        del self._selector.select  # the instance attribute: the class's method again
