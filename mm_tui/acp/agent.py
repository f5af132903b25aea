"""`mm -acp`: mm as an ACP agent over stdio, for editors (Zed...) and for a parent mm.

One `Engine` per ACP session, built for the session's `cwd` (its tools work there, its session
file goes to `sessionsDir` resolved against it); the model client is picked once, at the first
request that needs it, and shared by every session. A prompt runs one engine turn; the engine's
events become `session/update` notifications and `session/request_permission` requests:

| engine event | ACP |
|---|---|
| `TextDelta`, `ThoughtDelta` | `agent_message_chunk`, `agent_thought_chunk` |
| `ToolCallStarted` | `tool_call` (pending; kind, title, absolute locations, raw input) |
| `ToolCallRunning` | `tool_call_update` in_progress |
| `PermissionRequested` | `session/request_permission`, four options, ids `a` `s` `r` `n` (the `Decision` values) |
| `ToolCallFinished` | `tool_call_update` completed (ok) or failed (error, rejected, cancelled): the output as text, a file change as diff content |
| `EngineError` | an `agent_message_chunk` with the message, so an editor shows it; also logged |
| `ContextUsage` | `usage_update`: `used` tokens of the window's `size` (sent when the window is known) |
| `HistoryShortened`, `HistoryCompacted`, `ModelRetrying`, `ServerState` | nothing but a line in the log: ACP has no notice (see below) |
| `TurnEnded` | the prompt's stop reason (see `STOP_REASONS`) |

What a parent mm needs beyond the protocol travels in `_meta["mm"]` (see `meta.py`).

Shortened outputs and a compaction have no update of their own: ACP's session updates are the
conversation (user, agent and thought chunks, tool calls), plans, modes, commands, config
options, session info and usage, and none of them is a notice. Sent as agent text they would
become part of the answer an editor keeps (and a parent mm hands to its model); as a thought,
the model's reasoning, which it is not; as a tool call, a call the model never made. What an
editor can see of them is the `usage_update` that follows each (the context's fill drops); the
log says what happened. The model's window is learned once per process, from the server (or
`contextWindow`), for the first session, and given to every later one.

`session/load` replays the whole conversation from the journal's records (what a compaction
replaced too: the editor showed it before), each tool call with the status, title and output its
result record kept; a call with no result (mm was killed) comes as failed, `cancelled` in `_meta`.

File changes as ACP diff content: write_file and edit_file give the engine a unified diff
(3 lines of context), never the whole file. The diff is parsed (the `unidiff` package) and each
hunk becomes one diff content for the file's absolute path, `oldText` the hunk's context and
removed lines, `newText` its context and added lines; a created file is one diff content with no
`oldText` and the whole new text. Reading the file instead would cost two whole-file reads per
edit (edit_file handles 50 MB files), and would race with the write; the hunks are what was
changed, computed once, and the same parsing serves the permission request (whose details are
the diff of the change to come) and the finished call.

`in_progress`: sent when the engine says the call runs (`ToolCallRunning`), after any question;
an asked agent's call (its events come through the ACP client) is in progress at once.

Nothing but protocol messages may reach stdout: the protocol writes to a duplicate of the real
stdout, and file descriptor 1 is then pointed at stderr, so a stray `print` of a library, or a
process a tool starts that inherits stdout, lands in the log instead of corrupting the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never
from urllib.parse import unquote, urlparse

import acp
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ForkSessionResponse,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)
from unidiff.patch import PatchSet

from mm_tui import __version__
from mm_tui.acp import meta
from mm_tui.config import Settings, resolve_dir
from mm_tui.core.events import (
    AgentFinished,
    AgentStarted,
    ComposingToolCall,
    ContextUsage,
    Decision,
    EngineError,
    Event,
    HistoryCompacted,
    HistoryShortened,
    ModelRetrying,
    PermissionRequested,
    ServerState,
    TextDelta,
    Thinking,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from mm_tui.core.text import agent_title
from mm_tui.engine.model_stream import ModelClient
from mm_tui.engine.session import INTERRUPTED, Session, SessionError, list_sessions
from mm_tui.engine.turn import Engine

log = logging.getLogger("mm.acp")

STOP_REASONS: dict[str, str] = {
    "end_turn": "end_turn",
    "max_turns": "max_turn_requests",
    "cancelled": "cancelled",
    # ACP has no stop reason for a failed turn: the error has already gone to the client as
    # agent text (EngineError), and the turn did end.
    "error": "end_turn",
    "loop_detected": "end_turn",
}
"""The engine's stop reason -> ACP's. A prompt that the client cancelled answers `cancelled`
whatever the engine's reason, as the protocol requires."""

