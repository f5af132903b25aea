"""A wait the code under test is given instead of `asyncio.sleep`: it records how long it was
asked to wait and waits none of it, so that a test asserts the wait asked for (a server's
Retry-After, a capped hint, a backoff) rather than timing it on a clock a loaded machine
stretches."""

from __future__ import annotations

import asyncio


class Waits:
    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.asked.append(delay)
        await asyncio.sleep(0)  # still a point where the caller may be cancelled
