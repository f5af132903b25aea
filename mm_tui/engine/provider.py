"""The OpenAI-compatible streaming client, and the detection of a model server on this machine.

mm talks to whatever serves `POST /chat/completions`: Ollama, llama.cpp, LM Studio, vLLM, Docker
Model Runner, OpenAI. They agree on the shape and differ in the details, so the parser is lenient:
CRLF or LF, comments, multi-line data, events without blank lines between them, a broken event in
the middle (skipped: a guessed tool call is worse than a missing one), reasoning under either of
its two names, tool calls without ids. Retrying is only safe before the first token; after it, a
failure is reported, because replaying would show the person a second, different answer.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import random
import socket
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from mm_tui.core.events import Usage
from mm_tui.engine.model_stream import (
    CONTEXT_ADVICE,
    ModelChunk,
    ModelError,
    ReasoningChunk,
    Retrying,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)

__all__ = [
    "PRESETS",
    "DetectedServer",
    "OpenAIProvider",
    "Preset",
    "detect_local_server",
    "find_preset",
    "list_models",
    "provider_name",
]

USER_AGENT = "mm/0.1"
HOW_TO_POINT = (
    "Start the server, or point mm at a running one with --base-url URL "
    "(or baseUrl in .mm/config.yaml)."
)


# --------------------------------------------------------------------------- presets


@dataclass(frozen=True)
class Preset:
    """A well-known server. `local` presets are probed at start-up; OpenAI is not, since probing
    it would send a request over the internet at every start and it needs a key anyway."""

    name: str
    base_url: str
    local: bool = True


PRESETS: tuple[Preset, ...] = (
    Preset("Ollama", "http://localhost:11434/v1"),
    Preset("Docker Model Runner", "http://localhost:12434/engines/v1"),
    Preset("llama.cpp", "http://localhost:8080/v1"),
    Preset("LM Studio", "http://localhost:1234/v1"),
    Preset("vLLM", "http://localhost:8000/v1"),
    Preset("OpenAI", "https://api.openai.com/v1", local=False),
)

_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"}


def find_preset(name_or_url: str, presets: Sequence[Preset] = PRESETS) -> Preset | None:
    """The preset a person means by a name ("ollama", "lm studio") or a base URL."""
    key = name_or_url.strip().lower().rstrip("/")
    for p in presets:
        if key in (p.name.lower(), p.name.lower().replace(" ", ""), p.base_url.lower()):
            return p
    return None


def provider_name(base_url: str, presets: Sequence[Preset] = PRESETS) -> str:
    """A display name for a server when the configuration gives none: the preset's name when the
    URL is a preset's (any loopback spelling, same port), else the host."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    for p in presets:
        pp = urlsplit(p.base_url)
        same_host = host == pp.hostname or (host in _LOOPBACK and pp.hostname in _LOOPBACK)
        if same_host and parts.port == pp.port:
            return p.name
    return host or base_url


def is_loopback(base_url: str) -> bool:
    return (urlsplit(base_url).hostname or "").lower() in _LOOPBACK


@dataclass(frozen=True)
class DetectedServer:
    name: str
    base_url: str
    models: tuple[str, ...] = ()

    @property
    def model(self) -> str | None:
        """The model mm takes when the configuration names none."""
        return self.models[0] if self.models else None


