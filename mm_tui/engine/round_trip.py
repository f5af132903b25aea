"""One model round trip: the request (with the tools ready now, after room is made for it), the
streamed answer passed on as it comes, the watchdog that stops a silent server, the provider's
retries said, a refusal of a request too big learned from and asked once more, and the answer
recorded with its tool calls (each under an id of its own). A reply without structured calls
may hold calls written as text (engine/text_calls.py): they become calls like the others, and
the stream's gate (engine/call_gate.py) keeps such a reply from being shown as an answer first.
What the model said before a failure stays in the history."""

from __future__ import annotations

import asyncio
import json
from dataclasses import field
from typing import TYPE_CHECKING, Any

from mm_tui.config import Settings
from mm_tui.core.events import (
    ComposingToolCall,
    ModelRetrying,
    ServerFinishing,
    TextDelta,
    Thinking,
    ThoughtDelta,
)
from mm_tui.core.frozen import mutable
from mm_tui.engine.ask_style import AskStyle
from mm_tui.engine.call_ids import CallIds, distinct_ids
from mm_tui.engine.context_keeper import ContextKeeper
from mm_tui.engine.guards import RunawayDetector
from mm_tui.engine.model_stream import (
    ModelChunk,
    ModelClient,
    ModelError,
    ReasoningChunk,
    Retrying,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)
from mm_tui.engine.recorder import SessionRecorder
from mm_tui.engine.server_watch import ServerWatch
from mm_tui.engine.turn_state import Emit, StopTurn, TurnState

if TYPE_CHECKING:
    from mm_tui.engine.call_gate import CallGate
    from mm_tui.engine.think_tags import ThinkSplitter

WATCHDOG_STEPS = 64  # a sign of life moves the watchdog once it has fallen this share behind


@mutable
class _Answer:
    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
    end: StreamEnd | None = None
    gate: CallGate | None = None  # None: no tools declared, no call to read from the text
    think: ThinkSplitter | None = None  # None once the reply's start showed no `<think>`


