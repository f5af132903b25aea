"""The agent side of ACP: MMAgent answers the client's requests, one `Engine` per session."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import acp
from acp.schema import (
    AgentCapabilities,
    ForkSessionResponse,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from mm_tui import __version__
from mm_tui.acp.acp_session import AcpSession
from mm_tui.acp.content import prompt_text
from mm_tui.acp.model_option import ModelOption
from mm_tui.acp.replay import replay
from mm_tui.acp.translate import send_events, translate
from mm_tui.config import McpServer, Settings, known_sessions_folders, sessions_folders
from mm_tui.core import acp_meta as meta
from mm_tui.core.events import EngineError, Event
from mm_tui.engine.model_stream import ModelClient
from mm_tui.engine.session import Session, SessionBusy, SessionError
from mm_tui.engine.session_listing import find_session, list_sessions_in
from mm_tui.engine.turn import Engine
from mm_tui.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mm_tui.tools.mcp import McpPool

log = logging.getLogger("mm.acp")

STOP_REASONS: dict[str, str] = {
    "end_turn": "end_turn",
    "max_turns": "max_turn_requests",
    "cancelled": "cancelled",
    # A guard's stop is mm's decision, said as agent text; the turn did end.
    "loop_detected": "end_turn",
}
"""The engine's stop reason -> ACP's. A prompt that the client cancelled answers `cancelled`
whatever the engine's reason, as the protocol requires. A failed turn (`error`: the model or its
server failed, the watchdog stopped it, the request no longer fits) has no stop reason: the
prompt is answered with a JSON-RPC error (`TURN_FAILED`) carrying mm's words, as other agents
answer a failed turn, so that an editor cannot take it for an answer. The words went as agent
text too, before it (`EngineError`), and stay in the conversation an editor shows."""

TURN_FAILED = -32603
"""The JSON-RPC code of a prompt whose turn failed: internal error, what the protocol's agents
answer then."""


class MMAgent(acp.Agent):
    """The agent side of ACP over mm's engine. `acp.run_agent` routes requests here."""

    def __init__(self, settings: Settings, cwd: Path, *, demo: bool = False) -> None:
        self.settings = settings
        self.cwd = cwd  # the process folder: the configured MCP servers work here
        self.demo = demo
        self._conn: Any = None
        self._client: ModelClient | None = None
        self._client_lock = asyncio.Lock()
        self._probe: asyncio.Task[ModelClient] | None = None  # started by initialize
        self._window_lock = asyncio.Lock()
        self._model_option = ModelOption()  # the sessions' `configOptions`: the model
        self._window: tuple[Any] | None = None  # (the model's ContextWindow or None), once learned
        self._sessions: dict[str, AcpSession] = {}
        self._mcp: McpPool | None = None  # the configured MCP servers, shared by the sessions

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    # -- lifecycle ---------------------------------------------------------------------------

    def _start_probe(self) -> None:
        """Ask the model server now, in the background: `initialize` answers at once (a server
        that accepts and never answers holds the probe for seconds, and a client that gives up
        soon after start would have no request to cancel), and the first session waits for it
        if it has not ended by then. Its failure is said by the request that needs the model
        (which asks again), not here."""
        if self._probe is None and self._client is None:
            self._probe = asyncio.create_task(self._model(), name="mm-acp-probe")
            self._probe.add_done_callback(_probed)

    async def _model(self) -> ModelClient:
        """The shared model client, picked once by the first caller (the probe `initialize`
        starts); a caller that comes while it is picked waits for it, and after a failure the
        next caller asks again."""
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
        """The client went away: stop every turn, the probe, and what the tools keep running."""
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()
            await asyncio.gather(self._probe, return_exceptions=True)
        for state in self._sessions.values():
            state.engine.cancel()
        for state in self._sessions.values():
            with contextlib.suppress(Exception):
                await state.engine.registry.aclose()
        if self._mcp is not None:
            with contextlib.suppress(Exception):
                await self._mcp.aclose()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()
        for state in self._sessions.values():  # a session's own client, made by its switch
            if state.engine.client is not self._client:
                with contextlib.suppress(Exception):
                    await state.engine.client.aclose()

    # -- requests ----------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Answered at once: the model server is asked in the background (`_start_probe`), and
        the model and its provider go to a parent mm with each `session/new` instead."""
        self._start_probe()
        return InitializeResponse(
            # The requested version when mm speaks it, else the latest it speaks (the
            # protocol's rule: a client asking for 0, or for a version from the future, is told 1).
            protocol_version=(
                protocol_version
                if 1 <= protocol_version <= acp.PROTOCOL_VERSION
                else acp.PROTOCOL_VERSION
            ),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                # Text, and resources embedded in a prompt (turned into text); no images or audio.
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
                # MCP servers of session/new and session/load: stdio, and streamable HTTP
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(
                name="mm", title=self.settings.acp.title, version=__version__
            ),
            field_meta=meta.put(title=self.settings.acp.title),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        folder = _session_cwd(cwd)
        servers = _mcp_servers(mcp_servers)
        client = await self._model()
        session = Session.new(
            sessions_folders(self.settings, folder)[0],
            cwd=str(folder),
            model=client.model,
            provider=client.provider,
            base_url=client.base_url,
        )
        state = await self._open(session, folder, client, servers)
        await _on_disk(session)
        log.info("session %s in %s", session.id, folder)
        return NewSessionResponse(
            session_id=session.id,
            modes=session_modes(state.engine),
            config_options=[await self._model_option.option(state)],
            field_meta=self._meta(client),
        )

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
        servers = _mcp_servers(mcp_servers)
        running = self._sessions.get(session_id)
        if running is not None and running.prompting:
            raise acp.RequestError.invalid_request(
                {"message": f"session {session_id} is running a prompt; cancel it first"}
            )
        try:
            # Another mm writing it: refused, not forked (the editor's id names this session).
            session = find_session(sessions_folders(self.settings, folder), session_id, fork=False)
        except SessionBusy as exc:
            raise acp.RequestError.invalid_request({"message": str(exc)}) from None
        except SessionError as exc:
            raise acp.RequestError(-32002, str(exc), {"sessionId": session_id}) from None
        client = await self._model()
        state = await self._open(session, folder, client, servers)
        await self._own_model(state, client)
        await replay(state, self.settings)
        usage = state.engine.context_usage()
        if usage is not None:
            await translate(state, usage)
        log.info("session %s reopened in %s", session_id, folder)
        return LoadSessionResponse(
            modes=session_modes(state.engine),
            config_options=[await self._model_option.option(state)],
            field_meta=self._meta(state.engine.client),
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        # `cwd` is a filter: without it, the sessions of every project mm knows
        if cwd:
            folders = sessions_folders(self.settings, _session_cwd(cwd))
        else:
            folders = known_sessions_folders(self.settings, self.cwd)
        infos = list_sessions_in(folders)
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
        try:
            # The session's MCP servers (an editor's, the configured ones) have started or
            # failed before the model hears of the tools: an editor gave them for this prompt.
            await state.engine.registry.ready()
        except BaseException:
            state.prompting = False
            raise
        if state.cancel_requested:  # while they started: no turn
            state.prompting = False
            return PromptResponse(stop_reason="cancelled")
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        sender = asyncio.create_task(send_events(state, queue))
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
        if ended.stop_reason == "error":
            raise acp.RequestError(TURN_FAILED, _failure(ended.error))
        return PromptResponse(stop_reason=STOP_REASONS.get(ended.stop_reason, "end_turn"))  # type: ignore[arg-type]

    # -- what mm does not offer ---------------------------------------------------------------
    # acp.Agent is a Protocol whose bodies do nothing: inherited, each of these answered `{}` or
    # null, a success for a request nothing carried out. mm advertises none of them, so each is
    # the error it is.

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise acp.RequestError.invalid_params(
            {"message": f"unknown authentication method {method_id!r}: mm needs none"}
        )

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """ask, auto or plan (engine/permissions.py), for this session, from its next tool
        call and request on."""
        from mm_tui.engine.permissions import MODES

        state = self._session(session_id)
        if mode_id not in MODES:
            raise acp.RequestError.invalid_params(
                {"message": f"no mode {mode_id!r} here: mm's modes are {', '.join(MODES)}"}
            )
        state.engine.set_mode(mode_id)  # type: ignore[arg-type]  # one of MODES
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """The model (`configOptions`' only option): switched for this session alone."""
        state = self._session(session_id)
        await self._model_option.switch(state, config_id, value, self._client)
        return SetSessionConfigOptionResponse(
            config_options=[await self._model_option.option(state)]
        )

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

    async def _open(
        self,
        session: Session,
        folder: Path,
        client: ModelClient,
        servers: Mapping[str, McpServer] | None = None,
    ) -> AcpSession:
        from mm_tui.engine.instructions import load_instructions

        instructions = load_instructions(folder)  # the session's folder's AGENTS.md files
        engine = Engine(
            self.settings,
            client,
            cwd=folder,
            session=session,
            registry=self._registry(folder, servers),
            instructions=instructions,
        )
        for warning in engine.registry.warnings:
            log.warning("%s", warning)
        if instructions.note():
            log.info("%s", instructions.note())
        for warning in instructions.warnings:
            log.warning("%s", warning)
        for warning in session.warnings:
            log.warning("%s", warning)
        await self._learn_window(engine)
        # the model's probe (engine/ask_style.py): a kept answer, or probed in the background
        engine.round_trip.asking.start(engine.client, lambda: engine.meter.window)
        old = self._sessions.get(session.id)
        if old is not None:
            asyncio.get_running_loop().create_task(old.engine.registry.aclose())
        state = AcpSession(id=session.id, engine=engine, conn=self._conn)
        self._sessions[session.id] = state
        return state

    def _registry(self, folder: Path, servers: Mapping[str, McpServer] | None) -> ToolRegistry:
        """A session's tools: the built-in ones in its folder, the configured MCP servers
        (started at the first session, in the process's folder, shared by every session), and
        the editor's servers for this session (working in its folder, stopped with it)."""
        from mm_tui.startup import mcp_pool, tool_registry

        registry = tool_registry(self.settings, folder)
        if self.settings.mcp_servers:
            if self._mcp is None:
                self._mcp = mcp_pool(self.settings.mcp_servers, self.cwd)
                for note in self._mcp.notes:  # a `${VAR}` that is not set
                    log.warning("%s", note)
                self._mcp.listen(_log_warning)
                self._mcp.start()
            registry.add_source(self._mcp, owned=False)
        if servers:
            servers = _apart(servers, self.settings.mcp_servers)
            registry.add_source(mcp_pool(servers, folder, beside=self._mcp))
        registry.listen(_log_warning)
        registry.start()
        return registry

    async def _own_model(self, state: AcpSession, client: ModelClient) -> None:
        """A reopened session that switched models goes on with its last one when it was on
        this very server, as `--resume` does (a journal naming another server is not obeyed)."""
        from mm_tui.core.redact import clean_url

        session = state.engine.session
        model = session.model
        if not model or model == client.model or not hasattr(client, "sibling"):
            return
        if clean_url(session.base_url) != clean_url(client.base_url):
            return
        own = client.sibling()  # type: ignore[attr-defined]
        own.model = model
        state.engine.use_client(own)
        for note in await state.engine.learn_context_window():
            log.info("%s", note)

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

    def _session(self, session_id: str) -> AcpSession:
        state = self._sessions.get(session_id)
        if state is None:
            raise acp.RequestError.invalid_params(
                {"message": f"no session {session_id} here: start one with session/new"}
            )
        return state


def session_modes(engine: Engine) -> SessionModeState:
    """The modes a session offers, as ACP's session/new and session/load carry them."""
    from mm_tui.core.events import MODE_WORDS
    from mm_tui.engine.permissions import MODE_TITLES, MODES

    return SessionModeState(
        current_mode_id=engine.permissions.mode,
        available_modes=[
            SessionMode(id=mode, name=MODE_TITLES[mode], description=MODE_WORDS[mode])
            for mode in MODES
        ],
    )


def _failure(error: str | None) -> str:
    """The words of a failed turn for an error answer: the engine's, without their brackets
    (`[error: ...]` sets them apart in a transcript, not in an error)."""
    text = (error or "the turn failed").strip()
    if text.startswith("[error: ") and text.endswith("]"):
        text = text[len("[error: ") : -1]
    return text


def _session_cwd(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise acp.RequestError.invalid_params(
            {"message": f"cwd must be the absolute path of a folder, not {cwd!r}"}
        )
    return path


def _mcp_servers(servers: list[Any] | None) -> dict[str, McpServer]:
    """An editor's MCP servers as mcpServers entries, by a name a tool's name can start with
    (`My files` is `My_files`). Those mm cannot reach (SSE, ACP) are logged and left out."""
    found: dict[str, McpServer] = {}
    for server in servers or []:
        given = str(getattr(server, "name", "") or "")
        name = re.sub(r"[^A-Za-z0-9_-]", "_", given).lstrip("_-") or "mcp"
        try:
            if isinstance(server, McpServerStdio):
                env = {variable.name: variable.value for variable in server.env}
                entry = McpServer(command=server.command, args=list(server.args), env=env)
            elif isinstance(server, HttpMcpServer):
                headers = {header.name: header.value for header in server.headers}
                entry = McpServer(url=server.url, headers=headers)
            else:
                kind = getattr(server, "type", type(server).__name__)
                log.warning("MCP server %s left out: mm speaks stdio and http, not %s", given, kind)
                continue
        except ValueError as exc:  # pydantic's ValidationError: a url that is not http(s)
            log.warning("MCP server %s left out: %s", given, str(exc).splitlines()[-1].strip())
            continue
        if name in found:
            log.warning("MCP server %s left out: a server named %s is already given", given, name)
            continue
        found[name] = entry
    return found


def _apart(
    servers: Mapping[str, McpServer], configured: Mapping[str, McpServer]
) -> dict[str, McpServer]:
    """The editor's servers, each named apart from the configured ones (`files` beside a
    configured `files` is `files_2`, said in the log): the two are different servers, however
    alike, and the tools of both are offered. Renamed here rather than tool by tool so that the
    names do not depend on which server is ready first."""
    from mm_tui.tools.mcp.tool import unique_name

    named: dict[str, McpServer] = {}
    for name, server in servers.items():
        taken = {*configured, *named} | ({*servers} - {name})
        given = unique_name(name, taken.__contains__)
        if given != name:
            log.warning(
                "MCP server %s of the session is named %s: the configuration has a server %s",
                name,
                given,
                name,
            )
        named[given] = server
    return named


def _probed(task: asyncio.Task[ModelClient]) -> None:
    """The background probe ended: its failure is not lost unread (the request that needs the
    model asks again and says it)."""
    if not task.cancelled():
        task.exception()


def _log_warning(event: Event) -> None:
    """What an MCP pool says outside a turn, in the log: ACP has no notice to carry it."""
    if isinstance(event, EngineError):
        log.warning("%s", event.message)


async def _on_disk(session: Session) -> None:
    """Write a new session's file now, not at its first prompt: mm advertises `loadSession`, and
    a client may load the id it was given from another `mm -acp` (acpx runs one per command) or
    list it before prompting; a session kept in memory only was not found, and acpx silently
    made another. A folder that cannot be written costs a warning in the log, as a failed save
    does in a turn."""
    try:
        session.save()
        written = session.sync()
        if written is not None:
            await asyncio.wrap_future(written)
    except OSError as exc:
        log.warning("session %s not written: %s", session.id, exc)
