"""A scripted OpenAI-compatible server that really listens on 127.0.0.1 and streams real SSE.

Model traffic is tested against real sockets, not mocks of httpx, because the bugs worth catching
live in the bytes: events split across TCP reads, CRLF line ends, keep-alive comments, UTF-8
characters cut in half, a connection dropped mid-answer, a server that goes silent. The server runs
in a background thread (a `ThreadingHTTPServer`), so the same object serves an async pytest test in
this process and an `mm -p` started as a subprocess.

    with ScriptedServer() as server:
        server.script(
            Reply(tool_calls=[call("bash", {"command": "ls"})]),   # first request
            Reply("There are two files."),                           # second request
        )
        ... point the client at server.base_url ...
        assert server.requests[1].messages[-1]["role"] == "tool"

A response is one of:

- a list of chunk dicts (built with `text_chunks`, `tool_call_chunks`, `reasoning_chunks`,
  `finish_chunk`, `usage_chunk`...): streamed as SSE and closed with `data: [DONE]`;
- `SSE(chunks, ...)`: the same with knobs: delay between writes, no [DONE], `drop_after` N events
  (close the connection), `silence_after` N events (hang until the server closes), chunked or
  connection-close framing;
- `Raw(pieces)`: bytes written exactly, one write per piece with a small delay, for awkward splits;
- `Error(status, message, headers=...)`: an HTTP error with an OpenAI-style error body;
- `EmptyBody()`: HTTP 200 with an empty body (llama-cpp-python's answer to a streamed request
  that carries tools);
- `Completion(...)`: a non-streamed JSON completion (what a `stream: false` request expects);
- `Reply(...)`: text, reasoning and tool calls that become SSE or a JSON completion depending on
  the request's `stream` flag; the easy way to script a conversation (a plain str is short for
  `Reply(text)`).

When the script is empty the server answers with `on_empty(request)`, by default the text "ok".

Run it by hand: `python tests/scripted_server.py "Hello there"` prints its base URL and answers
every request with that text.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "Call",
    "Completion",
    "EmptyBody",
    "Error",
    "Raw",
    "Received",
    "Reply",
    "SSE",
    "ScriptedServer",
    "call",
    "chunk",
    "closed_port_url",
    "drop_after",
    "encode_sse",
    "finish_chunk",
    "interleave",
    "reasoning_chunks",
    "role_chunk",
    "silence_after",
    "split_bytes",
    "split_text",
    "text_chunks",
    "tool_call_chunks",
    "usage_chunk",
]

DEFAULT_MODEL = "scripted-model"


# --------------------------------------------------------------------------- chunk builders


def split_text(text: str, split: int | None) -> list[str]:
    """Pieces of `split` characters each (the whole text when `split` is None or 0)."""
    if not split or split <= 0 or len(text) <= split:
        return [text]
    return [text[i : i + split] for i in range(0, len(text), split)]


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    """One `chat.completion.chunk` with a single choice; the server fills in id, model, created."""
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]}


def role_chunk() -> dict[str, Any]:
    """The opening chunk most servers send: the role and an empty content."""
    return chunk({"role": "assistant", "content": ""})


def text_chunks(text: str, split: int | None = None) -> list[dict[str, Any]]:
    """`delta.content` pieces of `split` characters (one chunk when `split` is None)."""
    return [chunk({"content": piece}) for piece in split_text(text, split)]


def reasoning_chunks(
    text: str, split: int | None = None, field: str = "reasoning_content"
) -> list[dict[str, Any]]:
    """Reasoning pieces; `field` is "reasoning_content" (DeepSeek, vLLM, llama.cpp) or
    "reasoning" (Ollama, OpenRouter)."""
    return [chunk({field: piece}) for piece in split_text(text, split)]


def tool_call_chunks(
    id: str | None,
    name: str,
    arguments: str | dict[str, Any],
    split: int | None = 1,
    index: int = 0,
) -> list[dict[str, Any]]:
    """One tool call the way OpenAI streams it: a first piece with id, type and name (and empty
    arguments), then the arguments in pieces of `split` characters. `id=None` leaves the id out,
    as some servers do."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    first: dict[str, Any] = {"index": index, "type": "function"}
    if id is not None:
        first["id"] = id
    first["function"] = {"name": name, "arguments": ""}
    out = [chunk({"tool_calls": [first]})]
    if arguments:
        for piece in split_text(arguments, split):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    return out


