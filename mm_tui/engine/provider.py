"""The OpenAI-compatible streaming client: the HTTP side of asking a model server for an answer.

mm talks to whatever serves `POST /chat/completions`: Ollama, llama.cpp, LM Studio, vLLM, Docker
Model Runner, OpenAI. They agree on the shape and differ in the details. The parts:

- `sse` turns the bytes of the answer into JSON objects (line ends, comments, multi-line data,
  events without blank lines, broken events skipped);
- `chunk_assembly` turns the objects into chunks (deltas under either name, tool calls in
  pieces, finish reason, usage) and ends the answer with the assembled calls;
- `servers` knows the well-known servers and finds one on this machine;
- `server_errors` words what a server refused;
- `retries` says what a failure means for the next try: which statuses and cut streams are
  retried, after how long (the server's wait, a stale connection, a server not there);
- this module sends the request, tries again while tries are left, and meets the quirks of
  servers that do not quite follow the protocol (see "llama-cpp-python" below).

Retrying is only safe before the first token; after it, a failure is reported, because replaying
would show the person a second, different answer. The one exception is a stream cut while a tool
call is composed: half arguments are never run, so it is asked again, and what the new answer
repeats of the text already shown is not shown twice (`chunk_assembly.Replay`).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from mm_tui.engine import tls
from mm_tui.engine.chunk_assembly import ChunkAssembler
from mm_tui.engine.completions import from_completion, is_json
from mm_tui.engine.kept_connection import read_to_the_end
from mm_tui.engine.model_stream import ModelChunk, ModelError, Retrying, StreamEnd
from mm_tui.engine.request_body import RequestBody
from mm_tui.engine.retries import (
    EmptyAnswer,
    Retryable,
    check_status,
    cut_stream,
    gave_up,
    retry_delay,
    unfinished_stream,
)
from mm_tui.engine.servers import USER_AGENT, is_loopback, provider_name
from mm_tui.engine.sse import SseDecoder

if TYPE_CHECKING:
    # Imported where a request is made: start-up makes the provider without loading httpx,
    # httpcore and anyio, which `prepare` loads after ready (docs/performance.md).
    import httpx

    from mm_tui.engine.paced_reads import PacedBackend
    from mm_tui.engine.server_tokens import ServerTokenizer

__all__ = ["OpenAIProvider", "prepare"]


def prepare() -> None:
    """Load httpx and what its first request loads (in that order), and make the TLS context,
    in threads: window mode calls it once ready, so the first request does not wait for them."""
    from mm_tui.core.preload import preload

    preload("mm-http", *HTTP_MODULES)
    tls.prepare()


HTTP_MODULES = ("httpx", "httpcore._backends.anyio")
"""The HTTP client's modules and those its first request loads, in the order to load them
(the model probe loads them the same way: engine/model_probe.py)."""


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
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        # The name a model's requests go out under, when not its own: Ollama's copy with the
        # configured window (engine/ollama_window.py). Shared with siblings: one server.
        self.served: dict[str, str] = {}
        self.provider = provider or provider_name(self.base_url)
        self.temperature = temperature
        self.body = RequestBody()  # what it sends, and what the server refused of it
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.sleep = sleep  # the wait before a retry (a test gives one that records it)
        self._url = self.base_url + "/chat/completions"
        self._headers = {
            "Accept": "text/event-stream",
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
        }
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._owns_client = client is None
        self._http = client  # made at the first request (`_client`) unless given
        self.paced: PacedBackend | None = None  # its paced connections, once made
        self._timeouts = (connect_timeout, read_timeout)
        # The kinds of request (`_kind`) that this server answers with an empty 200 when they
        # stream: once seen, such requests go non-streamed (see "llama-cpp-python" below).
        self._no_stream: set[str] = set()
        self._calls_made = 0
        # What is known of the server: None at first, False once it could not be reached (by
        # start-up's check, or when a request gave up), True once it answered. A request to a
        # server known not to answer is not retried (`_next_try`).
        self.answering: bool | None = None
        self._tokenizer: ServerTokenizer | None = None  # made at the first count

    # -- public -----------------------------------------------------------------------------

    def sibling(self) -> OpenAIProvider:
        """A client of the same server, with the same key and options, whose model can change
        apart from this one's (an ACP session's `/model`, while other sessions share this one).
        It makes its own connections, unless this one was given its HTTP client."""
        twin = copy.copy(self)
        twin.body = RequestBody()  # its own encoded messages; what the server refused, kept
        twin.body.usage_option = self.body.usage_option
        twin.body.tool_choice = self.body.tool_choice
        twin._headers = dict(self._headers)
        twin._no_stream = set(self._no_stream)
        if self._owns_client:
            twin._http, twin.paced = None, None
        twin._tokenizer = None
        return twin

    def ask_unstreamed(self, kinds: tuple[str, ...]) -> None:
        """Send these kinds of request (`_kind`) non-streamed from the first: the model's probe
        found that this server loses them streamed (engine/model_probe.py)."""
        self._no_stream.update(kinds)

    @property
    def wire_model(self) -> str:
        """The name the requests name: the model's own, or the copy `served` maps it to."""
        return self.served.get(self.model, self.model)

    @property
    def api_key(self) -> str | None:
        return self._headers.get("Authorization", "").removeprefix("Bearer ") or None

    async def read_context_window(self) -> Any:
        """The model's context window as this server reports it (a `ContextWindow`), or None."""
        from mm_tui.engine.context_window import read_context_window as read

        return await read(self.base_url, self.model, api_key=self.api_key, provider=self.provider)

    async def count_tokens(self, text: str) -> int | None:
        """`text`'s tokens as the server counts them (`/tokenize`), or None where it cannot."""
        if self._tokenizer is None:
            from mm_tui.engine.server_tokens import ServerTokenizer

            self._tokenizer = ServerTokenizer(self.base_url, self.api_key)
        return await self._tokenizer.count(text, self.model)

    async def aclose(self) -> None:
        if self._owns_client and self._http is not None:
            await self._http.aclose()

    @property
    def _client(self) -> httpx.AsyncClient:
        """The HTTP client, made at the first request (with the shared TLS context)."""
        if self._http is None:
            import httpx

            connect, read = self._timeouts
            # The read timeout is off by default: a local model may think for minutes before
            # its first token, and the turn loop's watchdog is the one that decides when silence
            # is too long (it cancels us, which this client never blocks).
            from mm_tui.engine.paced_reads import pace

            trust_env = not is_loopback(self.base_url)
            transport = httpx.AsyncHTTPTransport(verify=tls.tls_context(), trust_env=trust_env)
            self.paced = pace(transport)  # a streamed answer read in batches (paced_reads.py)
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(connect=connect, read=read, write=60.0, pool=60.0),
                trust_env=trust_env,
                follow_redirects=True,
                transport=transport,
            )
        return self._http

    def _next_call_id(self) -> str:
        n = self._calls_made
        self._calls_made += 1
        return f"call_{n}"

    def _next_try(
        self, attempt: int, error: Retryable, after_tokens: bool = False, replaced: bool = True
    ) -> Retrying:
        """The retry after the failed try number `attempt`, or the error that ends the answer
        when the tries are spent (`after_tokens`: part of the answer was shown). A server
        already known not to answer (`answering` False: at start-up, or at the last request)
        is not tried again for ten seconds: its refusal is said at once."""
        if error.unreachable and self.answering is False:
            raise gave_up(error, attempt + 1)
        if attempt >= self.retries:
            spent = gave_up(error, attempt + 1)
            spent.after_tokens = after_tokens
            if error.unreachable:
                self.answering = False
            raise spent
        delay = retry_delay(attempt, error, replaced, self.backoff, self.max_retry_after)
        return Retrying(attempt + 2, self.retries + 1, delay, error.message, error.unreachable)

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        """Yield the chunks of one answer, the last a `StreamEnd`. Raises `ModelError`."""
        if tools and self.body.tool_choice:
            return self._with_tools(messages, tools)
        return self._ask(messages, tools, None)

    def _kind(self, tools: list[dict[str, Any]], choice: str | None) -> str:
        if not tools:
            return "plain"
        return (choice if self.body.tool_choice else None) or "tools"

    def _ask(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: str | None
    ) -> AsyncGenerator[ModelChunk, None]:
        if self._kind(tools, choice) in self._no_stream:
            return self._complete(messages, tools, choice)
        return self._stream(messages, tools, choice)

    async def _with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncGenerator[ModelChunk, None]:
        """An answer that may call the tools (`tool_choice: "auto"`). When it is empty (no
        text, no call, a plain stop), the model chose to answer in words and the server lost
        them: it is asked once more with `tool_choice: "none"`, and that answer is the answer."""
        said = False
        # aclosing: a consumer that stops early (a guard, a cancel) closes the request at once.
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
    ) -> AsyncGenerator[ModelChunk, None]:
        """A streamed answer, its tries one after the other: the assembler lives across them,
        so that a retried answer shows only what the person has not seen yet."""
        payload = self.body.make(
            messages, tools, True, choice, model=self.wire_model, temperature=self.temperature
        )
        answer = ChunkAssembler()
        attempt = 0
        replaced = False  # a stale pooled connection, replaced once per request
        while True:
            answer.begin()
            try:
                async with aclosing(self._one_try(payload, answer)) as batches:
                    async for chunks in batches:
                        for item in chunks:
                            yield item
                return
            except EmptyAnswer:
                break
            except Retryable as exc:
                error = exc
            except ModelError as exc:
                if self.body.refused_option(exc, payload):
                    continue
                raise
            retrying = self._next_try(attempt, error, answer.shown_any, replaced)
            if not retrying.delay:  # a stale pooled connection is replaced at once, unsaid
                replaced = True
                continue
            yield retrying
            await self.sleep(retrying.delay)
            attempt += 1
        # llama-cpp-python's empty 200 (see below): asked again without streaming, and from now
        # on requests of this kind are asked that way directly.
        self._no_stream.add(self._kind(tools, choice))
        async for item in self._complete(messages, tools, choice):
            yield item

    async def _one_try(
        self, payload: dict[str, Any], answer: ChunkAssembler
    ) -> AsyncGenerator[list[ModelChunk], None]:
        """One request of a streamed answer: its chunks, one list per network read (one yield
        per read, not per chunk: this is the hot path), the last list ending with the
        `StreamEnd`. Raises `Retryable` when the request may be sent again, `EmptyAnswer`
        when the server said nothing at all, `ModelError` otherwise (an error event inside the
        stream after the chunks before it)."""
        import httpx

        sse = SseDecoder()
        try:
            async with self._client.stream(
                "POST", self._url, content=self.body.encode(payload), headers=self._headers
            ) as resp:
                self.answering = True
                await check_status(resp, self.base_url, self.model)
                if is_json(resp):  # a server that ignores `stream: true`
                    yield self._from_completion(await resp.aread())
                    return
                chunks = resp.aiter_bytes()
                async for raw in chunks:
                    yield answer.add(sse.feed(raw))
                    if answer.failure is not None or sse.done:
                        break
                else:
                    yield answer.add(sse.close())
                if sse.done:  # the connection is kept for the next request
                    await read_to_the_end(chunks)
                if answer.failure is not None:
                    raise answer.failure
        except httpx.RequestError as exc:
            cut = cut_stream(exc, answer, self.base_url)
            if cut is not None:
                raise cut from None
        if not sse.done and answer.finish is None:
            raise unfinished_stream(sse, answer, self.base_url)
        yield [answer.end(self._next_call_id)]

    # -- non-streaming ----------------------------------------------------------------------

    async def _complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: str | None
    ) -> AsyncGenerator[ModelChunk, None]:
        """A non-streamed answer, for the servers that lose streamed ones (llama-cpp-python):
        retried like a stream that failed before its first token."""
        import httpx

        payload = self.body.make(
            messages, tools, False, choice, model=self.wire_model, temperature=self.temperature
        )
        headers = {**self._headers, "Accept": "application/json"}
        attempt = 0
        replaced = False
        while True:
            try:
                resp = await self._client.post(
                    self._url, content=self.body.encode(payload), headers=headers
                )
                self.answering = True
                await check_status(resp, self.base_url, self.model)
                items = self._from_completion(resp.content)
                break
            except ModelError as exc:
                if self.body.refused_tool_choice(exc, payload):
                    continue
                raise
            except Retryable as exc:
                error = exc
            except httpx.RequestError as exc:
                error = Retryable.connection(self.base_url, exc)
            retrying = self._next_try(attempt, error, replaced=replaced)
            if not retrying.delay:  # a stale pooled connection is replaced at once, unsaid
                replaced = True
                continue
            yield retrying
            await self.sleep(retrying.delay)
            attempt += 1
        for item in items:
            yield item

    def _from_completion(self, body: bytes) -> list[ModelChunk]:
        return from_completion(body, self.base_url, self._next_call_id)


# What llama-cpp-python's server does that others do not, and how mm meets each (kept by tests
# against the scripted server in tests/engine/test_provider.py): docs/architecture.md,
# "llama-cpp-python".
