"""Reads of a streamed answer, at most one per READ_GAP: what a token costs mm.

A local server sends every token as an SSE event of its own, in one or two TCP segments, as
soon as it is made. Read as it comes, each token costs a wake-up of the event loop, a socket
read, two changes of the poller (anyio pauses reading between reads), and a pass through h11,
httpcore and httpx.

So a read that comes soon after a small one (the server trickling, as it does while it streams)
first waits until READ_GAP has passed since that one. Meanwhile the kernel keeps what arrives,
and the read after the wait takes all of it at once; h11 then hands the events over from its
buffer. Nothing is lost or reordered: TCP holds the bytes, and the waits only batch them.

Why 80 ms: what a streamed answer costs is mostly how often mm wakes (each wake-up of the event
loop costs kernel and loop time, most of all on a virtual machine), and the window's frames come
at most every 60 ms to 17 ms, as their cost allows (`window/frame_clock.py`); they fall in step
with the reads (FRAME_SLACK there), so a read's text is drawn in the same wake-up that read it.
Its slowest frames must come more often than the reads: frames as slow as the reads or slower
fall out of step with them, and a read's text then waits for a frame as well. The price: a token
waits in the kernel up to 80 ms for its read (40 ms on average, which keeps the median from the
server to the screen under 50 ms), and the text moves 12.5 times a second even when frames would
be cheap enough for more. The figures, and where they were measured: docs/performance.md. Line
mode, `mm -p` and ACP print in batches of at most 80 ms (160 ms, fast, below).

A fast stream is read less often: once the reply's text has come at FAST_RATE tokens a second or
more (its events over the time since it began, RATE_SPAN at least: a model's pace within a reply
is steady, and a burst after a stall says nothing of it), the reads wait FAST_FACTOR times the
gap, 160 ms. Each read and frame costs about the same whatever it carries (a frame of a growing
answer 4 ms of CPU in bench_peers' paced answer), so half as many cost less CPU at 200 tokens a
second (the figures: docs/performance.md); the text then comes faster than anyone reads it, and
moves 6 times a second, a line or so at a time. A model slower than that (a local model on a
CPU: 80 to 110 tokens a second on this machine's test model) keeps the 80 ms gap, and the
median above; a reply whose pace falls under FAST_RATE gets it back.
A server reached through a proxy (httpx's proxy transports) is read unpaced.

What is not paced: the first read after a request is written (the answer's status and headers
come at once), a read after a big one (a bulk body, such as a long model list, is read as
fast as the network gives it), and a read after the one that saw the reply's end (a
`finish_reason`: what follows it, the usage, `[DONE]` and the end of the body, comes at once).

READ_GAP paces text (and reasoning) only. A tool call's arguments are read as they come
(CALL_GAP): nobody watches them appear, and the reply ends right after them; paced, the read that
carries that end waited up to 80 ms before mm could run the call. A reply's first words, before
it shows which it is, are read as they come too (bench/bench_round_trip.py times the round trip
against a minimal client's; docs/performance.md has the figures). So the reads look at what they
read, in the words of the
chat-completions stream: `"tool_calls"`, a `"content"` (or reasoning) that is not empty, and a
`"finish_reason"` that is not null. A word split between two reads is missed once, which costs
only a read's pace.

It wraps httpcore's network backend, a public interface of httpcore. httpx does not let its
transport be given one, so `pace` puts it into the transport's pool, a private attribute of
both; when a version of them moves it, the reads are simply not paced (a test notices)."""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

import httpcore

__all__ = [
    "BULK",
    "CALL_GAP",
    "FAST_FACTOR",
    "FAST_RATE",
    "RATE_SPAN",
    "READ_GAP",
    "PacedBackend",
    "PacedStream",
    "pace",
]

READ_GAP = 0.08  # seconds: the least time between two reads while a server trickles text
FAST_RATE = 150.0  # events a second: text this fast is read FAST_FACTOR times less often
FAST_FACTOR = 2.0
RATE_SPAN = 0.5  # seconds of a reply's text before its rate is told
CALL_GAP = 0.0  # seconds: the same while it trickles a tool call's arguments: none
BULK = 16384  # bytes: a read this big is a bulk transfer, not a trickle, and is not paced