ACP_KINDS = {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"}

_OPTION_NAMES = {
    Decision.ALLOW_ONCE: "Allow once",
    Decision.ALLOW_SESSION: "Allow this tool for the session",
    Decision.REJECT: "Reject this call",
    Decision.NEVER: "Never this tool this session",
}
PERMISSION_OPTIONS = [
    PermissionOption(option_id=decision.value, name=name, kind=meta.OPTION_KINDS[decision])
    for decision, name in _OPTION_NAMES.items()
]
"""The four decisions of every front end, one option each; the option id is the Decision's
letter, so an answer maps back without a table."""


@dataclass
class _AcpSession:
    """One ACP session: its engine and what the translation of its events needs to remember."""

    id: str
    engine: Engine
    prompting: bool = False
    cancel_requested: bool = False
    used_ids: set[str] = field(default_factory=set)  # ACP tool call ids given in this session
    ids: dict[tuple[str | None, str], str] = field(default_factory=dict)  # this turn's calls
    locations: dict[str, tuple[str, ...]] = field(default_factory=dict)  # by ACP id
    text_sent: bool = False  # agent text went out in this turn (an error then starts a paragraph)

    def acp_id(self, agent: str | None, call_id: str, *, new: bool = False) -> str:
        """The ACP id of an engine call: the model's own id, unless a model reused one in this
        session (small servers count from 0 each answer) or the call is a child agent's."""
        key = (agent, call_id)
        if not new and key in self.ids:
            return self.ids[key]
        base = f"{agent}:{call_id}" if agent else call_id
        candidate, n = base, 1
        while candidate in self.used_ids:
            n += 1
            candidate = f"{base}#{n}"
        self.used_ids.add(candidate)
        self.ids[key] = candidate
        return candidate


class MMAgent(acp.Agent):
    """The agent side of ACP over mm's engine. `acp.run_agent` routes requests here."""

    def __init__(self, settings: Settings, cwd: Path, *, demo: bool = False) -> None:
        self.settings = settings
        self.cwd = cwd  # the process folder: sessions are listed here when no cwd is given
        self.demo = demo
        self._conn: Any = None
        self._client: ModelClient | None = None
        self._client_lock = asyncio.Lock()
        self._window_lock = asyncio.Lock()
        self._window: tuple[Any] | None = None  # (the model's ContextWindow or None), once learned
        self._sessions: dict[str, _AcpSession] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    # -- lifecycle ---------------------------------------------------------------------------

    async def _model(self) -> ModelClient:
        """The shared model client, picked at the first request that needs it (initialize
        reports the model), so that the process starts at once and probes nothing before."""
        async with self._client_lock:
            if self._client is None:
                from mm_tui.startup import StartupError, pick_model

                try:
                    picked = await pick_model(self.settings, demo=self.demo)
                except StartupError as exc:
                    log.error("%s", exc)
                    raise acp.RequestError.internal_error({"message": str(exc)}) from None
                client = picked.client
                for note in picked.notes:
                    log.info("%s", note)
                log.info("model %s @ %s (%s)", client.model, client.provider, client.base_url)
                self._client = client
            return self._client

    def _meta(self, client: ModelClient) -> dict[str, Any]:
        return meta.put(title=self.settings.acp.title, model=client.model, provider=client.provider)

    async def aclose(self) -> None:
        """The client went away: stop every turn, and what the tools keep running."""
        for state in self._sessions.values():
            state.engine.cancel()
        for state in self._sessions.values():
            with contextlib.suppress(Exception):
                await state.engine.registry.aclose()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()

    # -- requests ----------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        client = await self._model()
        return InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                # Text, and resources embedded in a prompt (turned into text); no images or audio.
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(
                name="mm", title=self.settings.acp.title, version=__version__
            ),
            field_meta=self._meta(client),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        folder = _session_cwd(cwd)
        _note_mcp(mcp_servers)
        client = await self._model()
        session = Session.new(
            resolve_dir(self.settings.sessions_dir, folder),
            cwd=str(folder),
            model=client.model,
            provider=client.provider,
            base_url=client.base_url,
        )
        await self._open(session, folder, client)
        log.info("session %s in %s", session.id, folder)
        return NewSessionResponse(session_id=session.id, field_meta=self._meta(client))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Reopen a session of the session folder and replay its history as updates before
        answering, as the protocol asks: user messages, agent messages, tool calls finished."""
        folder = _session_cwd(cwd)
        _note_mcp(mcp_servers)
        running = self._sessions.get(session_id)
        if running is not None and running.prompting:
            raise acp.RequestError.invalid_request(
                {"message": f"session {session_id} is running a prompt; cancel it first"}
            )
        try:
            session = Session.load(resolve_dir(self.settings.sessions_dir, folder), session_id)
        except SessionError as exc:
            raise acp.RequestError(-32002, str(exc), {"sessionId": session_id}) from None
        client = await self._model()
        state = await self._open(session, folder, client)
        await self._replay(state)
        usage = state.engine.context_usage()
        if usage is not None:
            await self._translate(state, usage)
        log.info("session %s reopened in %s", session_id, folder)
        return LoadSessionResponse(field_meta=self._meta(client))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        folder = _session_cwd(cwd) if cwd else self.cwd
        infos = list_sessions(resolve_dir(self.settings.sessions_dir, folder))
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=info.id,
                    cwd=info.cwd,
                    title=info.title or None,
                    updated_at=info.updated,
                )
                for info in infos
            ]
        )

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        state = self._session(session_id)
        if state.prompting:
            raise acp.RequestError.invalid_request(
                {"message": "a prompt is already running in this session; cancel it first"}
            )
        text = prompt_text(prompt)
        state.prompting, state.cancel_requested, state.text_sent = True, False, False
        state.ids.clear()
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        sender = asyncio.create_task(self._send_events(state, queue))
        try:
            ended = await state.engine.run_turn(text, queue.put_nowait)
        except BaseException:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            state.prompting = False
            raise
        queue.put_nowait(None)
        await sender  # every update goes out before the answer
        state.prompting = False
        if state.cancel_requested or ended.stop_reason == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason=STOP_REASONS.get(ended.stop_reason, "end_turn"))  # type: ignore[arg-type]

    # -- what mm does not offer ---------------------------------------------------------------
    # acp.Agent is a Protocol whose bodies do nothing: inherited, each of these answered `{}` or
    # null, a success for a request nothing carried out. mm advertises none of them, so each is
    # the error it is.

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise acp.RequestError.invalid_params(
            {"message": f"unknown authentication method {method_id!r}: mm needs none"}
        )

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> None:
        self._session(session_id)
        raise acp.RequestError.method_not_found("session/set_mode")

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> None:
        self._session(session_id)
        raise acp.RequestError.method_not_found("session/set_config_option")

    async def close_session(self, session_id: str, **kwargs: Any) -> None:
        raise acp.RequestError.method_not_found("session/close")

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        raise acp.RequestError.method_not_found("session/fork")

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        raise acp.RequestError.method_not_found("session/resume")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("extension notification %s ignored", method)  # a notification wants no answer

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self._sessions.get(session_id)
        if state is None or not state.prompting:
            return
        state.cancel_requested = True
        state.engine.cancel()  # the engine stops the running tool and ends the turn

    # -- sessions ----------------------------------------------------------------------------

    async def _open(self, session: Session, folder: Path, client: ModelClient) -> _AcpSession:
        from mm_tui.startup import tool_registry

        engine = Engine(
            self.settings,
            client,
            cwd=folder,
            session=session,
            registry=tool_registry(self.settings, folder),
        )
        for warning in engine.registry.warnings:
            log.warning("%s", warning)
        for warning in session.warnings:
            log.warning("%s", warning)
        await self._learn_window(engine)
        old = self._sessions.get(session.id)
        if old is not None:
            asyncio.get_running_loop().create_task(old.engine.registry.aclose())
        state = _AcpSession(id=session.id, engine=engine)
        self._sessions[session.id] = state
        return state

    async def _learn_window(self, engine: Engine) -> None:
        """The model's context window, asked of the server for the first session only: every
        session shares the model client, and so its window."""
        async with self._window_lock:
            if self._window is None:
                for note in await engine.learn_context_window():
                    log.info("%s", note)
                self._window = (engine.meter.window,)
            else:
                engine.meter.window = self._window[0]

    def _session(self, session_id: str) -> _AcpSession:
        state = self._sessions.get(session_id)
        if state is None:
            raise acp.RequestError.invalid_params(
                {"message": f"no session {session_id} here: start one with session/new"}
            )
        return state

    async def _update(self, state: _AcpSession, update: Any) -> None:
        await self._conn.session_update(session_id=state.id, update=update)

    # -- events to updates -------------------------------------------------------------------

    async def _send_events(self, state: _AcpSession, queue: asyncio.Queue[Event | None]) -> None:
        """Translate the turn's events, in order. A failure to send one is logged and the
        next goes on: the engine may be waiting on a permission future further down."""
        while (event := await queue.get()) is not None:
            try:
                await self._translate(state, event)
            except Exception:
                log.exception("cannot send %s", type(event).__name__)
                if isinstance(event, PermissionRequested) and not event.future.done():
                    event.future.set_result(Decision.REJECT)

    async def _translate(self, state: _AcpSession, event: Event) -> None:
        child = event.agent is not None
        mine = meta.put(agent=event.agent) if child else None
        match event:
            case TextDelta():
                if event.text:
                    state.text_sent = True
                    await self._update(state, _message(event.text, mine))
            case ThoughtDelta():
                if event.text:
                    await self._update(state, _thought(event.text, mine))
            case ToolCallStarted():
                await self._tool_started(state, event)
            case ToolCallRunning():
                acp_id = state.acp_id(event.agent, event.call_id)
                await self._update(state, _progress(acp_id, "in_progress"))
            case PermissionRequested():
                await self._ask(state, event)
            case ToolCallFinished():
                await self._tool_finished(state, event)
            case EngineError():
                log.warning("%s error: %s", event.where, event.message)
                text = f"\n\n{event.message}\n" if state.text_sent else f"{event.message}\n"
                state.text_sent = True
                await self._update(state, _message(text, mine))
            case ContextUsage():
                if not child and event.window:  # an asked agent's context is not this session's
                    await self._update(
                        state,
                        UsageUpdate(
                            session_update="usage_update",
                            used=event.used,
                            size=event.window,
                        ),
                    )
            case HistoryShortened():
                log.info("%s", event.message)
            case HistoryCompacted():
                log.info("%s", event.title)
            case ModelRetrying():
                log.info("%s", event.text)
            case ServerState():
                if not event.answering:
                    log.warning("the model server does not answer: %s", event.message)
            case (
                TurnStarted()
                | Thinking()
                | ComposingToolCall()
                | AgentStarted()
                | AgentFinished()
                | TurnEnded()
            ):
                pass  # no ACP counterpart: spinners are the client's; TurnEnded is the answer
            case _:
                assert_never(event)

    async def _tool_started(self, state: _AcpSession, event: ToolCallStarted) -> None:
        acp_id = state.acp_id(event.agent, event.call_id, new=True)
        state.locations[acp_id] = event.locations
        extra: dict[str, Any] = {"tool": event.tool}
        if event.agent:
            extra["agent"] = event.agent
        await self._update(
            state,
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=acp_id,
                title=agent_title(event.agent, event.title),
                kind=_kind(event.kind),  # type: ignore[arg-type]
                status="pending",
                locations=[ToolCallLocation(path=p) for p in event.locations] or None,
                raw_input=event.arguments,
                field_meta=meta.put(**extra),
            ),
        )
        if event.agent is not None:  # an asked agent's call: it runs in the child, now
            await self._update(state, _progress(acp_id, "in_progress"))

    async def _ask(self, state: _AcpSession, event: PermissionRequested) -> None:
        """Ask the client; the engine waits on the event's future. A cancelled turn cancels
        the future, and the question is then dropped; an answer that cannot be had rejects."""
        future = event.future
        if future.done():
            return
        acp_id = state.acp_id(event.agent, event.call_id)
        path = _one(state.locations.get(acp_id, ()))
        diffs = diff_contents(event.details, path, state.engine.cwd)
        content: list[Any] = (diffs or [_text_content(event.details)]) if event.details else []
        request = asyncio.ensure_future(
            self._conn.request_permission(
                session_id=state.id,
                tool_call=ToolCallUpdate(
                    tool_call_id=acp_id,
                    title=agent_title(event.agent, event.title),
                    status="pending",
                    content=content or None,
                ),
                options=PERMISSION_OPTIONS,
            )
        )
        await asyncio.wait({request, future}, return_when=asyncio.FIRST_COMPLETED)
        if future.done():
            request.cancel()
            return
        try:
            answer = request.result()
        except Exception as exc:  # noqa: BLE001 - a failed request is a refusal
            log.warning("permission request failed (%s): the call is rejected", exc)
            decision = Decision.REJECT
        else:
            decision = _decision(answer.outcome)
        future.set_result(decision)  # allowed, the engine says ToolCallRunning next

    async def _tool_finished(self, state: _AcpSession, event: ToolCallFinished) -> None:
        acp_id = state.acp_id(event.agent, event.call_id)
        content: list[Any] = []
        if event.diff:
            path = _one(state.locations.get(acp_id, ()))
            content.extend(diff_contents(event.diff, path, state.engine.cwd))
        if event.output:
            content.append(_text_content(event.output))
        await self._update(
            state,
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=acp_id,
                status="completed" if event.status == "ok" else "failed",
                content=content or None,
                field_meta=meta.put(status=event.status, elapsed=round(event.elapsed, 3)),
            ),
        )

    async def _replay(self, state: _AcpSession) -> None:
        """The conversation as updates, from the journal's records: user and agent messages,
        and each tool call as it ended (the status its result record kept, never guessed from
        the text). What a compaction replaced is replayed too: the editor showed it before."""
        records = state.engine.session.records
        results = _results(records)
        registry = state.engine.registry
        for number, record in enumerate(records):
            if record.get("type") != "message":
                continue
            message = record["message"]
            role = message.get("role")
            if role == "user":
                text = _flat(message.get("content"))
                if text:
                    await self._update(state, acp.update_user_message_text(text))
            elif role == "assistant":
                text = _flat(message.get("content"))
                if text:
                    await self._update(state, _message(text, None))
                for index, call in enumerate(message.get("tool_calls") or []):
                    if isinstance(call, dict):
                        result = results.get((number, index))
                        await self._replay_call(state, registry, call, result)

    async def _replay_call(
        self,
        state: _AcpSession,
        registry: Any,
        call: dict[str, Any],
        result: dict[str, Any] | None,
    ) -> None:
        """One finished call; `result` is its result's record, None when mm was killed first."""
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        raw = str(function.get("arguments") or "")
        title, kind, locations, arguments = f"{name}  {raw}", "other", (), {}
        parsed = registry.parse(name, raw)
        if not isinstance(parsed, str):
            from mm_tui.tools.base import ToolContext

            tool, args = parsed
            ctx = ToolContext(cwd=state.engine.cwd, settings=self.settings)
            title, kind = f"{name}  {tool.title(args)}", tool.kind_for(args)
            locations, arguments = tool.locations(args, ctx), args.model_dump()
        status, output, diff, elapsed = "cancelled", INTERRUPTED, None, 0.0
        if result is not None:
            content = _flat(result["message"].get("content"))
            kept = result.get("tool")
            kept = kept if isinstance(kept, dict) else {}
            status = kept.get("status")
            if status not in ("ok", "error", "rejected", "cancelled"):
                # No status: the answer mm gave, on loading, to a call a kill left without one.
                status = "cancelled" if content == INTERRUPTED else "ok"
            display = kept.get("display")
            output = display if isinstance(display, str) else content
            diff = kept.get("diff") if isinstance(kept.get("diff"), str) else None
            if isinstance(kept.get("elapsed"), int | float):
                elapsed = float(kept["elapsed"])
            if isinstance(kept.get("title"), str) and kept["title"]:
                title = kept["title"]
        content_out: list[Any] = []
        if diff:
            content_out.extend(diff_contents(diff, _one(tuple(locations)), state.engine.cwd))
        if output:
            content_out.append(_text_content(output))
        acp_id = state.acp_id(None, str(call.get("id")), new=True)
        await self._update(
            state,
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=acp_id,
                title=title,
                kind=_kind(kind),  # type: ignore[arg-type]
                status="completed" if status == "ok" else "failed",
                locations=[ToolCallLocation(path=p) for p in locations] or None,
                raw_input=arguments or None,
                content=content_out or None,
                field_meta=meta.put(tool=name, status=status, elapsed=round(elapsed, 3)),
            ),
        )