class RoundTrip:
    def __init__(
        self,
        settings: Settings,
        client: ModelClient,
        recorder: SessionRecorder,
        context: ContextKeeper,
        server: ServerWatch,
    ) -> None:
        self.settings = settings
        self.client = client
        self.recorder = recorder
        self.context = context
        self.server = server
        self.call_ids = CallIds()  # the history's, kept as it grows

    @property
    def asking(self) -> AskStyle:
        """How the requests are made, as the model's probe found (start-up turns it on): the
        context keeper's, for compaction asks the same server in the same way."""
        return self.context.asking

    @asking.setter
    def asking(self, asking: AskStyle) -> None:
        self.context.asking = asking

    async def generate(self, emit: Emit, state: TurnState) -> list[ToolCall]:
        """Stream the model's answer; the tool calls it asked for (none: the turn ends)."""
        await self.asking.settle(self.client, emit)
        await self.context.make_room(emit)
        answer = _Answer()
        tools = self.asking.declared(self.context.tools())
        sent = self.context.meter.chars(self.context.messages(), tools)
        refused = await self._stream(emit, state, answer, tools)
        if refused is not None:  # too big for the window: learn it, make room, ask once more
            state.overflowed = True
            if not self.context.learn_from_refusal(refused, sent, emit):
                raise StopTurn("error", f"[error: {refused.message}]", "provider")
            return await self.generate(emit, state)
        state.overflowed = False
        return await self._record(emit, state, answer, sent, tools)

    async def _stream(
        self, emit: Emit, state: TurnState, answer: _Answer, tools: list[dict[str, Any]]
    ) -> ModelError | None:
        """Read the answer into `answer` under the watchdog. Returns the server's refusal of a
        request too big when it may be asked again; any other failure ends the turn."""
        from mm_tui.engine.call_gate import CallGate  # loaded after ready: `prepare`
        from mm_tui.engine.think_tags import ThinkSplitter

        answer.gate = CallGate(tools) if tools else None
        answer.think = ThinkSplitter()
        reading = _Reading(self, emit, answer)
        stream = self.client.stream(*self.asking.request(self.context.messages(), tools))
        try:
            async with asyncio.timeout(reading.timeout) as watchdog:
                reading.arm(watchdog)
                async for chunk in stream:
                    reading.take(chunk)
        except TimeoutError:  # a whole answer may just be long: the server goes on with it
            reading.settle_thinking()
            self.recorder.keep_partial(answer.text, answer.thought)
            self.server.cancelled(reading.loop.time(), reading.first_word)
            raise StopTurn("error", reading.silence(), "generation") from None
        except ModelError as exc:
            reading.settle_thinking()
            return self._failed(exc, emit, state, answer)
        except asyncio.CancelledError:
            reading.settle_thinking()
            self.recorder.keep_partial(answer.text, answer.thought)
            if answer.end is None:  # the server may go on writing it (server_watch.py)
                self.server.cancelled(reading.loop.time(), reading.first_word)
            raise
        finally:
            if answer.end is None and answer.gate is not None:  # failed: show what was held
                held = answer.gate.finish(None)
                if held:
                    emit(TextDelta(text=held))
            reading.disarm()
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await asyncio.shield(aclose())
        return None

    def _failed(self, exc: ModelError, emit: Emit, state: TurnState, answer: _Answer) -> ModelError:
        """The request failed: the server's state said, and the refusal returned when it is
        one that making room may cure (once, before any word); else the turn ends."""
        self.recorder.keep_partial(answer.text, answer.thought)
        if exc.unreachable and self.server.answering is not False:
            self.server.say(False, exc.message, emit)
        elif exc.status is not None and self.server.answering is not True:
            self.server.say(True, "", emit)  # it answered, if only with an error
        if exc.status is not None:
            self.server.answered()
        if not (exc.overflow and not answer.text and not state.overflowed):
            raise StopTurn("error", f"[error: {exc.message}]", "provider") from None
        return exc

    async def _record(
        self,
        emit: Emit,
        state: TurnState,
        answer: _Answer,
        sent: int,
        tools: list[dict[str, Any]],
    ) -> list[ToolCall]:
        """The answer in the history, with its calls; the context counted from the server's
        usage."""
        end = answer.end
        if end is None:
            self.recorder.keep_partial(answer.text, answer.thought)
            raise StopTurn(
                "error", "[error: the model's answer ended without a final chunk]", "provider"
            )
        state.usage = state.usage + end.usage
        await self.context.observed(end.usage.prompt_tokens, sent, emit)
        session = self.recorder.session
        calls, content = end.tool_calls, "".join(answer.text)
        if answer.gate is not None:
            calls, content = _text_calls(content, calls, tools, answer.gate, emit)
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        calls = distinct_ids(calls, session.messages, self.call_ids) if calls else ()
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ]
        session.add_message(message, thought="".join(answer.thought) or None)
        state.pending = list(calls)
        if calls:  # else the turn ends here, and its end saves the session
            self.recorder.save(emit)
        self.context.report(emit)
        return list(calls)

    def retrying(self, retrying: Retrying, emit: Emit) -> None:
        if retrying.unreachable and self.server.answering is not False:
            self.server.say(False, retrying.reason, emit)
        emit(
            ModelRetrying(
                attempt=retrying.attempt,
                attempts=retrying.attempts,
                delay=retrying.delay,
                reason=retrying.reason,
            ),
        )


def _text_calls(
    text: str,
    structured: tuple[ToolCall, ...],
    tools: list[dict[str, Any]],
    gate: CallGate,
    emit: Emit,
) -> tuple[tuple[ToolCall, ...], str]:
    """A reply without structured calls: the calls it wrote as text, and its text without
    them. Either way, what the gate held and is still to be shown, shown."""
    from mm_tui.engine.text_calls import find_calls

    found = None if structured else find_calls(text, tools)
    rest = gate.finish(found, text)
    if rest:
        emit(TextDelta(text=rest))
    if found is None:
        return structured, text
    calls = tuple(
        ToolCall(
            f"text_call_{n}",
            call.name,
            json.dumps(call.arguments, ensure_ascii=False),
            from_text=True,
        )
        for n, call in enumerate(found.calls)
    )
    return calls, found.rest


