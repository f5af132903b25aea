"""The script language: what a test queues for the server to answer (`Reply`, `SSE`, `Raw`,
`Error`, `EmptyBody`, `Completion`, `Generating`, and `Delayed` for the other routes), the tool calls in
them (`call`), and the requests it reads back (`Received`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .sse import (
    DEFAULT_MODEL,
    finish_chunk,
    reasoning_chunks,
    role_chunk,
    text_chunks,
    tool_call_chunks,
    usage_chunk,
)

# --------------------------------------------------------------------------- responses


@dataclass
class SSE:
    """A streamed answer. `drop_after`: close the connection after that many events (no [DONE]);
    `silence_after`: after that many events, send nothing more until the server closes.
    `chunked=False` frames the body with `Connection: close` instead of chunked encoding."""

    chunks: Sequence[dict[str, Any] | str | bytes] = ()
    done: bool = True
    delay: float = 0.0
    drop_after: int | None = None
    silence_after: int | None = None
    chunked: bool = True
    crlf: bool = False
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def drop_after(n: int, chunks: Sequence[dict[str, Any] | str | bytes], **kw: Any) -> SSE:
    """Stream `n` events of `chunks`, then close the connection."""
    return SSE(chunks, drop_after=n, **kw)


def silence_after(
    n: int = 0, chunks: Sequence[dict[str, Any] | str | bytes] = (), **kw: Any
) -> SSE:
    """Send the headers and `n` events, then hang until the server closes (`n=0`: silence right
    after the headers)."""
    return SSE(chunks, silence_after=n, **kw)


@dataclass
class Raw:
    """Bytes written exactly as given: one write per piece, `delay` seconds apart, so that each
    piece arrives as its own TCP read. `drop=True` closes the connection without ending the body."""

    pieces: Sequence[bytes] | bytes
    delay: float = 0.005
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    chunked: bool = True
    drop: bool = False


@dataclass
class Error:
    """An HTTP error. The body is `{"error": {"message": ...}}` unless `body` is given (a dict is
    sent as JSON, a str or bytes as they are)."""

    status: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class EmptyBody:
    """HTTP 200 and nothing else: llama-cpp-python's answer to a streamed request with tools.
    `then_close`: as llama-cpp-python does, the connection is closed after it, though kept alive
    by the headers; a next request sent on it is read and gets no answer."""

    chunked: bool = False
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    then_close: bool = False


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str
    id: str | None = None


def call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> Call:
    """A tool call for `Reply` and `Completion`; a dict of arguments is dumped to JSON."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return Call(name, arguments, id)


def _call_id(c: Call, i: int, seq: int) -> str:
    return c.id if c.id is not None else f"call_s{seq}_{i}"


@dataclass
class Completion:
    """A non-streamed chat completion. `body` replaces the whole JSON when given."""

    content: str | None = "ok"
    tool_calls: Sequence[Call] = ()
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    finish_reason: str | None = None
    usage: tuple[int, int] | None = (10, 5)
    body: Any = None
    status: int = 200

    def to_json(self, model: str = DEFAULT_MODEL, seq: int = 0) -> Any:
        if self.body is not None:
            return self.body
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            message[self.reasoning_field] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": _call_id(c, i, seq),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for i, c in enumerate(self.tool_calls)
            ]
        finish = self.finish_reason or ("tool_calls" if self.tool_calls else "stop")
        out: dict[str, Any] = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if self.usage is not None:
            p, c = self.usage
            out["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        return out


@dataclass
class Reply:
    """One model answer that adapts to the request: SSE chunks when it asked for a stream, a JSON
    completion otherwise. `split` cuts text, reasoning and arguments into pieces of that many
    characters. Tool calls without an id get `call_s<request>_<i>`, unique within a server."""

    text: str | None = None
    tool_calls: Sequence[Call] = ()
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    split: int | None = 4
    usage: tuple[int, int] | None = (10, 5)
    finish_reason: str | None = None
    delay: float = 0.0

    def chunks(self, seq: int = 0) -> list[dict[str, Any]]:
        out = [role_chunk()]
        if self.reasoning:
            out += reasoning_chunks(self.reasoning, self.split, self.reasoning_field)
        if self.text:
            out += text_chunks(self.text, self.split)
        for i, c in enumerate(self.tool_calls):
            out += tool_call_chunks(_call_id(c, i, seq), c.name, c.arguments, self.split, index=i)
        out.append(
            finish_chunk(self.finish_reason or ("tool_calls" if self.tool_calls else "stop"))
        )
        if self.usage is not None:
            out.append(usage_chunk(*self.usage))
        return out

    def completion(self) -> Completion:
        return Completion(
            content=self.text,
            tool_calls=self.tool_calls,
            reasoning=self.reasoning,
            reasoning_field=self.reasoning_field,
            finish_reason=self.finish_reason,
            usage=self.usage,
        )


@dataclass(eq=False)
class Generating:
    """An answer the server goes on writing after its client has gone, as llama-cpp-python does
    with a non-streamed one. A streamed request gets the headers and the pieces of `shown`, then
    nothing more; a non-streamed one gets nothing. Until `finish()`, the server "generates" and
    answers no other chat request (each waits, recorded, as behind llama-cpp-python's one lock);
    meanwhile it watches the connection, and `hung_up` is set the moment it sees the client
    close it: the server's own record of a hang-up. A client still there at `finish()` gets
    the whole answer, `shown` then `rest`."""

    shown: Sequence[str] = ("Once", " upon")
    rest: str = " a time."
    done: threading.Event = field(default_factory=threading.Event)
    hung_up: threading.Event = field(default_factory=threading.Event)

    def finish(self) -> None:
        self.done.set()

    @property
    def reply(self) -> Reply:
        return Reply("".join(self.shown) + self.rest)


Response = (
    SSE
    | Raw
    | Error
    | EmptyBody
    | Completion
    | Reply
    | Generating
    | list[dict[str, Any] | str | bytes]
    | str
)


# --------------------------------------------------------------------------- recorded requests


@dataclass
class Received:
    """A request the server received. `body` is the parsed JSON (None if it was not JSON)."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any
    raw: bytes
    time: float = field(default_factory=time.monotonic)  # when it arrived

    @property
    def stream(self) -> bool:
        return bool(isinstance(self.body, dict) and self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or []) if isinstance(self.body, dict) else []

    @property
    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.tools]

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __contains__(self, key: str) -> bool:
        return isinstance(self.body, dict) and key in self.body


@dataclass
class Delayed:
    """An answer for `routes` sent after `seconds` (cut short when the server closes)."""

    seconds: float
    answer: Any