def _results(records: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """Each tool call's result record, by (the record of the call, the call's place in it): a
    call id alone is not enough, since small servers count their ids from 0 at each answer."""
    waiting: dict[str, tuple[int, int]] = {}
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for number, record in enumerate(records):
        if record.get("type") != "message":
            continue
        message = record["message"]
        if message.get("role") == "assistant":
            for index, call in enumerate(message.get("tool_calls") or []):
                if isinstance(call, dict):
                    waiting[str(call.get("id"))] = (number, index)
        elif message.get("role") == "tool":
            where = waiting.pop(str(message.get("tool_call_id")), None)
            if where is not None:
                found[where] = record
    return found


# --------------------------------------------------------------------------- helpers


def _decision(outcome: Any) -> Decision:
    """A selected option, by its id (the Decision's letter); a cancelled request, or an id that
    is none of ours, rejects."""
    if not isinstance(outcome, AllowedOutcome):
        return Decision.REJECT
    try:
        return Decision(outcome.option_id)
    except ValueError:
        log.warning("unknown permission option %r: the call is rejected", outcome.option_id)
        return Decision.REJECT


def _kind(kind: str) -> str:
    return kind if kind in ACP_KINDS else "other"


def _one(paths: tuple[str, ...]) -> str | None:
    return paths[0] if len(paths) == 1 else None


def _message(text: str, extra: dict[str, Any] | None) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=acp.text_block(text), field_meta=extra
    )