class _Reading:
    """One request's stream as it is read: each chunk passed on, and the watchdog moved on by
    every sign of life. After a cancelled request whose answer may not have ended, a first
    word slow to come means the server is finishing the old answer (server_watch.py): said
    (`ServerFinishing`), and the watchdog waits for that answer's end too, within a bound."""

    def __init__(self, trip: RoundTrip, emit: Emit, answer: _Answer) -> None:
        self.trip = trip
        self.emit = emit
        self.answer = answer
        self.loop = asyncio.get_running_loop()
        self.runaway = RunawayDetector()
        self.watchdog: asyncio.Timeout | None = None
        self.timeout = trip.settings.watchdog_timeout
        self.started = self.loop.time()
        self.first_word: float | None = None  # seconds from the request to its first chunk
        self.finishing = False  # ServerFinishing said, no word since
        self.retried = False
        self._slow: asyncio.TimerHandle | None = None
        emit(Thinking(state="Thinking"))

    def arm(self, watchdog: asyncio.Timeout) -> None:
        """The watchdog, and after a cancel the timer of a first word slow to come."""
        self.watchdog = watchdog
        slow = self.trip.server.slow_after(self.started, self.timeout)
        if slow is not None:
            self._slow = self.loop.call_later(slow, self._behind)

    def disarm(self) -> None:
        if self._slow is not None:
            self._slow.cancel()
            self._slow = None

    def _behind(self) -> None:
        """No first word yet: the request waits behind the cancelled answer. The watchdog
        waits for that answer's end, at most until the bound of `finish_deadline`."""
        self._slow = None
        watchdog = self.watchdog
        assert watchdog is not None
        deadline = max(self.trip.server.finish_deadline(self.timeout), watchdog.when() or 0.0)
        watchdog.reschedule(deadline)
        self.finishing = True
        self.emit(ServerFinishing(seconds=round(deadline - self.started)))

    def silence(self) -> str:
        """The watchdog's words: the silence it ended, and behind what."""
        if self.finishing:
            waited = self.loop.time() - self.started
            return (
                f"[error: the model sent nothing for {waited:.0f}s after a cancelled answer, "
                "the longest mm waits for the server to finish one — turn stopped by the "
                "watchdog; check that the model server is still running, or raise "
                "watchdogTimeout for a slow model]"
            )
        return (
            f"[error: the model sent nothing for {self.timeout:g}s — turn stopped by the "
            "watchdog; check that the model server is still running, or raise "
            "watchdogTimeout for a slow model]"
        )

    def take(self, chunk: ModelChunk) -> None:
        watchdog = self.watchdog
        assert watchdog is not None
        if chunk.__class__ is Retrying:  # the wait is the provider's, not silence
            watchdog.reschedule(self.loop.time() + self.timeout + chunk.delay)  # type: ignore[union-attr]
            self.trip.retrying(chunk, self.emit)  # type: ignore[arg-type]
            self.retried = True
            return
        self._alive(watchdog)
        answer = self.answer
        if isinstance(chunk, TextChunk):
            think = answer.think
            if think is None:
                self._text(chunk.text)
            else:
                self._split(think.feed(chunk.text))
                if think.done:
                    answer.think = None
        elif isinstance(chunk, ReasoningChunk):
            self._thought(chunk.text)
        elif isinstance(chunk, ToolCallChunk):
            problem = self.runaway.check(chunk.arguments)
            if problem:
                self.trip.recorder.keep_partial(answer.text, answer.thought)
                raise StopTurn("error", problem, "generation")
            self.emit(
                ComposingToolCall(index=chunk.index, name=chunk.name, chars=len(chunk.arguments))
            )
        elif isinstance(chunk, StreamEnd):
            self.settle_thinking()
            answer.end = chunk

    def _text(self, text: str) -> None:
        self.answer.text.append(text)
        gate = self.answer.gate
        shown = text if gate is None else gate.feed(text)
        if shown:
            self.emit(TextDelta(text=shown))

    def _thought(self, text: str) -> None:
        self.answer.thought.append(text)
        self.emit(ThoughtDelta(text=text))

    def _split(self, pieces: list[tuple[bool, str]]) -> None:
        for thinking, piece in pieces:
            self._thought(piece) if thinking else self._text(piece)

    def settle_thinking(self) -> None:
        """The reply ended (or broke off): what `<think>` held is said as what it was."""
        think, self.answer.think = self.answer.think, None
        if think is not None:
            self._split(think.finish())

    def _alive(self, watchdog: asyncio.Timeout) -> None:
        """A chunk came: the watchdog counts again, and the status line says "Thinking" again
        after a retry or the wait behind a cancelled answer."""
        server = self.trip.server
        if self.first_word is None:  # the server is free: no old answer before this one
            self.first_word = self.loop.time() - self.started
            self.disarm()
            server.answered()
            self.retried |= self.finishing
            self.finishing = False
        # Moved only when it moves by a step: each move is a new timer of the event loop, and a
        # chunk comes per token (the watchdog then ends the silence up to a step early).
        deadline = self.loop.time() + self.timeout
        when = watchdog.when()
        if when is None or abs(deadline - when) >= self.timeout / WATCHDOG_STEPS:
            watchdog.reschedule(deadline)
        if self.retried:
            self.retried = False
            self.emit(Thinking(state="Thinking"))
        if server.answering is not True:
            server.say(True, "", self.emit)


def prepare() -> None:
    """Load the readers of a reply (calls written as text, `<think>` tags) in a thread: window
    mode calls it once ready, so that ready does not import them and the first answer does not
    wait for them."""
    from mm_tui.core.preload import preload

    preload("mm-reply-readers", "mm_tui.engine.call_gate", "mm_tui.engine.think_tags")
