"""The agent loop: model, then tools, then model again, until an answer or `maxTurns`.

`Engine` is the face front ends hold: `run_turn(text, emit)` emits the events of `events.py`
through `emit` and returns the `TurnEnded` it emitted last; the other commands are its public
methods. The work is its collaborators' (docs/architecture.md, "The engine"). Cancellation
(`cancel`: Esc, Ctrl-C, /abort) stops the running tool and gives every call of the model's last
message a result (`[error: cancelled]`), so the history stays well formed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mm_tui.config import Settings
from mm_tui.core.asking import NO_AGENTS, AgentAsker
from mm_tui.core.events import (
    Answer,
    ContextUsage,
    Counters,
    Decision,
    Mode,
    ModeChanged,
    StopReason,
    TurnEnded,
    TurnStarted,
    Usage,
    turn_context,
)
from mm_tui.core.questions import Questions
from mm_tui.core.redact import Redactor
from mm_tui.engine.context import ContextMeter
from mm_tui.engine.context_keeper import UNKNOWN_WINDOW, ContextKeeper
from mm_tui.engine.fixed_prompt import DEFAULT_SYSTEM_PROMPT, without_tools
from mm_tui.engine.fixed_prompt import short_system_prompt as short_prompt
from mm_tui.engine.guards import LoopDetector
from mm_tui.engine.instructions import Instructions
from mm_tui.engine.model_stream import ModelClient
from mm_tui.engine.permissions import Permissions
from mm_tui.engine.recorder import SessionRecorder
from mm_tui.engine.redacting import redacting
from mm_tui.engine.round_trip import RoundTrip
from mm_tui.engine.server_watch import ServerWatch
from mm_tui.engine.session import Session
from mm_tui.engine.tool_calls import ToolCalls
from mm_tui.engine.turn_state import Emit, StopTurn, TurnState
from mm_tui.engine.undo.log import read_log
from mm_tui.tools.base import CANCELLED, ToolContext
from mm_tui.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mm_tui.engine.undo.snapshots import Snapshots, UndoDone
    from mm_tui.engine.undoing import PendingUndo

__all__ = ["DEFAULT_SYSTEM_PROMPT", "UNKNOWN_WINDOW", "Emit", "Engine"]


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
        self.client = client
        self.cwd = cwd
        self.registry = (
            registry if registry is not None else ToolRegistry.from_settings(settings, cwd)
        )
        self.clock = clock
        # AGENTS.md, appended to the system prompt (start-up reads it), read again at /new
        self.instructions = instructions if instructions is not None else Instructions()
        self.permissions = Permissions.from_settings(settings)
        self.questions = Questions()  # the permission questions waiting for the person
        self.redactor = Redactor(settings.secret_values())
        session.redactor = self.redactor
        self.loop_detector = LoopDetector()
        self.turn_number = turns_in(session)
        self.undo_note = read_log(session.records).note  # for the model, with the next request
        self._snapshots: Snapshots | None = None
        self._task: asyncio.Task[TurnEnded] | None = None
        self._assemble(settings, session)
        self.settings = settings
        self.context.count_from_journal()
        if not session.messages:
            session.messages.append({"role": "system", "content": self.system_prompt()})

    def _assemble(self, settings: Settings, session: Session) -> None:
        """The collaborators, each given what it needs."""
        client = self.client
        self.server = ServerWatch()
        self.recorder = SessionRecorder(session)
        self.context = ContextKeeper(
            settings,
            client,
            self.registry,
            self.recorder,
            redactor=self.redactor,
            server=self.server,
            system_prompt=self.system_prompt,
            permissions=self.permissions,
            short_system_prompt=lambda: short_prompt(self.settings, self.cwd, self.instructions),
        )
        # in chat only, the built-in prompt's words about tools are left out (fixed_prompt.py)
        self.context.asking.without_tools = lambda text: without_tools(text, self.cwd)
        self.round_trip = RoundTrip(settings, client, self.recorder, self.context, self.server)
        self.calls = ToolCalls(
            settings,
            self.cwd,
            self.registry,
            self.recorder,
            self.context,
            redactor=self.redactor,
            permissions=self.permissions,
            questions=self.questions,
            loop_detector=self.loop_detector,
            clock=self.clock,
        )

    # -- what the collaborators keep, as the front ends read it ---------------------------

    @property
    def settings(self) -> Settings:
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        """New settings reach every collaborator (the next call and request use them)."""
        self._settings = settings
        self.context.settings = self.round_trip.settings = self.calls.settings = settings

    @property
    def session(self) -> Session:
        return self.recorder.session

    @property
    def meter(self) -> ContextMeter:
        return self.context.meter

    @property
    def server_answering(self) -> bool | None:
        """Whether the model server answers: None until known (start-up checks it for a
        configured server); a front end hears of each change as a ServerState."""
        return self.server.answering

    @server_answering.setter
    def server_answering(self, answering: bool | None) -> None:
        self.server.answering = answering

    @property
    def snapshots(self) -> Snapshots:
        """The snapshots of the project's files that /undo goes back to (engine/undoing.py)."""
        if self._snapshots is None:
            from mm_tui.engine.undoing import project_snapshots

            self._snapshots = project_snapshots(self)
        return self._snapshots

    # -- commands ---------------------------------------------------------------------------

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

    def answer(self, agent: str | None, call_id: str, decision: Decision | Answer) -> bool:
        """The person's answer to a `PermissionRequested`; False when it no longer waits."""
        return self.questions.answer(agent, call_id, decision)

    def redacting(self, emit: Emit) -> Emit:
        """`emit` behind this engine's redactor (engine/redacting.py): every front end's events
        pass through it, a listener to the registry outside a turn too."""
        return redacting(self.redactor, emit)

    async def run_turn(self, text: str, emit: Emit) -> TurnEnded:
        """Run one turn to its end. Cancelling the caller cancels the turn too, after the turn
        has put its history in order."""
        return await self._run(self._turn(text, self.redacting(emit)))

    async def run_ask(self, agent: str, prompt: str, emit: Emit) -> TurnEnded:
        """`/ask AGENT …` and `mm --ask AGENT "…"`: the request goes to an agent of mmConfigs
        through ask_agent, as a turn of its own. The history gets a user message `/ask AGENT
        <prompt>` and an assistant message, the text ask_agent would have returned."""
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
        """The tools' declarations for the next request (those ready now)."""
        return self.context.tools()

    async def learn_context_window(self, asked: Any = None) -> list[str]:
        """Ask the server for the model's context window (`contextWindow` wins); the notes.
        `asked`: the asking begun already (`ContextKeeper.learn_window`)."""
        return await self.context.learn_window(asked)

    def context_usage(self) -> ContextUsage | None:
        """How full the model's context is now, or None while the window is unknown."""
        return self.context.usage()

    def set_mode(self, mode: Mode, emit: Emit | None = None) -> None:
        """`ask`, `auto` or `plan` (engine/permissions.py), from the next call and request on."""
        previous = self.permissions.mode
        self.permissions.mode = mode
        if emit is not None and mode != previous:
            emit(ModeChanged(mode=mode, previous=previous))

    def use_client(self, client: ModelClient) -> None:
        """Ask the model through `client` from now on (an ACP session's own, for its `/model`)."""
        self.client = self.context.client = self.round_trip.client = client

    async def plan_undo(self, turns: int | None = None) -> PendingUndo:
        """`/undo [N]`: what putting back the files the last N turns changed will do, changing
        nothing (engine/undoing.py); `UndoError` says why it cannot be done."""
        from mm_tui.engine.undoing import plan_undo

        return await plan_undo(self, turns)

    async def undo(self, pending: PendingUndo, emit: Emit) -> UndoDone:
        """Apply a plan of `plan_undo`, the person having said yes (engine/undoing.py)."""
        from mm_tui.engine.undoing import apply_undo

        return await apply_undo(self, pending, self.redacting(emit))

    async def compact(self, emit: Emit | None = None, *, auto: bool = False) -> str:
        """`/compact`: the model's summary replaces the history (`HistoryCompacted` says so);
        returns the summary; a failure raises with its words redacted."""
        return await self.context.compact(emit and self.redacting(emit), auto=auto)

    async def aclose(self) -> None:
        """mm is exiting: close the model connection and stop what the tools keep running."""
        await self.client.aclose()
        await self.registry.aclose()
        await self.recorder.close()

    def new_session(self, session: Session) -> None:
        """`/new` or a session reopened: the guards and decisions reset, the session left closed;
        a fresh session reads AGENTS.md again, a reopened one keeps its system message."""
        self.recorder.switch(session)
        session.redactor = self.redactor
        self.loop_detector.reset()
        self.permissions.reset()
        self.turn_number = turns_in(session)
        self.undo_note = read_log(session.records).note
        self.context.meter.forget_base()
        self.context.count_from_journal()
        if not session.messages:  # a new session: AGENTS.md as it is now (it may have changed)
            self.instructions = self.instructions.reread()
            session.messages.append({"role": "system", "content": self.system_prompt()})

    # -- the turn --------------------------------------------------------------------------

    async def _turn(self, text: str, emit: Emit) -> TurnEnded:
        self.turn_number += 1
        turn = self.turn_number
        started = self.clock()
        state = TurnState()
        emit(TurnStarted(turn=turn, text=text))
        note, self.undo_note = self.undo_note, None
        content = f"{note}\n\n{text}" if note else text
        self.session.messages.append({"role": "user", "content": content})
        state.history = list(self.session.messages)
        self.recorder.save(emit)
        reason: StopReason = "end_turn"
        error: str | None = None
        # the files are recorded while the model thinks, and before any tool runs
        from mm_tui.engine.undoing import snapshot_before

        snapshot: asyncio.Task[None] | None = asyncio.create_task(snapshot_before(self, turn, emit))
        try:
            for _ in range(self.settings.max_turns):
                calls = await self.round_trip.generate(emit, state)
                if snapshot is not None:
                    await asyncio.shield(snapshot)
                    snapshot = None
                if not calls:
                    break
                await self.calls.run(calls, emit, state)
            else:
                reason = "max_turns"
                error = (
                    f"[error: the turn reached maxTurns ({self.settings.max_turns} model round "
                    "trips) — ask again to continue, or raise maxTurns]"
                )
                self.recorder.error(emit, "generation", error)
        except StopTurn as stop:
            reason, error = stop.reason, stop.message
            self.recorder.error(emit, stop.where, stop.message)
        except asyncio.CancelledError:
            reason = "cancelled"
            self.calls.answer_pending(state, CANCELLED, emit)
            uncancel()
        if snapshot is not None:  # the model failed or the turn was cancelled before a tool ran
            await asyncio.gather(snapshot, return_exceptions=True)
        ended = self.ended(turn, started, reason, error, Counters(**state.counters), state.usage)
        return await self.end_turn(emit, ended)

    def ended(
        self,
        turn: int,
        started: float,
        reason: StopReason,
        error: str | None,
        counters: Counters,
        usage: Usage,
    ) -> TurnEnded:
        if error:  # the words a front end reads back from the returned event, too
            error = self.redactor.text(error)
        return TurnEnded(
            turn=turn,
            counters=counters,
            elapsed=self.clock() - started,
            usage=usage,
            stop_reason=reason,
            error=error,
            **turn_context(self.context_usage()),
        )

    async def end_turn(self, emit: Emit, ended: TurnEnded) -> TurnEnded:
        """Record the turn in the session file, wait until the journal is on disk (in its
        writer thread: the loop goes on), and tell the front end: the last event."""
        self.recorder.turn(emit, ended)
        await self.recorder.synced(emit)
        emit(ended)
        return ended

    async def _ask_turn(self, agent: str, prompt: str, emit: Emit) -> TurnEnded:
        self.turn_number += 1
        turn = self.turn_number
        started = self.clock()
        text = f"/ask {agent} {prompt}".rstrip()
        emit(TurnStarted(turn=turn, text=text))
        self.session.messages.append({"role": "user", "content": text})
        self.recorder.save(emit)
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
                uncancel()
            elif asked.error is not None:
                error = asked.error
        self.session.messages.append({"role": "assistant", "content": answer})
        if error is not None:
            reason = "error"
            self.recorder.error(emit, "tool", error)
        ended = self.ended(turn, started, reason, error, Counters(), Usage())
        return await self.end_turn(emit, ended)


def uncancel() -> None:
    """The turn's task was cancelled and ends as cancelled: it goes on to its end."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def turns_in(session: Session) -> int:
    """The turns a session had: its requests."""
    return sum(1 for m in session.messages if m.get("role") == "user")
