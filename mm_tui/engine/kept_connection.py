"""An answer's body read to its end after `[DONE]`, so that its connection is kept.

httpx gives a connection back to its pool only once a response's body has been read to its end;
a response closed before that closes the connection. A streamed answer is whole at
`data: [DONE]`, and the body ends just after it (the chunked terminator), most often in the same
network read. Reading on for that end, briefly, keeps the connection for the next request of the
turn: without it every request opened a new one (and, to a server over https, shook hands for
TLS again). A server that keeps the body open after `[DONE]` is given `END_WAIT` seconds, then
its connection is closed, as every connection was before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

END_WAIT = 0.05
"""Seconds a body may take to end after `[DONE]`: local servers end it in the same write."""


async def read_to_the_end(chunks: AsyncIterator[bytes]) -> None:
    """Read what is left of a body, within `END_WAIT`, and drop it: the answer is already
    whole, so a body that does not end in time, or ends badly, costs its connection only."""
    try:
        async with asyncio.timeout(END_WAIT):
            async for _ in chunks:
                pass
    except Exception:  # noqa: BLE001, S110 - the answer is whole: nothing to tell anybody
        pass