def finish_chunk(reason: str | None = "stop") -> dict[str, Any]:
    return chunk({}, reason)


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The extra last chunk that `stream_options.include_usage` asks for: no choices, usage."""
    return {
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def interleave(*lists: Sequence[Any]) -> list[Any]:
    """Round-robin merge, for tool calls whose pieces arrive interleaved across indexes."""
    out: list[Any] = []
    longest = max((len(seq) for seq in lists), default=0)
    for i in range(longest):
        for seq in lists:
            if i < len(seq):
                out.append(seq[i])
    return out


def _full_chunk(obj: dict[str, Any], model: str) -> dict[str, Any]:
    if "choices" in obj and "object" not in obj:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            **obj,
        }
    return obj


def encode_sse(
    chunks: Iterable[dict[str, Any] | str | bytes],
    done: bool = True,
    model: str = DEFAULT_MODEL,
    crlf: bool = False,
) -> list[bytes]:
    """Each chunk as one SSE event (`data: ...` and a blank line): a dict as JSON, a str as the
    data payload verbatim, bytes as they are. One element per event, then `data: [DONE]`."""
    events = []
    for item in chunks:
        if isinstance(item, bytes):
            events.append(item)
            continue
        payload = item if isinstance(item, str) else json.dumps(_full_chunk(item, model))
        events.append(f"data: {payload}\n\n".encode())
    if done:
        events.append(b"data: [DONE]\n\n")
    if crlf:
        events = [e.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") for e in events]
    return events


def split_bytes(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`data` cut at the given offsets (out-of-range and repeated offsets are ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    out, start = [], 0
    for p in points:
        out.append(data[start:p])
        start = p
    out.append(data[start:])
    return out


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


Response = (
    SSE | Raw | Error | EmptyBody | Completion | Reply | list[dict[str, Any] | str | bytes] | str
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


# --------------------------------------------------------------------------- the server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a cancelled test, a closed pool) is normal here, not news."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small writes leave at once, as separate TCP segments
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection)
        self._drop_next = False  # EmptyBody(then_close=True) was the last answer on it

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        self.server.owner._untrack(self.connection)

    # -- plumbing ---------------------------------------------------------------------------

    def _start(self, status: int, headers: dict[str, str], chunked: bool) -> None:
        self.send_response(status)
        names = {k.lower() for k in headers}
        for k, v in headers.items():
            self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif "content-length" not in names:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.flush()

    def _write(self, data: bytes, chunked: bool) -> None:
        if not data:
            return
        if chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def _end(self, chunked: bool) -> None:
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _abort(self) -> None:
        """Close the connection now, mid-body: the client sees a dropped stream."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(status)
        has_type = False
        for k, v in (headers or {}).items():
            has_type |= k.lower() == "content-type"
            self.send_header(k, v)
        if not has_type:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    # -- routes -----------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        owner = self.server.owner
        path = urlsplit(self.path).path
        if path.rstrip("/").endswith("/models") and owner.models is not None:
            owner._count_models()
            if owner.models_delay:
                time.sleep(owner.models_delay)
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "owned_by": "scripted"} for m in owner.models
                    ],
                },
            )
        else:
            self._send_json(404, {"error": {"message": f"no route for GET {path}"}})

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path
        if self._drop_next:
            self._abort()  # read, never answered, not recorded
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if not path.endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route for POST {path}"}})
            return
        req = Received("POST", path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
        if (
            owner.api_key is not None
            and req.headers.get("authorization") != f"Bearer {owner.api_key}"
        ):
            owner._record(req)
            self._send_json(401, {"error": {"message": "Incorrect API key provided"}})
            return
        if body is None:
            owner._record(req)
            self._send_json(400, {"error": {"message": "the body is not JSON"}})
            return
        seq, response = owner._record_and_pick(req)
        try:
            self._serve(response, req, seq)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away; nothing to tell it

    def _serve(self, response: Response, req: Received, seq: int) -> None:
        owner = self.server.owner
        if isinstance(response, str):
            response = Reply(response)
        if isinstance(response, list):
            response = SSE(response)
        if isinstance(response, Reply):
            if req.stream:
                response = SSE(response.chunks(seq), delay=response.delay)
            else:
                response = response.completion()
        if isinstance(response, Completion):
            self._send_json(response.status, response.to_json(owner.model_name, seq))
        elif isinstance(response, Error):
            if response.body is None:
                body: Any = {
                    "error": {
                        "message": response.message,
                        "type": "scripted",
                        "code": response.status,
                    }
                }
            elif isinstance(response.body, str):
                body = response.body.encode()
            else:
                body = response.body
            self._send_json(response.status, body, response.headers)
        elif isinstance(response, EmptyBody):
            headers = dict(response.headers)
            if not response.chunked:
                headers["Content-Length"] = "0"
            self._start(200, headers, response.chunked)
            self._end(response.chunked)
            self._drop_next = response.then_close
        elif isinstance(response, Raw):
            pieces = [response.pieces] if isinstance(response.pieces, bytes) else response.pieces
            self._start(response.status, response.headers, response.chunked)
            for i, piece in enumerate(pieces):
                if i and response.delay:
                    time.sleep(response.delay)
                self._write(piece, response.chunked)
            if response.drop:
                self._abort()
            else:
                self._end(response.chunked)
        elif isinstance(response, SSE):
            self._serve_sse(response)
        else:  # pragma: no cover - a mistake in a test's script
            raise TypeError(f"cannot serve {response!r}")

    def _serve_sse(self, sse: SSE) -> None:
        owner = self.server.owner
        events = encode_sse(sse.chunks, done=sse.done, model=owner.model_name, crlf=sse.crlf)
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **sse.headers}
        self._start(sse.status, headers, sse.chunked)
        for i, event in enumerate(events):
            if sse.drop_after is not None and i >= sse.drop_after:
                self._abort()
                return
            if sse.silence_after is not None and i >= sse.silence_after:
                owner._stopping.wait()
                self._abort()
                return
            if i and sse.delay:
                time.sleep(sse.delay)
            self._write(event, sse.chunked)
        if sse.drop_after is not None:
            self._abort()
            return
        if sse.silence_after is not None:
            owner._stopping.wait()
            self._abort()
            return
        self._end(sse.chunked)


