"""Server-sent events without I/O: bytes in as they arrive from the network, JSON objects out.

The chat-completions stream is SSE whose every event carries one JSON object, ended by
`data: [DONE]`. Servers differ in the details, so the decoder is lenient: CR, LF or CRLF line
ends (a CRLF may be split across reads, and so may a UTF-8 character), comments such as
`: keep-alive`, `data:` with or without its space, an object spread over several `data:` lines,
and events without the blank line between them. That last one is why this decoder parses JSON
itself: on such a server only a complete object tells where an event ends. A malformed event is
skipped (a guessed tool call is worse than a missing one), and the first line that is not SSE at
all is kept for the error message when nothing else came.

Nothing here reads a socket, so every framing case is tested by feeding bytes
(tests/engine/test_sse.py). This is the hot path of a streamed answer (every token passes through
it): the work is done one network read at a time, and each object is handed on as soon as it is
parsed.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any

__all__ = ["LineSplitter", "SseDecoder"]


class LineSplitter:
    """The text lines of a byte stream, fed one network read at a time.

    Bytes are decoded incrementally, so a character split across reads arrives whole (and bytes
    that are not UTF-8 become U+FFFD rather than an exception); CR, LF and CRLF all end a line,
    even when a CRLF is split across reads."""

    __slots__ = ("_decode", "_skip_lf", "_tail")

    def __init__(self) -> None:
        self._decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        self._tail = ""  # the unterminated line so far
        self._skip_lf = False  # the last read ended with CR: an LF opening the next completes it

    def feed(self, raw: bytes) -> list[str]:
        """The lines that `raw` completes, without their line ends."""
        text = self._decode(raw)
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        if self._tail:
            text = self._tail + text
        if "\r" in text:
            self._skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        self._tail = lines.pop()
        return lines

    def close(self) -> list[str]:
        """The end of the stream: the unterminated last line, if any, then a blank line, which
        ends an event still pending on a server that does not end its last one."""
        tail = self._tail + self._decode(b"", final=True)
        self._tail = ""
        return [tail, ""] if tail else [""]


class SseDecoder:
    """The JSON objects of a chat-completions event stream, fed one network read at a time.

    After `[DONE]`, `done` is set and the rest is ignored. `seen_data` tells whether any `data:`
    line came at all (an empty answer has none); `stray` is the first line that is neither data
    nor a comment (`event:`, `id:`, `retry:`, or an answer that is not SSE at all). Values that
    are not objects (`data: 42`) are dropped: no chat-completions chunk is one."""

    __slots__ = ("_lines", "_pending", "done", "seen_data", "stray")

    def __init__(self) -> None:
        self._lines = LineSplitter()
        self._pending: list[str] = []  # data lines of an event not parsed yet
        self.done = False
        self.seen_data = False
        self.stray: str | None = None

    def feed(self, raw: bytes) -> Iterator[dict[str, Any]]:
        """The objects whose events `raw` completes, lazily: iterate them before the next feed.
        Lazily, because a list of a read's objects (hundreds on a fast server) would keep them
        all alive at once, which costs the garbage collector more than the parsing itself."""
        return self.decode_lines(self._lines.feed(raw))

    def close(self) -> Iterator[dict[str, Any]]:
        """The objects the end of the stream completes (an event without its blank line)."""
        return self.decode_lines(self._lines.close())

    def decode_lines(self, lines: list[str]) -> Iterator[dict[str, Any]]:
        """The objects of these lines (without their line ends), in order, up to `[DONE]`."""
        if self.done:
            return
        loads = json.loads
        pending = self._pending
        for line in lines:
            if not line:  # half the lines: test it first
                if pending and self._blank_line():
                    return
                continue
            if line.startswith("data: "):
                data = line[6:]
            elif line.startswith("data:"):
                data = line[5:]
            else:
                if self.stray is None and line[0] != ":":
                    self.stray = line  # event:, id:, retry: or not SSE at all
                continue  # a comment, such as ": keep-alive"
            self.seen_data = True
            if pending:
                obj = self._next_line(data)
            else:
                try:
                    obj = loads(data)
                except ValueError:
                    if self._unparsed(data):
                        return
                    continue
            if obj.__class__ is dict:
                yield obj
            elif self.done:
                return

    def _blank_line(self) -> bool:
        """The blank line that ends an event whose data never parsed: True at `[DONE]`; else
        the event was malformed, and is dropped, never guessed at."""
        data = "\n".join(self._pending)
        self._pending.clear()
        if data.strip() == "[DONE]":
            self.done = True
        return self.done

    def _unparsed(self, data: str) -> bool:
        """A data line that is not JSON: `[DONE]` (True), or the first line of a multi-line
        event, or a broken one that the next blank line drops."""
        if data.strip() == "[DONE]":
            self.done = True
        else:
            self._pending.append(data)
        return self.done

    def _next_line(self, data: str) -> Any:
        """A data line after an unparsed one: `[DONE]`, the next line of the event, or the next
        event on a server that sends no blank lines. None while the event is incomplete."""
        if data.strip() == "[DONE]":
            self.done = True
            return None
        return _join_pending(self._pending, data)


def _join_pending(pending: list[str], line: str) -> Any:
    """A data line after an unparsed one: either the next line of a multi-line event, or a new
    event after a malformed line on a server that sends no blank lines. Returns the value to
    handle, or None when the event is still incomplete."""
    pending.append(line)
    try:
        obj = json.loads("\n".join(pending))
    except ValueError:
        pass
    else:
        pending.clear()
        return obj
    if line[:1] == "{":
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        pending.clear()  # what came before was malformed: dropped
        return obj
    return None