def model_ids(data: Any) -> list[str] | None:
    """The ids of a `/models` answer, or None when it is not an OpenAI-style list (a web app on
    port 8080 is not a model server)."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list | None):
        return None
    out = []
    for item in data.get("data") or []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out.append(item["id"])
        elif isinstance(item, str):
            out.append(item)
    return out


async def detect_local_server(
    timeout: float = 0.5, presets: Sequence[Preset] | None = None
) -> DetectedServer | None:
    """Probe the local presets' `/models` concurrently; the first preset in table order that
    answers with a model list wins. Bounded by `timeout`, so start-up never waits on a dead port."""
    candidates = [p for p in (PRESETS if presets is None else presets) if p.local]
    if not candidates:
        return None
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout), trust_env=False, headers={"User-Agent": USER_AGENT}
    ) as client:

        async def probe(p: Preset) -> list[str] | None:
            try:
                r = await client.get(p.base_url.rstrip("/") + "/models")
                if r.status_code != 200:
                    return None
                return model_ids(r.json())
            except (httpx.HTTPError, httpx.InvalidURL, ValueError, OSError):
                return None  # whatever goes wrong, detection must not stop start-up

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout + 0.25
        tasks = [asyncio.ensure_future(probe(p)) for p in candidates]
        try:
            # In table order: an earlier preset that is slow to answer still wins, but the wait
            # ends as soon as the outcome is decided, and never after one shared deadline.
            for p, task in zip(candidates, tasks, strict=True):
                try:
                    models = await asyncio.wait_for(task, max(0.0, deadline - loop.time()))
                except TimeoutError:
                    models = None
                if models is not None:
                    return DetectedServer(p.name, p.base_url.rstrip("/"), tuple(models))
            return None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def list_models(base_url: str, api_key: str | None = None, timeout: float = 5.0) -> list[str]:
    """The model ids a server offers (GET {base_url}/models). Raises `ModelError`."""
    headers = {"User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    base = base_url.rstrip("/")
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout), trust_env=not is_loopback(base), headers=headers
    ) as client:
        try:
            r = await client.get(base + "/models")
        except httpx.RequestError as exc:
            raise ModelError(" ".join(connection_problem(base, exc)).strip()) from None
        if r.status_code != 200:
            raise ModelError(
                _status_message(base, "", r.status_code, r.reason_phrase, r.content),
                status=r.status_code,
            )
        try:
            ids = model_ids(r.json())
        except ValueError:
            ids = None
        if ids is None:
            raise ModelError(f"{base}/models did not answer with a list of models")
        return ids


# --------------------------------------------------------------------------- messages


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and what lies beneath it: httpx and anyio wrap the socket's own error."""
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 10:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return out


def connection_problem(base_url: str, exc: BaseException) -> tuple[str, str]:
    """What went wrong, and the hint that follows it (after the count of tries, if any)."""
    causes = _causes(exc)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        why = "the connection timed out"
    elif isinstance(exc, httpx.ConnectError):
        if any(isinstance(c, ConnectionRefusedError) for c in causes):
            why = "connection refused"
        elif any(isinstance(c, socket.gaierror) for c in causes):
            why = f"unknown host {urlsplit(base_url).hostname!r}"
        else:
            why = text
    else:
        return f"the connection to the model server at {base_url} failed: {text}", ""
    return f"could not connect to the model server at {base_url} ({why})", HOW_TO_POINT