def _thought(text: str, extra: dict[str, Any] | None) -> AgentThoughtChunk:
    return AgentThoughtChunk(
        session_update="agent_thought_chunk", content=acp.text_block(text), field_meta=extra
    )


def _progress(acp_id: str, status: str) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=acp_id,
        status=status,  # type: ignore[arg-type]
    )


def _text_content(text: str) -> Any:
    return acp.tool_content(acp.text_block(text))


def _flat(content: Any) -> str:
    """A history message's content as text: a string, or the text of its content parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _session_cwd(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise acp.RequestError.invalid_params(
            {"message": f"cwd must be the absolute path of a folder, not {cwd!r}"}
        )
    return path


def _note_mcp(servers: list[Any] | None) -> None:
    if servers:
        names = ", ".join(str(getattr(s, "name", "?")) for s in servers)
        log.info("mcpServers ignored (mm calls no MCP server): %s", names)


def diff_contents(unified: str, path: str | None, cwd: Path) -> list[FileEditToolCallContent]:
    """ACP diff contents for a unified diff: one per hunk (`oldText` its context and removed
    lines, `newText` its context and added lines), or one with the whole text and no `oldText`
    for a created file. `path` is the file's absolute path when the call knows it; otherwise the
    diff's own path, against `cwd`. Text that is not a diff (a refusal, "unchanged") gives none."""
    if not unified.startswith("--- "):
        return []
    try:
        patch = PatchSet(unified)
    except Exception:  # noqa: BLE001 - not a diff after all
        return []
    out: list[FileEditToolCallContent] = []
    for patched in patch:
        target = path
        if target is None:
            name = patched.target_file.removeprefix("b/")
            target = os.path.abspath(cwd / name)
        if patched.is_added_file:
            new = [_hunk_texts(h)[1] for h in patched]
            out.append(acp.tool_diff_content(target, "".join(new), None))
            continue
        for hunk in patched:
            old, new_text = _hunk_texts(hunk)
            out.append(acp.tool_diff_content(target, new_text, old))
    return out


