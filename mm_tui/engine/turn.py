"""The agent loop: model, then tools, then model again, until an answer or `maxTurns`.

`Engine.run_turn(text, emit)` emits the events of `events.py` through `emit` (a plain callable:
the window posts them as Textual messages, line mode prints them) and returns the `TurnEnded`
it emitted last. The history is saved after every change, so nothing of a turn is lost when the
process dies in the middle of it.

Cancellation: `Engine.cancel()` (Esc, Ctrl-C, /abort) cancels the turn's own task; the running
tool is stopped, every call of the model's last message gets a result (`[error: cancelled]`), so
the history stays well formed, and the turn ends with the stop reason `cancelled`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from mm_tui.config import Settings
from mm_tui.core.asking import NO_AGENTS, AgentAsker
from mm_tui.core.events import (
    ComposingToolCall,
    ContextUsage,
    Counters,
    Decision,
    EngineError,
    Event,
    HistoryCompacted,
    HistoryShortened,
    ModelRetrying,
    PermissionRequested,
    ServerState,
    StopReason,
    TextDelta,
    Thinking,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)
from mm_tui.core.questions import Questions
from mm_tui.core.redact import Redactor
from mm_tui.core.text import one_line
from mm_tui.engine.chunk_assembly import distinct_ids
from mm_tui.engine.context import SHRINK_TO, ContextMeter, summary_request
from mm_tui.engine.context_window import ContextWindow, window_from_error
from mm_tui.engine.guards import LOOP_WARNING, LoopDetector, RunawayDetector, loop_stop_message
from mm_tui.engine.instructions import Instructions
from mm_tui.engine.model_stream import (
    CONTEXT_ADVICE,
    ModelClient,
    ModelError,
    ReasoningChunk,
    Retrying,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)
from mm_tui.engine.permissions import Permissions
from mm_tui.engine.session import Session
from mm_tui.tools.base import CANCELLED, NothingToAsk, ToolCancelled, ToolContext
from mm_tui.tools.registry import ToolRegistry

Emit = Callable[[Event], None]

DEFAULT_SYSTEM_PROMPT = """\
You are mm, a coding agent working in a terminal, in the folder {cwd}.
Use the tools to look at the code, run commands and change files; do not guess what a file
holds, read it. Keep changes small and say what you did in a few sentences. When a tool reports
an error, read it and adapt instead of repeating the same call."""


BUSY = "Waiting for the server: it may still be writing the cancelled answer"
"""The status while the request after a cancelled one waits for its first word."""
UNKNOWN_WINDOW = (
    "the model's context window is unknown: mm learns it from the server's first refusal of a "
    "request too big; set contextWindow in the config to tell it"
)


class _StopTurn(Exception):  # noqa: N818 - control flow inside the loop
    def __init__(self, reason: StopReason, message: str, where: str) -> None:
        super().__init__(message)
        self.reason: StopReason = reason
        self.message = message
        self.where = where


@dataclass
class _TurnState:
    counters: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    pending: list[ToolCall] = field(default_factory=list)  # calls of the last message not answered
    titles: dict[str, str] = field(default_factory=dict)  # calls whose line a front end shows
    history: list[dict[str, Any]] = field(default_factory=list)  # as the turn started
    overflowed: bool = False  # the server refused the current request as too big, once

    def count(self, counter: str | None) -> None:
        if counter:
            self.counters[counter] = self.counters.get(counter, 0) + 1


def context_record(context: ContextUsage) -> dict[str, object]:
    """What a turn's record in the journal says of the context: the figure its recap showed
    (a resumed session counts on from it), and whether the server counted any of it."""
    record: dict[str, object] = {"context_used": context.used, "context_window": context.window}
    if context.estimated:
        record["context_estimated"] = True
    return record


class Engine:
    """One agent: a model, its tools, its history and its guards. Front ends hold one each."""

    def __init__(
        self,
        settings: Settings,
        client: ModelClient,
        *,
        cwd: Path,
        session: Session,
        registry: ToolRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        instructions: Instructions | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        self.cwd = cwd
        self.session = session
        self.registry = (
            registry if registry is not None else ToolRegistry.from_settings(settings, cwd)
        )
        self.clock = clock
        # The AGENTS.md files appended to the system prompt (start-up reads them; none here by
        # default), read again for each new session.
        self.instructions = instructions if instructions is not None else Instructions()
        self.permissions = Permissions(settings.yolo)
        self.questions = Questions()  # the permission questions waiting for the person
        self.redactor = Redactor(settings.secret_values())
        session.redactor = self.redactor
        self.loop_detector = LoopDetector()
        self.turn_number = _turns_in(session)
        self._task: asyncio.Task[TurnEnded] | None = None
        self._session_warned = False
        self.meter = ContextMeter()
        # Whether the model server answers: None until known (start-up checks it for a
        # configured server); a front end hears of each change as a ServerState.
        self.server_answering: bool | None = None
        # A request cancelled before its answer ended: the server may go on writing it (a
        # non-streamed one always does: llama-cpp-python finishes it, unread), and the next
        # request waits behind it: said, and given the watchdog's time twice (`_generate`).
        self._server_busy = False
        self._window_unread = False  # the server did not answer at start-up: ask it later
        self._declarations: list[dict[str, Any]] | None = None
        self._declared: object = None  # the registry's version the declarations are of
        self._count_from_journal()
        if not session.messages:
            session.messages.append({"role": "system", "content": self.system_prompt()})

    # -- public ----------------------------------------------------------------------------

    def system_prompt(self) -> str:
        """The configured systemPrompt, else the built-in one, and after it the project
        instructions (AGENTS.md): a configured prompt replaces the built-in one, not them."""
        prompt = self.settings.system_prompt or DEFAULT_SYSTEM_PROMPT.format(cwd=self.cwd)
        return self.instructions.appended_to(prompt)

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def cancel(self) -> bool:
        """Cancel the running turn; True when there was one."""
        if self.busy:
            assert self._task is not None
            self._task.cancel()
            return True
        return False

    def answer(self, agent: str | None, call_id: str, decision: Decision) -> bool:
        """The person's decision on a `PermissionRequested` (this agent's when `agent` is None,
        else an asked agent's); False when no question of that call waits any more."""
        return self.questions.answer(agent, call_id, decision)

    def redacting(self, emit: Emit) -> Emit:
        """`emit` behind this engine's redactor: the words of an error, a retry, a dead server
        or a turn's end can quote what a server answered, and a server that echoes the
        Authorization header it was sent (a proxy, a gateway) quotes the key. The one choke
        point every front end's events pass through (turns, /ask, /compact); a front end that
        listens to the registry outside a turn wraps its listener here too."""
        redact = self.redactor.text

        def send(event: Event) -> None:
            match event:
                case EngineError():
                    event = replace(event, message=redact(event.message))
                case ModelRetrying():
                    event = replace(event, reason=redact(event.reason))
                case ServerState() if event.message:
                    event = replace(event, message=redact(event.message))
                case TurnEnded() if event.error:
                    event = replace(event, error=redact(event.error))
                case _:
                    pass
            emit(event)

        return send

    async def run_turn(self, text: str, emit: Emit) -> TurnEnded:
        """Run one turn to its end. Cancelling the caller cancels the turn too, after the turn
        has put its history in order."""
        return await self._run(self._turn(text, self.redacting(emit)))

    async def run_ask(self, agent: str, prompt: str, emit: Emit) -> TurnEnded:
        """`/ask AGENT …` (window and line mode) and `mm --ask AGENT "…"`: the request goes to
        an agent of mmConfigs through ask_agent's machinery, as a turn of its own (Esc cancels
        it, the recap closes it). The history records it as a /ask exchange, two messages:

            {"role": "user", "content": "/ask AGENT <prompt>"}
            {"role": "assistant", "content": "<what ask_agent would have returned>"}

        The assistant message is the agent's answer truncated to maxOutput, followed on a line
        of its own by the `[ask_agent: …]` error when the call failed or stopped (the error
        alone when nothing was answered) — the text ask_agent returns as a tool result."""
        return await self._run(self._ask_turn(agent, prompt, self.redacting(emit)))

    async def _run(self, turn: Coroutine[Any, Any, TurnEnded]) -> TurnEnded:
        self._task = asyncio.create_task(turn)
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            raise

    def tools(self) -> list[dict[str, Any]]:
        """The tools' declarations, made again only when the registry changed (an MCP server
        became ready or stopped): the context meter measures each list once. Each request of a
        turn declares the tools ready at that moment."""
        version = self.registry.version
        if self._declarations is None or version != self._declared:
            self._declarations = self.registry.declarations()
            self._declared = version
        return self._declarations

    async def learn_context_window(self) -> list[str]:
        """Ask the server for the model's context window (the config's `contextWindow` wins);
        returns the start-up notes that say what was learned."""
        if self.settings.context_window:
            self.meter.window = ContextWindow(
                self.settings.context_window, "contextWindow in the config"
            )
        else:
            reader = getattr(self.client, "read_context_window", None)
            if reader is None:  # the demo model: no window to keep
                return []
            if self.server_answering is False:  # nobody to ask: asked after the first answer
                self._window_unread = True
                return []
            try:
                self.meter.window = await reader()
            except Exception:  # noqa: BLE001 - never a reason not to start
                self.meter.window = None
        window = self.meter.window
        if window is None:
            return [UNKNOWN_WINDOW]
        notes = [f"context window: {window.tokens:,} tokens ({window.source})"]
        if window.note:
            notes.append(window.note)
        return notes

    def context_usage(self) -> ContextUsage | None:
        """How full the model's context is now, or None while the window is unknown (the
        header shows nothing then)."""
        window = self.meter.window
        if window is None:
            return None
        used = self.meter.estimate(self.session.messages, self.tools())
        return ContextUsage(
            used=used, window=window.tokens, source=window.source, estimated=not self.meter.counted
        )

    def _report_context(self, emit: Emit | None) -> None:
        usage = self.context_usage()
        if usage is not None and emit is not None:
            emit(usage)

    async def compact(self, emit: Emit | None = None, *, auto: bool = False) -> str:
        """`/compact`: the model summarises the conversation, and the summary replaces the
        history (the loop detector is kept). Emits `HistoryCompacted` (and `ContextUsage`)
        through `emit`. Returns the summary; a failure raises with its words redacted."""
        try:
            return await self._compact(emit and self.redacting(emit), auto=auto)
        except ModelError as exc:
            if exc.message == (said := self.redactor.text(exc.message)):
                raise
            raise ModelError(said, status=exc.status) from None
        except Exception as exc:
            if str(exc) == (said := self.redactor.text(str(exc))):
                raise
            raise ModelError(said) from None

    async def _compact(self, emit: Emit | None, *, auto: bool) -> str:
        ask = {
            "role": "user",
            "content": "Summarise this conversation so far for your own later use: the task, what "
            "was done, the files and facts that matter, and what is left to do. Be complete but "
            "brief; answer with the summary only.",
        }
        text: list[str] = []
        messages = self.session.messages
        before = self.meter.estimate(messages, self.tools()) if self.meter.window else 0
        request = summary_request(self.meter, messages, ask)
        async with asyncio.timeout(self.settings.watchdog_timeout * 4):
            async for chunk in self.client.stream(request, []):
                if isinstance(chunk, TextChunk):
                    text.append(chunk.text)
        summary = "".join(text).strip()
        if not summary:
            raise ModelError("the model gave an empty summary; the history is unchanged")
        # In the system message, so that user and assistant turns still alternate afterwards.
        system = f"{self.system_prompt()}\n\nSummary of the conversation so far:\n\n{summary}"
        history: list[dict[str, Any]] = [{"role": "system", "content": system}]
        question = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        if auto and question is not None:  # in the middle of a turn: its request goes on
            history.append(question)
        replaced = len(messages)
        self.meter.forget_base()
        after = self.meter.estimate(history, self.tools()) if self.meter.window else 0
        self.session.compact(
            summary, history, auto=auto, tokens={"tokens_before": before, "tokens_after": after}
        )
        if emit is not None:
            emit(
                HistoryCompacted(
                    summary=summary,
                    replaced=replaced,
                    auto=auto,
                    tokens_before=before,
                    tokens_after=after,
                ),
            )
            self._report_context(emit)
        return summary

    async def aclose(self) -> None:
        """mm is exiting: close the model connection and stop what the tools keep running."""
        await self.client.aclose()
        await self.registry.aclose()
        await _closed(self.session)

    def new_session(self, session: Session) -> None:
        """`/new` (a fresh session) or a session reopened: the loop detector and the remembered
        decisions reset; the turn count is the session's own. The session left is closed (its
        journal synced in the writer thread). A fresh session reads the project instructions
        again; a reopened one keeps the system message it had."""
        if session is not self.session:
            self.session.close()
        self.session = session
        session.redactor = self.redactor
        self.loop_detector.reset()
        self.permissions.reset()
        self.turn_number = _turns_in(session)
        self.meter.forget_base()
        self._count_from_journal()
        if not session.messages:  # a new session: AGENTS.md as it is now (it may have changed)
            self.instructions = self.instructions.reread()
            session.messages.append({"role": "system", "content": self.system_prompt()})

    def _count_from_journal(self) -> None:
        """A reopened session: its last turn's end said how full the context was (the server's
        count, and an estimate of what came after it); the count goes on from there, so that
        the header shows on resume what the last turn showed, not a fresh guess at the
        default characters per token."""
        turns = self.session.turns
        used = turns[-1].get("context_used") if turns else None
        if turns and turns[-1].get("context_estimated") is True:
            return  # an estimate at the default ratio, as a fresh one would be: no count under it
        if isinstance(used, int) and not isinstance(used, bool) and used > 0:
            chars = self.meter.chars(self.session.messages, self.tools())
            self.meter.observed(used, chars)

    # -- the turn --------------------------------------------------------------------------

    def _save(self, emit: Emit, change: Callable[[], None] | None = None) -> None:
        """Save the session (after `change`, a Session method that records and saves). A session
        folder that cannot be written costs a warning, never the turn."""
        try:
            (change or self.session.save)()
        except OSError as exc:
            if not self._session_warned:
                self._session_warned = True
                emit(
                    EngineError(
                        where="session",
                        level="warning",
                        message=f"[warning: the session file cannot be written ({exc}) — "
                        "the turn goes on, but this session will not be resumable]",
                    ),
                )

    async def _turn(self, text: str, emit: Emit) -> TurnEnded:
        self.turn_number += 1
        turn = self.turn_number
        started = self.clock()
        state = _TurnState()
        emit(TurnStarted(turn=turn, text=text))
        self.session.messages.append({"role": "user", "content": text})
        state.history = list(self.session.messages)
        self._save(emit)
        reason: StopReason = "end_turn"
        error: str | None = None
        try:
            for _ in range(self.settings.max_turns):
                calls = await self._generate(emit, state)
                if not calls:
                    break
                await self._run_calls(calls, emit, state)
            else:
                reason = "max_turns"
                error = (
                    f"[error: the turn reached maxTurns ({self.settings.max_turns} model round "
                    "trips) — ask again to continue, or raise maxTurns]"
                )
                self._record_error(emit, "generation", error)
        except _StopTurn as stop:
            reason, error = stop.reason, stop.message
            self._record_error(emit, stop.where, stop.message)
        except asyncio.CancelledError:
            reason = "cancelled"
            self._answer_pending(state, CANCELLED, emit)
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        return await self._end_turn(
            emit, turn, started, reason, error, Counters(**state.counters), state.usage
        )

    async def _end_turn(
        self,
        emit: Emit,
        turn: int,
        started: float,
        reason: StopReason,
        error: str | None,
        counters: Counters,
        usage: Usage,
    ) -> TurnEnded:
        """Record the turn in the session file, wait until the journal is on disk (in its
        writer thread: the loop goes on), and tell the front end: the last event."""
        context = self.context_usage()
        if error:  # the words a front end reads back from the returned event, too
            error = self.redactor.text(error)
        ended = TurnEnded(
            turn=turn,
            counters=counters,
            elapsed=self.clock() - started,
            usage=usage,
            stop_reason=reason,
            error=error,
            context_used=context.used if context else 0,
            context_window=context.window if context else None,
            context_estimated=context.estimated if context else False,
        )
        self._save(
            emit,
            lambda: self.session.add_turn(
                counters=counters,
                usage={
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                },
                elapsed=round(ended.elapsed, 3),
                stop_reason=reason,
                extra=context_record(context) if context else None,
            ),
        )
        await self._synced(emit)
        emit(ended)
        return ended

    async def _synced(self, emit: Emit) -> None:
        """Wait for the journal's fsync; a write that failed meanwhile is warned of now."""
        future = self.session.sync()
        if future is not None:
            waiting = asyncio.wrap_future(future)
            try:
                await asyncio.shield(waiting)
            except asyncio.CancelledError:  # the turn ends all the same; the sync goes on
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
            except OSError:
                pass
        self._save(emit)

    async def _ask_turn(self, agent: str, prompt: str, emit: Emit) -> TurnEnded:
        self.turn_number += 1
        turn = self.turn_number
        started = self.clock()
        text = f"/ask {agent} {prompt}".rstrip()
        emit(TurnStarted(turn=turn, text=text))
        self.session.messages.append({"role": "user", "content": text})
        self._save(emit)
        reason: StopReason = "end_turn"
        error: str | None = None
        tool = cast("AgentAsker | None", self.registry.get("ask_agent"))
        ctx = ToolContext(cwd=self.cwd, settings=self.settings, emit=emit, questions=self.questions)
        if tool is None:
            answer = error = NO_AGENTS
        else:
            try:
                asked = await tool.ask(agent, prompt, ctx)
            except asyncio.CancelledError:  # before the agent was reached
                asked = None
            answer = tool.result_text(asked, self.settings.max_output) if asked else ""
            if asked is None or asked.cancelled:
                reason = "cancelled"
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
            elif asked.error is not None:
                error = asked.error
        self.session.messages.append({"role": "assistant", "content": answer})
        if error is not None:
            reason = "error"
            self._record_error(emit, "tool", error)
        return await self._end_turn(emit, turn, started, reason, error, Counters(), Usage())

    def _record_error(self, emit: Emit, where: str, message: str) -> None:
        self._save(emit, lambda: self.session.add_error(where, message))
        emit(EngineError(where=where, message=message))

    def _answer_pending(self, state: _TurnState, output: str, emit: Emit) -> None:
        """Give every call of the model's last message a result, so the history stays well
        formed; a call whose line is already shown is closed as cancelled."""
        for call in state.pending:
            title = state.titles.get(call.id)
            self.session.add_message(
                {"role": "tool", "tool_call_id": call.id, "content": output},
                tool={"status": "cancelled", "elapsed": 0.0, "title": title},
            )
            if title is not None:
                emit(
                    ToolCallFinished(
                        call_id=call.id,
                        tool=call.name,
                        status="cancelled",
                        output=output,
                        elapsed=0.0,
                    ),
                )
        state.pending.clear()

    async def _generate(self, emit: Emit, state: _TurnState) -> list[ToolCall]:
        """One model round trip: stream the answer, return the tool calls it asked for."""
        await self._make_room(emit)
        text: list[str] = []
        thought: list[str] = []
        runaway = RunawayDetector()
        end: StreamEnd | None = None
        timeout = self.settings.watchdog_timeout
        busy = self._server_busy
        if busy:  # the last request was cancelled before its answer ended: see BUSY
            emit(Thinking(state=BUSY))
            timeout += self.settings.watchdog_timeout
        else:
            emit(Thinking(state="Thinking"))
        loop = asyncio.get_running_loop()
        tools = self.tools()
        sent = self.meter.chars(self.session.messages, tools)
        refused: ModelError | None = None
        retried = False
        stream = self.client.stream(self.session.messages, tools)
        try:
            async with asyncio.timeout(timeout) as watchdog:
                async for chunk in stream:
                    if chunk.__class__ is Retrying:  # the wait is the provider's, not silence
                        watchdog.reschedule(loop.time() + timeout + chunk.delay)  # type: ignore[union-attr]
                        self._retrying(chunk, emit)  # type: ignore[arg-type]
                        retried = True
                        continue
                    if busy:  # answering at last: the wait behind the old answer is over
                        busy = self._server_busy = False
                        timeout = self.settings.watchdog_timeout
                        retried = True
                    watchdog.reschedule(loop.time() + timeout)
                    if retried:  # answering at last: the status line says so again
                        retried = False
                        emit(Thinking(state="Thinking"))
                    if self.server_answering is not True:
                        self._server_state(True, "", emit)
                    if isinstance(chunk, TextChunk):
                        text.append(chunk.text)
                        emit(TextDelta(text=chunk.text))
                    elif isinstance(chunk, ReasoningChunk):
                        thought.append(chunk.text)
                        emit(ThoughtDelta(text=chunk.text))
                    elif isinstance(chunk, ToolCallChunk):
                        problem = runaway.check(chunk.arguments)
                        if problem:
                            self._keep_partial(text, thought)
                            raise _StopTurn("error", problem, "generation")
                        emit(
                            ComposingToolCall(
                                index=chunk.index, name=chunk.name, chars=len(chunk.arguments)
                            ),
                        )
                    elif isinstance(chunk, StreamEnd):
                        end = chunk
        except TimeoutError:
            self._keep_partial(text, thought)
            raise _StopTurn(
                "error",
                f"[error: the model sent nothing for {timeout:g}s — turn stopped by the "
                "watchdog; check that the model server is still running, or raise "
                "watchdogTimeout for a slow model]",
                "generation",
            ) from None
        except ModelError as exc:
            self._keep_partial(text, thought)
            if exc.unreachable and self.server_answering is not False:
                self._server_state(False, exc.message, emit)
            elif exc.status is not None and self.server_answering is not True:
                self._server_state(True, "", emit)  # it answered, if only with an error
            if not (exc.overflow and not text and not state.overflowed):
                raise _StopTurn("error", f"[error: {exc.message}]", "provider") from None
            refused = exc
        except asyncio.CancelledError:
            self._keep_partial(text, thought)
            if end is None:
                self._server_busy = True
            raise
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await asyncio.shield(aclose())
        if refused is not None:  # too big for the window: learn it, make room, ask once more
            state.overflowed = True
            if not self._learn_from_refusal(refused, sent, emit):
                raise _StopTurn("error", f"[error: {refused.message}]", "provider")
            return await self._generate(emit, state)
        state.overflowed = False
        if end is None:
            self._keep_partial(text, thought)
            raise _StopTurn(
                "error", "[error: the model's answer ended without a final chunk]", "provider"
            )
        state.usage = state.usage + end.usage
        if self._window_unread:
            self._window_unread = False
            await self.learn_context_window()
        self.meter.observed(end.usage.prompt_tokens, sent)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        calls = distinct_ids(end.tool_calls, self.session.messages) if end.tool_calls else ()
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ]
        self.session.add_message(message, thought="".join(thought) or None)
        state.pending = list(calls)
        if calls:  # else the turn ends here, and its end saves the session
            self._save(emit)
        self._report_context(emit)
        return list(calls)

    def _retrying(self, retrying: Retrying, emit: Emit) -> None:
        if retrying.unreachable and self.server_answering is not False:
            self._server_state(False, retrying.reason, emit)
        emit(
            ModelRetrying(
                attempt=retrying.attempt,
                attempts=retrying.attempts,
                delay=retrying.delay,
                reason=retrying.reason,
            ),
        )

    def _server_state(self, answering: bool, message: str, emit: Emit) -> None:
        self.server_answering = answering
        emit(ServerState(answering=answering, message=message))

    async def _make_room(self, emit: Emit) -> None:
        """Before a request: when it would not fit the window (the answer's reserve kept free),
        shorten old tool outputs, then compact, then give up with the overflow advice."""
        budget = self.meter.budget
        window = self.meter.window
        if budget is None or window is None:
            return
        messages, tools = self.session.messages, self.tools()
        if self.meter.estimate(messages, tools) <= budget:
            return
        room = self.meter.room(messages[:1], tools) or 0
        keep = self.meter.keep_chars(room)
        target = int(budget * SHRINK_TO)
        done = self.meter.shorten_old_outputs(messages, tools, target, keep, self.session.shorten)
        if done.outputs:
            self._save(emit)
            emit(
                HistoryShortened(
                    outputs=done.outputs,
                    chars_cut=done.chars_cut,
                    message=f"shortened {done.outputs} old tool output(s) by "
                    f"{done.chars_cut:,} characters to fit the model's {window.tokens:,}-token "
                    "context; the session journal keeps them whole",
                ),
            )
        tried = "shortening old tool outputs" if done.outputs else ""
        # Compacting helps only a history with more than the system prompt and the question.
        if self.meter.estimate(self.session.messages, tools) > budget and len(messages) > 2:
            tried = "shortening and compacting"
            emit(Thinking(state="Compacting the conversation"))
            try:
                await self.compact(emit, auto=True)
            except (ModelError, TimeoutError) as exc:
                detail = exc.message if isinstance(exc, ModelError) else "no answer in time"
                raise _StopTurn(
                    "error",
                    f"[error: the conversation no longer fits the model's {window.tokens:,}-token "
                    f"context, and compacting it failed ({detail}) — {CONTEXT_ADVICE}]",
                    "generation",
                ) from None
        used = self.meter.estimate(self.session.messages, tools)
        if used > budget:
            after = f" even after {tried}" if tried else ""
            raise _StopTurn(
                "error",
                f"[error: the request needs about {used:,} tokens{after}, more than the model's "
                f"{window.tokens:,}-token context leaves for it — {CONTEXT_ADVICE}]",
                "generation",
            )
        self._report_context(emit)

    def _learn_from_refusal(self, refused: ModelError, sent: int, emit: Emit) -> bool:
        """The server refused a request of `sent` characters as too big: take the window it
        states, count that request as over it, and say whether mm can make room now (it cannot
        when neither the server nor anything before said the window: nothing is guessed)."""
        stated = window_from_error(refused.server_text or refused.message)
        if stated is not None:
            self.meter.window = ContextWindow(stated, "the server's refusal")
        window = self.meter.window
        if window is None:
            return False
        # The request was over the window whatever mm counted: count it so from now on (but a
        # token is at least two characters: a server's odd count must not make every later
        # request look too big).
        tokens = max(window.tokens + 1, self.meter.estimate(self.session.messages, self.tools()))
        self.meter.observed(min(tokens, sent // 2), sent)
        self._report_context(emit)
        return True

    def _keep_partial(self, text: list[str], thought: list[str]) -> None:
        """What the model said before a failure stays in the history: nothing is lost."""
        if text:
            message = {"role": "assistant", "content": "".join(text)}
            self.session.add_message(message, thought="".join(thought) or None)

    async def _run_calls(self, calls: list[ToolCall], emit: Emit, state: _TurnState) -> None:
        ctx = ToolContext(
            cwd=self.cwd,
            settings=self.settings,
            emit=emit,
            history=state.history,
            questions=self.questions,
        )
        for call in calls:
            started = self.clock()
            parsed = self.registry.parse(call.name, call.arguments)
            if isinstance(parsed, str):
                short = one_line(call.arguments, 80)
                emit(
                    ToolCallStarted(
                        call_id=call.id,
                        tool=call.name,
                        title=f"{call.name}  {short}",
                        kind="other",
                        arguments={},
                        display=f"⚠ {call.name}: {short}",
                    ),
                )
                state.titles[call.id] = f"{call.name}  {short}"
                self._conclude(
                    call, call.arguments, "error", parsed, None, started, emit, state, None
                )
                continue
            tool, args = parsed
            arguments = args.model_dump()
            state.titles[call.id] = title = tool.heading(args)
            emit(
                ToolCallStarted(
                    call_id=call.id,
                    tool=tool.name,
                    title=title,
                    kind=tool.kind_for(args),
                    arguments=arguments,
                    display=tool.display(args),
                    locations=tool.locations(args, ctx),
                ),
            )
            decision = self.permissions.without_asking(tool.name, tool.needs_permission(args))
            if decision is None:
                decision = await self._ask(call, tool, args, ctx, emit)
                if decision is not None:  # None: nothing to ask (the call fails by itself)
                    self.permissions.record(tool.name, decision)
            # the call's time is its run's: the wait for the person's answer is not in it (an
            # `ls` allowed after 6 s took no 6 s), and a rejected call ran for none
            started = self.clock()
            if decision is not None and not decision.allows:
                self._finish(call, "rejected", tool.rejection(), None, started, emit, state)
                state.count(tool.counter)
                continue
            emit(ToolCallRunning(call_id=call.id, tool=tool.name))
            try:
                result = await tool.run(args, replace(ctx, call_id=call.id))
            except ToolCancelled as cancelled:
                state.count(tool.counter)  # a bash response all the same, as a rejected one is
                self._finish(
                    call,
                    "cancelled",
                    cancelled.output,
                    None,
                    started,
                    emit,
                    state,
                    display=cancelled.display,
                )
                raise asyncio.CancelledError from None
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a tool must not raise; if one does, the model hears it
                output = f"[error: {tool.name} failed unexpectedly: {type(exc).__name__}: {exc}]"
                self._finish(call, "error", output, None, started, emit, state)
                state.count(tool.counter)
                continue
            self._conclude(
                call,
                _canonical(arguments),
                result.status,
                result.output,
                result.diff,
                started,
                emit,
                state,
                tool.counter,
                display=result.display,
            )

    def _conclude(
        self,
        call: ToolCall,
        arguments: str,
        status: str,
        output: str,
        diff: str | None,
        started: float,
        emit: Emit,
        state: _TurnState,
        counter: str | None,
        display: str | None = None,
    ) -> None:
        """Record a call in the loop detector, then give the model its result."""
        state.count(counter)
        verdict = self.loop_detector.record(call.name, arguments, output)
        if verdict.stop:
            message = loop_stop_message(call.name)
            self._finish(call, "error", message, diff, started, emit, state)
            self._answer_pending(state, "[error: not run — the turn was stopped]", emit)
            raise _StopTurn("loop_detected", message, "generation")
        if verdict.warn:
            output = f"{output.rstrip(chr(10))}\n{LOOP_WARNING}" if output else LOOP_WARNING
            if display is not None:
                display = f"{display}\n{LOOP_WARNING}"
        self._finish(call, status, output, diff, started, emit, state, display=display)

    async def _ask(
        self, call: ToolCall, tool: Any, args: Any, ctx: ToolContext, emit: Emit
    ) -> Decision | None:
        """The person's decision, or None when there is nothing to ask (`NothingToAsk`)."""
        try:
            details = await tool.permission_details(args, ctx)
        except NothingToAsk:
            return None
        future = self.questions.ask(None, call.id)
        emit(
            PermissionRequested(
                call_id=call.id, tool=tool.name, title=tool.heading(args), details=details
            ),
        )
        try:
            return await future
        finally:
            self.questions.withdraw(None, call.id)

    def _finish(
        self,
        call: ToolCall,
        status: str,
        output: str,
        diff: str | None,
        started: float,
        emit: Emit,
        state: _TurnState,
        display: str | None = None,
    ) -> None:
        """The model gets `output`; the front ends show `display` when the tool gave one."""
        # A tool may print the api key (`echo $MM_API_KEY`): neither history nor screen get it.
        text = self.redactor.text
        output = text(output)
        display = display and text(display)
        diff = diff and text(diff)
        elapsed = self.clock() - started
        self.session.add_message(
            {"role": "tool", "tool_call_id": call.id, "content": output},
            tool={
                "status": status,
                "elapsed": round(elapsed, 3),
                "title": state.titles.get(call.id),
                "display": display,
                "diff": diff,
            },
        )
        self._fair_share(call.name, emit)
        state.pending = [c for c in state.pending if c.id != call.id]
        self._save(emit)
        emit(
            ToolCallFinished(
                call_id=call.id,
                tool=call.name,
                status=status,  # type: ignore[arg-type]
                output=output if display is None else display,
                elapsed=elapsed,
                diff=diff,
            ),
        )

    def _fair_share(self, tool: str, emit: Emit) -> None:
        """A tool result takes at most a quarter of the window: a 30,000-character output would
        fill a 2,048-token model by itself. The model gets its head and tail; the journal and
        the window keep it whole."""
        messages = self.session.messages
        room = self.meter.room(messages[:1], self.tools())
        share = None if room is None else self.meter.fair_share_chars(room)
        message = messages[-1]
        output = message.get("content")
        if share is None or not isinstance(output, str) or len(output) <= share:
            return
        shorter = self.meter.cut(output, share)
        cut = len(output) - len(shorter)
        self.session.shorten(len(self.session.messages) - 1, {**message, "content": shorter}, cut)
        window = self.meter.window
        assert window is not None
        emit(
            HistoryShortened(
                outputs=1,
                chars_cut=cut,
                message=f"{tool}'s output of {len(output):,} characters goes to the model cut "
                f"to {len(shorter):,}, a fair share of its {window.tokens:,}-token context; the "
                "session journal keeps it whole",
            ),
        )
        self._report_context(emit)


async def _closed(session: Session) -> None:
    """Close a session's journal and wait for it, off the loop."""
    future = session.close()
    if future is not None:
        try:
            await asyncio.shield(asyncio.wrap_future(future))
        except (asyncio.CancelledError, OSError):
            pass


def _turns_in(session: Session) -> int:
    return sum(1 for m in session.messages if m.get("role") == "user")


def _canonical(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)