def _server_error_text(body: bytes) -> str:
    """The server's own words: OpenAI's {"error": {"message"}} and its common variants."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for key in ("message", "detail", "msg"):
                if isinstance(err.get(key), str):
                    return err[key]
            if isinstance(data.get("detail"), str):
                return data["detail"]
        elif isinstance(err, str):
            return err
    return text[:500]


def _status_message(base_url: str, model: str, status: int, reason: str, body: bytes) -> str:
    said = _server_error_text(body)
    msg = f"the model server answered {status} {reason}".rstrip()
    if said:
        msg += f": {said}"
    if status in (401, 403):
        msg += " (check apiKey, MM_API_KEY or OPENAI_API_KEY)"
    elif status == 404:
        msg += f" (check baseUrl {base_url}" + (f" and model {model!r})" if model else ")")
    elif context_overflow(said):
        msg += f" — {CONTEXT_ADVICE}"
    elif status == 413:
        msg += " (the request is too large for the server: /compact shortens the conversation)"
    return msg


def _retry_after(value: str | None, milliseconds: str | None = None) -> float | None:
    """The server's hint in seconds: `retry-after-ms` (OpenAI's, in milliseconds) when present,
    else `Retry-After` in seconds or as an HTTP date; None for anything else, and the caller
    falls back to exponential backoff."""
    if milliseconds:
        try:
            delay = float(milliseconds) / 1000
            if delay == delay and delay >= 0:  # not NaN
                return delay
        except ValueError:
            pass
    if not value:
        return None
    try:
        delay = float(value)
        return max(0.0, delay) if delay == delay and delay != float("inf") else None
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# How servers say that the conversation no longer fits the model's context: OpenAI and vLLM
# ("maximum context length", code context_length_exceeded), llama.cpp ("exceeds the available
# context size", exceed_context_size_error), LM Studio and Ollama ("context length", "context
# window", "too many tokens"). Such an error is not retried: only a shorter history helps.
CONTEXT_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context size",
    "context window",
    "exceed_context",
    "too many tokens",
    "prompt is too long",
)


def context_overflow(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in CONTEXT_WORDS)


class _Retryable(Exception):
    def __init__(
        self,
        message: str,
        status: int | None = None,
        retry_after: float | None = None,
        hint: str = "",
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.hint = hint
        self.stale = False  # a kept-alive connection the server had closed: retry at once
        self.unreachable = False  # no connection could be made: the server is not there

    @classmethod
    def connection(cls, base_url: str, exc: BaseException) -> _Retryable:
        message, hint = connection_problem(base_url, exc)
        retryable = cls(message, hint=hint)
        # Read or write failed on a connection that was open: most often one the server closed
        # while it sat in the pool (llama-cpp-python closes the connection of its empty 200,
        # though it said keep-alive). The first retry goes at once, on a new connection.
        retryable.stale = isinstance(
            exc, httpx.ReadError | httpx.WriteError | httpx.RemoteProtocolError
        )
        retryable.unreachable = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        return retryable


DROPPED = "the model server closed the stream in the middle of the answer"


class _Replay:
    """What a retried answer repeats of what the person has already seen.

    A stream cut while a tool call's arguments arrive is asked for again (half arguments are
    never run). The new answer starts from the beginning, so its text and reasoning are
    compared with what was shown: the part already shown is dropped, and only what is new goes
    on. If the new answer says something else (a model that samples), the rest of it is shown
    from where it departs, so nothing is ever shown twice."""

    def __init__(self, text: str, thought: str) -> None:
        self._shown = {TextChunk: text, ReasoningChunk: thought}
        self._at = {TextChunk: 0, ReasoningChunk: 0}

    def unseen(self, kind: type, piece: str) -> str:
        shown, at = self._shown[kind], self._at[kind]
        if at >= len(shown):
            return piece
        overlap = shown[at : at + len(piece)]
        if piece.startswith(overlap):
            self._at[kind] = at + len(piece)
            return piece[len(overlap) :]
        same = 0
        while piece[same] == overlap[same]:
            same += 1
        self._at[kind] = len(shown)  # departed: from here on everything is new
        return piece[same:]


# --------------------------------------------------------------------------- the provider


class OpenAIProvider:
    """A `ModelClient` for any OpenAI-compatible chat-completions server."""

    def __init__(
        self,
        base_url: str,
        model: str,
        provider: str = "",
        api_key: str | None = None,
        temperature: float | None = None,
        *,
        retries: int = 4,
        backoff: float = 0.5,
        max_retry_after: float = 30.0,
        connect_timeout: float = 10.0,
        read_timeout: float | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.provider = provider or provider_name(self.base_url)
        self.temperature = temperature
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self._url = self.base_url + "/chat/completions"
        self._headers = {
            "Accept": "text/event-stream",
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        }
        self._encoded: dict[int, tuple[dict[str, Any], bytes]] = {}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._owns_client = client is None
        # The read timeout is off by default: a local model may think for minutes before its
        # first token, and the turn loop's watchdog is the one that decides when silence is too
        # long (it cancels us, which this client never blocks).
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(
                connect=connect_timeout, read=read_timeout, write=60.0, pool=60.0
            ),
            trust_env=not is_loopback(self.base_url),
            follow_redirects=True,
        )
        # The kinds of request (`_kind`) that this server answers with an empty 200 when they
        # stream: once seen, such requests go non-streamed (see "llama-cpp-python" below).
        self._no_stream: set[str] = set()
        self._usage_option = True  # False once the server has refused stream_options
        self._tool_choice = True  # False once the server has refused tool_choice
        self._calls_made = 0

    # -- public -----------------------------------------------------------------------------

    async def read_context_window(self) -> Any:
        """The model's context window as this server reports it (a `ContextWindow`), or None."""
        from mm_tui.engine.context_window import read_context_window

        key = self._headers.get("Authorization", "").removeprefix("Bearer ") or None
        return await read_context_window(self.base_url, self.model, api_key=key)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    def _body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        stream: bool,
        choice: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": stream,
        }
        if stream and self._usage_option:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = tools
            if choice and self._tool_choice:
                body["tool_choice"] = choice
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def _encode(self, payload: dict[str, Any]) -> bytes:
        """The request's JSON body. The chat-completions protocol sends the whole history every
        time (8.9 MB after 2,000 calls of 4 KB, 54 ms to encode, on the loop that also runs the
        window); a message never changes once in the history, so each is encoded once and the
        body is joined from the pieces."""
        known = self._encoded
        encoded: dict[int, tuple[dict[str, Any], bytes]] = {}
        parts = []
        for message in payload["messages"]:
            key = id(message)
            hit = known.get(key)
            if hit is None or hit[0] is not message:
                hit = (message, _json_bytes(_sendable_message(message)))
            encoded[key] = hit
            parts.append(hit[1])
        self._encoded = encoded  # what left the history is forgotten
        rest = _json_bytes({k: v for k, v in payload.items() if k != "messages"})
        head = rest[:-1] + b"," if len(rest) > 2 else b"{"
        return b"".join((head, b'"messages":[', b",".join(parts), b"]}"))

    def _refused_tool_choice(self, exc: ModelError, payload: dict[str, Any]) -> bool:
        """A server that refuses `tool_choice` (400 naming it): True when the request should be
        sent again without it; it is never sent to this server again."""
        if exc.status == 400 and "tool_choice" in exc.message and "tool_choice" in payload:
            self._tool_choice = False
            payload.pop("tool_choice")
            return True
        return False

    def _next_call_id(self) -> str:
        n = self._calls_made
        self._calls_made += 1
        return f"call_{n}"

    def _retrying(self, attempt: int, error: _Retryable) -> Retrying:
        """The retry after the failed try number `attempt` (from 0): when, and why, to say."""
        if attempt == 0 and error.stale:
            delay = 0.0
        elif error.retry_after is not None:
            delay = min(error.retry_after, self.max_retry_after)
        else:
            base = self.backoff * (2**attempt)
            delay = base + random.uniform(0, base / 2)
        return Retrying(attempt + 2, self.retries + 1, delay, error.message, error.unreachable)

    def _gave_up(self, error: _Retryable, attempts: int) -> ModelError:
        msg = error.message
        if attempts > 1:
            if error.hint and msg.endswith(")"):  # "(connection refused; gave up after 5 tries)"
                msg = msg[:-1] + f"; gave up after {attempts} tries)"
            else:
                msg += f" (gave up after {attempts} tries)"
        if error.hint:
            msg += f". {error.hint}"
        return ModelError(msg, status=error.status, unreachable=error.unreachable)

    async def _check_status(self, resp: httpx.Response) -> None:
        status = resp.status_code
        if status < 300:
            return
        body = await resp.aread()
        msg = _status_message(self.base_url, self.model, status, resp.reason_phrase, body)
        if context_overflow(msg):  # some servers say it with a 500: retrying cannot help
            said = body.decode("utf-8", errors="replace")
            raise ModelError(msg, status=status, overflow=True, server_text=said)
        if status in (408, 425, 429) or status >= 500:
            headers = resp.headers
            delay = _retry_after(headers.get("retry-after"), headers.get("retry-after-ms"))
            raise _Retryable(msg, status, delay)
        raise ModelError(msg, status=status)

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        """Yield the chunks of one answer, the last a `StreamEnd`. Raises `ModelError`."""
        if tools and self._tool_choice:
            return self._with_tools(messages, tools)
        return self._ask(messages, tools, None)

    def _kind(self, tools: list[dict[str, Any]], choice: str | None) -> str:
        if not tools:
            return "plain"
        return (choice if self._tool_choice else None) or "tools"

    def _ask(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: str | None
    ) -> AsyncIterator[ModelChunk]:
        if self._kind(tools, choice) in self._no_stream:
            return self._complete(messages, tools, choice)
        return self._stream(messages, tools, choice)

    async def _with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        """An answer that may call the tools (`tool_choice: "auto"`). When it is empty (no
        text, no call, a plain stop), the model chose to answer in words and the server lost
        them: it is asked once more with `tool_choice: "none"`, and that answer is the answer."""
        said = False
        # aclosing: a consumer that stops early (a guard, a cancelled turn) closes the request
        # beneath at once, not when the garbage collector gets to it.
        async with aclosing(self._ask(messages, tools, "auto")) as answer:
            async for item in answer:
                if item.__class__ is StreamEnd:
                    end: StreamEnd = item  # type: ignore[assignment]
                    if not said and not end.tool_calls and end.finish_reason == "stop":
                        break
                elif item.__class__ is not Retrying:
                    said = True
                yield item
            else:
                return
        async with aclosing(self._ask(messages, tools, "none")) as again:
            async for item in again:
                if item.__class__ is StreamEnd:
                    last: StreamEnd = item  # type: ignore[assignment]
                    item = StreamEnd(last.finish_reason, last.tool_calls, end.usage + last.usage)
                yield item

    # -- streaming --------------------------------------------------------------------------

    async def _stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: str | None
    ) -> AsyncIterator[ModelChunk]:
        payload = self._body(messages, tools, True, choice)
        loads = json.loads
        new = object.__new__
        setattr_ = object.__setattr__
        attempt = 0
        shown: list[str] = []  # text yielded, over every attempt
        thought: list[str] = []  # reasoning yielded, over every attempt
        replay: _Replay | None = None
        while True:
            # The state of one attempt. Everything is a local variable: this is the hot path.
            yielded = False  # the person has seen part of this answer: retried only mid-call
            done = False  # [DONE] arrived
            seen_data = False  # any data line at all (an empty 200 has none)
            stray: str | None = None  # the first line that is not SSE, for the error message
            finish: str | None = None
            usage: Any = None
            calls: dict[int, list[Any]] = {}  # index -> [id, name, arguments so far]
            error: _Retryable | None = None
            try:
                async with self._client.stream(
                    "POST", self._url, content=self._encode(payload), headers=self._headers
                ) as resp:
                    await self._check_status(resp)
                    ctype = resp.headers.get("content-type", "")
                    if ctype.split(";")[0].strip().lower() == "application/json":
                        # A server that ignores `stream: true` and answers in one piece.
                        for item in self._from_completion(await resp.aread()):
                            yield item
                        return
                    pending: list[str] = []  # data lines of an event not parsed yet
                    async with aclosing(_lines(resp)) as reads:
                        async for lines in reads:
                            for line in lines:
                                if not line:  # half the lines: test it first
                                    if not pending:
                                        continue
                                    # The blank line ends an event whose data never parsed.
                                    data = "\n".join(pending)
                                    pending.clear()
                                    if data.strip() == "[DONE]":
                                        done = True
                                        break
                                    continue  # a malformed event: skipped, never guessed at
                                if line.startswith("data: "):
                                    data = line[6:]
                                elif line.startswith("data:"):
                                    data = line[5:]
                                else:
                                    if stray is None and line[0] != ":":
                                        stray = line  # event:, id:, retry: or not SSE at all
                                    continue  # a comment, such as ": keep-alive"
                                seen_data = True
                                if pending:
                                    if data.strip() == "[DONE]":
                                        done = True
                                        break
                                    obj = _join_pending(pending, data)
                                    if obj is None:
                                        continue
                                else:
                                    try:
                                        obj = loads(data)
                                    except ValueError:
                                        if data.strip() == "[DONE]":
                                            done = True
                                            break
                                        # The first line of a multi-line event, or a broken
                                        # one that the next blank line drops.
                                        pending.append(data)
                                        continue
                                if obj.__class__ is not dict:
                                    continue
                                try:
                                    choices = obj.get("choices")
                                    if choices:
                                        choice = choices[0]
                                        delta = choice.get("delta")
                                        text = delta and delta.get("content")
                                        if text and len(delta) == 1 and text.__class__ is str:
                                            # The common case: a delta of text and nothing else.
                                            # Built without the frozen dataclass's __init__,
                                            # which alone costs more than the rest of this path.
                                            if replay is not None:
                                                # not `continue`: the chunk's finish_reason and
                                                # usage below still count
                                                text = replay.unseen(TextChunk, text)
                                            if text:
                                                item = new(TextChunk)
                                                setattr_(item, "text", text)
                                                yielded = True
                                                shown.append(text)
                                                yield item
                                        elif delta:
                                            reasoning = delta.get("reasoning_content") or delta.get(
                                                "reasoning"
                                            )
                                            for kind, text, sink in (
                                                (ReasoningChunk, reasoning, thought),
                                                (TextChunk, delta.get("content"), shown),
                                            ):
                                                if not text:
                                                    continue
                                                text = _as_text(text)
                                                if replay is not None:
                                                    text = replay.unseen(kind, text)
                                                if text:
                                                    item = new(kind)
                                                    setattr_(item, "text", text)
                                                    yielded = True
                                                    sink.append(text)
                                                    yield item
                                            pieces = delta.get("tool_calls")
                                            if pieces:
                                                for piece in pieces:
                                                    update = _merge_tool_piece(calls, piece)
                                                    if update is not None:
                                                        yielded = True
                                                        yield update
                                        reason = choice.get("finish_reason")
                                        if reason:
                                            finish = reason
                                    elif "error" in obj:
                                        raw = json.dumps(obj)
                                        said = _server_error_text(raw.encode())
                                        overflow = context_overflow(said)
                                        if overflow:
                                            said += f" — {CONTEXT_ADVICE}"
                                        raise ModelError(
                                            "the model server reported an error: " + said,
                                            after_tokens=yielded,
                                            overflow=overflow and not yielded,
                                            server_text=raw,
                                        )
                                    found = obj.get("usage")
                                    if found:
                                        usage = found
                                except (AttributeError, TypeError, KeyError, IndexError):
                                    continue  # a chunk of an unexpected shape: skipped
                            if done:
                                break
            except _Retryable as exc:
                error = exc
            except httpx.RequestError as exc:
                if finish is None:  # with a finish_reason the answer is whole: keep it
                    detail = str(exc) or type(exc).__name__
                    if calls:  # cut while a tool call was composed: ask again
                        error = _Retryable(f"{DROPPED}, in a tool call ({detail})")
                    elif yielded:
                        raise ModelError(f"{DROPPED} ({detail})", after_tokens=True) from None
                    else:
                        error = _Retryable.connection(self.base_url, exc)
            except ModelError as exc:
                # A server that refuses stream_options (it only costs us the usage figures):
                # ask again without it, once, and never send it to this server again.
                if exc.status == 400 and "stream_options" in exc.message and self._usage_option:
                    self._usage_option = False
                    payload.pop("stream_options", None)
                    continue
                if self._refused_tool_choice(exc, payload):
                    continue
                raise
            if error is None:
                if done or finish is not None:
                    yield self._end(finish, calls, usage)
                    return
                if calls:
                    error = _Retryable(f"{DROPPED}, in a tool call")
                elif yielded:
                    raise ModelError(DROPPED, after_tokens=True)
                elif not seen_data:
                    if stray is not None and not stray.startswith(("event:", "id:", "retry:")):
                        raise ModelError(
                            f"the model server at {self.base_url} did not answer with "
                            f"server-sent events: {stray[:200]!r}"
                        )
                    # An empty 200: llama-cpp-python's answer to a streamed request whose answer
                    # is a tool call. Ask again without streaming, and from now on ask requests
                    # of this kind that way directly.
                    self._no_stream.add(self._kind(tools, choice))
                    async for item in self._complete(messages, tools, choice):
                        yield item
                    return
                else:
                    error = _Retryable(
                        f"the model server at {self.base_url} closed the stream before answering"
                    )
            if attempt >= self.retries:
                gave_up = self._gave_up(error, attempt + 1)
                gave_up.after_tokens = bool(shown or thought)
                raise gave_up
            retrying = self._retrying(attempt, error)
            if retrying.delay:  # a stale pooled connection is replaced at once, unsaid
                yield retrying
                await asyncio.sleep(retrying.delay)
            attempt += 1
            if shown or thought:
                replay = _Replay("".join(shown), "".join(thought))

    def _end(self, finish: str | None, calls: dict[int, list[Any]], usage: Any) -> StreamEnd:
        tool_calls = []
        for index in sorted(calls):
            call_id, name, arguments = calls[index]
            if not name:
                continue  # arguments without a name cannot be run; never guess one
            tool_calls.append(ToolCall(call_id or self._next_call_id(), name, arguments))
        return StreamEnd(finish, tuple(tool_calls), _usage(usage))

    # -- non-streaming ----------------------------------------------------------------------

    async def _complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: str | None
    ) -> AsyncIterator[ModelChunk]:
        payload = self._body(messages, tools, False, choice)
        headers = {**self._headers, "Accept": "application/json"}
        attempt = 0
        while True:
            try:
                resp = await self._client.post(
                    self._url, content=self._encode(payload), headers=headers
                )
                await self._check_status(resp)
                items = self._from_completion(resp.content)
                break
            except ModelError as exc:
                if self._refused_tool_choice(exc, payload):
                    continue
                raise
            except _Retryable as exc:
                error = exc
            except httpx.RequestError as exc:
                error = _Retryable.connection(self.base_url, exc)
            if attempt >= self.retries:
                raise self._gave_up(error, attempt + 1)
            retrying = self._retrying(attempt, error)
            if retrying.delay:  # a stale pooled connection is replaced at once, unsaid
                yield retrying
                await asyncio.sleep(retrying.delay)
            attempt += 1
        for item in items:
            yield item

    def _from_completion(self, body: bytes) -> list[ModelChunk]:
        """A whole JSON completion as the chunks a stream would have given."""
        try:
            data = json.loads(body) if body.strip() else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ModelError(
                f"the model server at {self.base_url} answered with "
                + ("an empty body" if not body.strip() else "something that is not JSON")
            )
        if "error" in data and not data.get("choices"):
            said = _server_error_text(body)
            overflow = context_overflow(said)
            if overflow:
                said += f" — {CONTEXT_ADVICE}"
            raise ModelError(
                "the model server reported an error: " + said,
                overflow=overflow,
                server_text=body.decode("utf-8", errors="replace"),
            )
        out: list[ModelChunk] = []
        calls: dict[int, list[Any]] = {}
        finish = None
        choices = data.get("choices") or []
        if choices and isinstance(choices[0], dict):
            choice = choices[0]
            finish = choice.get("finish_reason")
            message = choice.get("message") or choice.get("delta") or {}
            if isinstance(message, dict):
                reasoning = message.get("reasoning_content") or message.get("reasoning")
                if reasoning:
                    out.append(ReasoningChunk(_as_text(reasoning)))
                if message.get("content"):
                    out.append(TextChunk(_as_text(message["content"])))
                for i, tc in enumerate(message.get("tool_calls") or []):
                    if isinstance(tc, dict):
                        tc = {"index": i, **tc}
                        update = _merge_tool_piece(calls, tc)
                        if update is not None:
                            out.append(update)
        out.append(self._end(finish, calls, data.get("usage")))
        return out