def _hunk_texts(hunk: Any) -> tuple[str, str]:
    """The old and new text of one hunk; `\\ No newline at end of file` takes the newline off
    the line before it, on the side that line belongs to."""
    old: list[str] = []
    new: list[str] = []
    last = " "
    for line in hunk:
        kind, value = line.line_type, line.value
        if kind == "\\":
            for side, applies in ((old, last in " -"), (new, last in " +")):
                if applies and side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            continue
        if kind in " -":
            old.append(value)
        if kind in " +":
            new.append(value)
        last = kind
    return "".join(old), "".join(new)


def prompt_text(blocks: list[Any]) -> str:
    """A prompt's blocks as the one text the model reads. A mentioned file (a resource link or
    an embedded resource) stays in the sentence as `@path`; an embedded resource's text follows
    the request in a `<context>` block. Images and audio are refused: mm's models read text."""
    parts: list[str] = []
    contexts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{_uri_path(block.uri)}")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            parts.append(f"@{_uri_path(resource.uri)}")
            if isinstance(resource, TextResourceContents):
                contexts.append(f'<context ref="{resource.uri}">\n{resource.text}\n</context>')
            else:
                contexts.append(
                    f'<context ref="{resource.uri}">(binary content left out)</context>'
                )
        elif isinstance(block, ImageContentBlock | AudioContentBlock):
            what = "an image" if isinstance(block, ImageContentBlock) else "audio"
            raise acp.RequestError.invalid_params(
                {"message": f"mm reads text only: this prompt holds {what}, which it cannot use"}
            )
    text = "".join(parts)
    if contexts:
        text = "\n\n".join([text, *contexts])
    return text