_ENDED = re.compile(rb'"finish_reason"\s*:\s*"')  # a reply's end: its finish_reason is not null
_CALLING = b'"tool_calls"'
_EVENT = b"data:"  # an SSE event: a token, as local servers send them
_TEXT = re.compile(rb'"(?:content|reasoning_content|reasoning)"\s*:\s*"[^"]')  # text, not ""


class PacedStream(httpcore.AsyncNetworkStream):
    """A connection whose reads, while the server trickles, come at most once per `gap`."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, gap: float) -> None:
        self._stream = stream
        self._gap = gap
        self._next_gap = min(gap, CALL_GAP)  # what the words read so far ask of the next read
        self._trickled: float | None = None  # when the last read returned a small piece
        self._text_began: float | None = None  # the reply's text: when it began, its events
        self._text_events = 0
        self.reads = 0  # reads made, and how many of them waited (what the tests count)
        self.waits = 0
        # the pace of the last reads: None, unpaced (what the tests look at)
        self.gaps: deque[float | None] = deque(maxlen=256)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.gaps.append(None if self._trickled is None else self._next_gap)
        if self._trickled is not None:
            wait = self._trickled + self._next_gap - time.monotonic()
            if wait > 0:
                self.waits += 1
                await asyncio.sleep(wait)
        data = await self._stream.read(max_bytes, timeout)
        self.reads += 1
        # Only a small read is looked at for the reply's end: after a big one the next read
        # waits for nothing anyway, and on a bulk body that search is most of the cost of
        # reading it (bench/bench_provider.py; docs/performance.md).
        small = 0 < len(data) < BULK
        if small and _ENDED.search(data):
            self._trickled = None  # the rest of the reply comes at once: read it as it comes
            return data
        before, self._trickled = self._trickled, time.monotonic() if small else None
        if _CALLING in data:
            self._next_gap = min(self._gap, CALL_GAP)
        elif _TEXT.search(data):
            self._next_gap = self._text_gap(data, before)
        return data  # neither (the headers, a role chunk, a comment): the pace stays

    def _text_gap(self, data: bytes, before: float | None) -> float:
        """The gap after a read of text: FAST_FACTOR times longer while the reply's text, over
        RATE_SPAN or more since it began, came at FAST_RATE."""
        if before is None or self._trickled is None:
            return self._gap
        if self._text_began is None:
            self._text_began = before
        self._text_events += data.count(_EVENT)
        span = self._trickled - self._text_began
        fast = span >= RATE_SPAN and self._text_events >= FAST_RATE * span
        return self._gap * FAST_FACTOR if fast else self._gap

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._trickled = None  # a new request: its answer's first read waits for nothing
        self._text_began, self._text_events = None, 0  # and its text's rate is its own
        self._next_gap = min(self._gap, CALL_GAP)  # until the reply shows text
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        inner = await self._stream.start_tls(ssl_context, server_hostname, timeout)
        return PacedStream(inner, self._gap)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class PacedBackend(httpcore.AsyncNetworkBackend):
    """Opens connections as `backend` does, each a `PacedStream`."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend, gap: float) -> None:
        self._backend = backend
        self._gap = gap
        self.streams: list[PacedStream] = []  # the last few opened (what the tests look at)

    def _paced(self, stream: httpcore.AsyncNetworkStream) -> PacedStream:
        paced = PacedStream(stream, self._gap)
        self.streams = [*self.streams[-7:], paced]
        return paced

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return self._paced(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._backend.connect_unix_socket(path, timeout, socket_options)
        return self._paced(stream)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def pace(transport: Any, gap: float | None = None) -> PacedBackend | None:
    """Pace the reads of the connections `transport` (an `httpx.AsyncHTTPTransport`) opens
    from now on, `gap` (READ_GAP by default) apart. Returns the backend, or None when this httpx
    or httpcore keeps its pool or backend elsewhere (the reads then go unpaced, which costs only
    CPU)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if not isinstance(backend, httpcore.AsyncNetworkBackend):
        return None
    paced = PacedBackend(backend, READ_GAP if gap is None else gap)
    pool._network_backend = paced  # type: ignore[union-attr]
    return paced