# --------------------------------------------------------------------------- llama-cpp-python
#
# What its server (with `--chat_format chatml-function-calling`, the format that knows tools) does
# that others do not, met by the end-to-end tests (tests/e2e/), each kept by a test against the
# scripted server in tests/test_provider.py:
#
# - Without `tool_choice` it leaves the tools out of the prompt: the model never hears of them.
#   mm sends `tool_choice: "auto"` with the tools (OpenAI's own default when tools are given);
#   a server that refuses the field (400 naming it) is asked again without it, from then on.
# - Asked to stream an answer that turns out to be a tool call, it fails on its side and the
#   client receives HTTP 200 with an empty body: mm asks again without streaming, and asks that
#   kind of request non-streamed from then on.
# - With `tool_choice: "auto"`, the model's choice of a text answer goes through a grammar that
#   admits only a function name or the end, so the text is always empty: an empty answer (no
#   text, no call, finish_reason "stop") is asked again with `tool_choice: "none"`, which it
#   answers in words, streamed.
# - It refuses (500, a validation error) an assistant message whose `content` is null, which the
#   OpenAI format allows beside tool calls: such messages are sent with `content: ""`.
# - It closes the connection of its empty 200 although it said keep-alive: the request that goes
#   next on it fails at once, and is sent again at once (`_Retryable.stale`), not after a backoff.
# - Not worked around: its template leaves `tool` messages out of the prompt, so the model never
#   reads a tool's result; and it sends no usage in a stream, so a turn's recap shows no tokens.