def _uri_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


# --------------------------------------------------------------------------- stdio


class _WriteProtocol(asyncio.BaseProtocol):
    """Flow control for the protocol pipe, what `asyncio.StreamWriter.drain` expects."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()

    async def _drain_helper(self) -> None:
        if self._paused:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


class StdioError(Exception):
    """stdin or stdout cannot carry the protocol; the message is one line for the person."""


async def protocol_streams() -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    """The protocol's writer (a duplicate of stdout) and reader (stdin); file descriptor 1 then
    points at stderr, so that nothing else can write to the protocol's stream."""
    for fd, name in ((0, "stdin"), (1, "stdout")):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            raise StdioError(f"mm: -acp needs {name}, and it is closed") from None
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            raise StdioError(
                f"mm: -acp speaks ACP over stdin and stdout, which must be pipes "
                f"({name} is a regular file)"
            )
    loop = asyncio.get_running_loop()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = _WriteProtocol()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)  # type: ignore[arg-type]
    return writer, reader


def configure_logging() -> None:
    """The log goes to stderr: an editor keeps an agent's stderr in its log view."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mm -acp: %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def serve(settings: Settings, cwd: Path, *, demo: bool = False) -> int:
    """Serve ACP on stdio until the client closes stdin. Returns the exit status."""
    try:
        writer, reader = await protocol_streams()
    except StdioError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    agent = MMAgent(settings, cwd, demo=demo)
    log.info("mm %s serving ACP on stdio in %s", __version__, cwd)
    try:
        await acp.run_agent(agent, writer, reader)
    finally:
        await agent.aclose()
    return 0


def run(settings: Settings, cwd: Path, *, demo: bool = False) -> int:
    """`mm -acp`."""
    configure_logging()
    try:
        return asyncio.run(serve(settings, cwd, demo=demo))
    except KeyboardInterrupt:
        return 130
