"""Noticing an MCP server over HTTP that died in the middle of an exchange.

The SDK's streamable HTTP transport reads each answer as a stream of server-sent events; when
that stream breaks before the answer (the server's process died during a call), it logs the
error and leaves the request waiting, so the call would fail only at its timeout (60 s by
default). A stdio server's death ends its pipe, which the link notices at once; this gives an
HTTP server the same: every response the client reads is watched, and a stream that breaks is
reported to the link (`on_broken`), which then looks whether the server still answers at its
address (a server that does may resume the stream, as the SDK does with an event id).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx

BROKEN = (httpx.ReadError, httpx.RemoteProtocolError)
"""How a response stream breaks when the other end went away in the middle."""


class _Watched(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, on_broken: Callable[[Exception], None]):
        self._inner = inner
        self._on_broken = on_broken

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except BROKEN as exc:
            self._on_broken(exc)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def watch_responses(client: httpx.AsyncClient, on_broken: Callable[[Exception], None]) -> None:
    """Report to `on_broken` every response of `client` whose body breaks while it is read."""

    async def watched(response: httpx.Response) -> None:
        stream = response.stream
        if isinstance(stream, httpx.AsyncByteStream):
            response.stream = _Watched(stream, on_broken)

    client.event_hooks = {
        **client.event_hooks,
        "response": [*client.event_hooks["response"], watched],
    }


async def still_answering(url: str, headers: dict[str, str] | None, within: float = 2.0) -> bool:
    """Whether a server still answers HTTP at `url` (any status will do). A bare connection is
    not enough: a process that is dying may still hold its listening socket a moment after its
    streams broke, and the kernel accepts a connection there that nothing will ever answer. A
    server too slow to answer within `within` is taken to be there."""
    try:
        async with (
            httpx.AsyncClient(headers=headers, timeout=within) as client,
            client.stream("GET", url, headers={"Accept": "text/event-stream"}),
        ):
            return True
    except httpx.TimeoutException:
        return True
    except (httpx.TransportError, OSError):
        return False