def _sendable_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message as sent: an assistant message with `content: null` gets `""` instead."""
    if message.get("content", "") is None and message.get("role") == "assistant":
        return {**message, "content": ""}
    return message


def _json_bytes(data: Any) -> bytes:
    """Compact JSON, as httpx would encode it; a lone surrogate from a model goes as a \\u
    escape, which only ASCII-escaped JSON carries."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(data, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- parsing helpers


async def _lines(resp: httpx.Response) -> AsyncIterator[list[str]]:
    """The response's lines, one list per network read (one yield per read, not per line: this is
    the hot path), then a last list that flushes an unterminated line and ends a pending event.
    Bytes are decoded incrementally, so a character split across reads arrives whole; CR, LF and
    CRLF all end a line, even when a CRLF is split across reads."""
    decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
    tail = ""
    skip_lf = False  # the last read ended with CR: an LF opening the next one completes a CRLF
    async for raw in resp.aiter_bytes():
        text = decode(raw)
        if not text:
            continue
        if skip_lf:
            skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    continue
        if tail:
            text = tail + text
        if "\r" in text:
            skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        tail = lines.pop()
        if lines:
            yield lines
    tail += decode(b"", final=True)
    yield [tail, ""] if tail else [""]


def _join_pending(pending: list[str], line: str) -> Any:
    """A data line after an unparsed one: either the next line of a multi-line event, or a new
    event after a malformed line on a server that sends no blank lines. Returns the object to
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


def _merge_tool_piece(calls: dict[int, list[Any]], piece: Any) -> ToolCallChunk | None:
    """Fold one `delta.tool_calls[i]` piece into the calls being assembled; return the update to
    show, or None when the piece carried neither name nor arguments."""
    if piece.__class__ is not dict:
        return None
    index = piece.get("index")
    call_id = piece.get("id")
    if index.__class__ is not int:
        # Some servers leave the index out: a new id opens a new call, no id continues the last.
        index = None
        if call_id:
            for i, slot in calls.items():
                if slot[0] == call_id:
                    index = i
                    break
            if index is None:
                index = max(calls) + 1 if calls else 0
        else:
            index = max(calls) if calls else 0
    slot = calls.get(index)
    if slot is None:
        slot = calls[index] = ["", "", ""]
    if call_id and not slot[0]:
        slot[0] = str(call_id)
    fn = piece.get("function")
    if fn.__class__ is not dict:
        return None
    changed = False
    name = fn.get("name")
    if name and name.__class__ is str:
        current = slot[1]
        if not current or name.startswith(current):
            # First piece, or a server that repeats the whole (growing) name in every piece.
            changed = name != current
            slot[1] = name
        elif not current.endswith(name):
            slot[1] = current + name
            changed = True
    args = fn.get("arguments")
    if args:
        if args.__class__ is not str:
            args = json.dumps(args)  # a server that sends an object instead of its JSON text
        slot[2] += args
        changed = True
    if not changed:
        return None
    return ToolCallChunk(index, slot[1], slot[2])


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": "..."}]
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in value)
    return str(value)


def _usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage()
    try:
        return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))
    except (TypeError, ValueError):
        return Usage()