class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 with a queue of scripted answers.

    `base_url` ends in `prefix` ("/v1"); GET {prefix}/models lists `models` (None: 404, as a
    server that is not OpenAI-compatible would). `api_key` makes it demand that bearer token.
    `on_empty(request)` answers when the script is used up (default: the text "ok").
    """

    def __init__(
        self,
        *script: Response,
        models: Sequence[str] | None = (DEFAULT_MODEL,),
        prefix: str = "/v1",
        api_key: str | None = None,
        models_delay: float = 0.0,
        on_empty: Callable[[Received], Response] | None = None,
    ) -> None:
        self.models = list(models) if models is not None else None
        self.model_name = self.models[0] if self.models else DEFAULT_MODEL
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.api_key = api_key
        self.models_delay = models_delay
        self.on_empty = on_empty or (lambda req: Reply("ok"))
        self.requests: list[Received] = []
        self.models_requests = 0
        self._queue: deque[Response] = deque(script)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def conversation(cls, *replies: Response, **kw: Any) -> ScriptedServer:
        """A server that answers a multi-step conversation: one response per request, in order
        (tool calls, then the answer that follows the tool results...). Same as the constructor."""
        return cls(*replies, **kw)

    # -- life -------------------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            daemon=True,
            name=f"scripted-server:{self.port}",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; hanging (silent) answers end and open connections are cut."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}{self.prefix}"

    # -- script -----------------------------------------------------------------------------

    def script(self, *responses: Response) -> ScriptedServer:
        """Queue responses: the next requests on /chat/completions get them, in order."""
        with self._lock:
            self._queue.extend(responses)
        return self

    @property
    def pending(self) -> int:
        """Scripted responses not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[Received]:
        """Block until `n` chat requests have arrived (for subprocess tests); raises TimeoutError.
        From async code: `await asyncio.to_thread(server.wait_for_requests, n)`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.requests)} request(s) arrived, not {n}")
                self._cond.wait(left)
            return list(self.requests)

    # -- used by the handler ----------------------------------------------------------------

    def _record(self, req: Received) -> int:
        with self._cond:
            self.requests.append(req)
            self._cond.notify_all()
            return len(self.requests) - 1

    def _record_and_pick(self, req: Received) -> tuple[int, Response]:
        seq = self._record(req)
        with self._lock:
            response = self._queue.popleft() if self._queue else None
        if response is None:
            response = self.on_empty(req)
        return seq, response

    def _count_models(self) -> None:
        with self._lock:
            self.models_requests += 1

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)


def closed_port_url(prefix: str = "/v1") -> str:
    """A base URL on 127.0.0.1 where nothing listens (a port just bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{prefix}"


if __name__ == "__main__":
    text = " ".join(sys.argv[1:]) or "ok"
    with ScriptedServer(on_empty=lambda req: Reply(text)) as srv:
        print(srv.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
