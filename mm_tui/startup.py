"""From settings to a ready agent: which model (configured, detected, or the demo), which
session (new or resumed), which tools. Every front end starts through here."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mm_tui.config import McpServer, Settings, sessions_folders
from mm_tui.core.asking import AgentEntry, AgentRunner
from mm_tui.core.frozen import mutable
from mm_tui.core.redact import Redactor
from mm_tui.engine.demo import DemoModel
from mm_tui.engine.instructions import Instructions, load_instructions
from mm_tui.engine.model_stream import ModelClient
from mm_tui.engine.session import Session, SessionError
from mm_tui.engine.session_listing import find_session, latest_session
from mm_tui.engine.turn import Engine
from mm_tui.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mm_tui.engine.servers import Preset
    from mm_tui.tools.mcp import McpPool


class StartupError(Exception):
    """Start-up cannot go on; the message is one line for the person."""


@mutable
class Started:
    engine: Engine
    notes: list[str]  # lines for the banner: the demo model, skipped servers, resumed session,
    # the project instructions read
    warnings: list[str] = field(default_factory=list)  # those of the notes that are warnings

    @property
    def on_demo(self) -> bool:
        return isinstance(self.engine.client, DemoModel)


DEMO_NOTE = (
    "no model server found — running on the built-in demo model. Start Ollama, llama.cpp, "
    "LM Studio, vLLM or Docker Model Runner and run mm again, or use "
    "--base-url http://host:port/v1 --model NAME"
)


@mutable
class Picked:
    """The model client start-up chose, its notes, and whether its server answered (None when
    not asked: the demo model, a server found by detection, which has just answered)."""

    client: ModelClient
    notes: list[str]
    answering: bool | None = None


async def pick_model(
    settings: Settings,
    *,
    demo: bool = False,
    presets: Sequence[Preset] | None = None,
    resumed: Session | None = None,
) -> Picked:
    """The configured server, else the first local server that answers, else the demo model.

    `resumed`: a resumed session, whose model (and provider) is kept when detection finds the
    very server its journal names; the journal's server itself is never asked for that reason
    (see `_journal_server_note`).

    Its notes and its `StartupError` are redacted with the settings' secrets: they quote the
    base URL (which may carry a password) and what the server answered (a server that echoes
    the Authorization header quotes the key), and no engine, whose events are redacted, exists
    yet. Every front end starts through here: line mode, `-p`, the window, `mm -acp`."""
    redact = Redactor(settings.secret_values()).text
    try:
        picked = await _pick_model(settings, demo=demo, presets=presets, resumed=resumed)
    except StartupError as exc:
        raise StartupError(redact(str(exc))) from None
    picked.notes[:] = [redact(note) for note in picked.notes]
    return picked


async def _pick_model(
    settings: Settings,
    *,
    demo: bool,
    presets: Sequence[Preset] | None,
    resumed: Session | None,
) -> Picked:
    notes: list[str] = []
    if demo:
        return Picked(
            DemoModel(), ["demo mode: the built-in demo model, in a throw-away playground"]
        )
    from mm_tui.engine.provider import OpenAIProvider
    from mm_tui.engine.servers import detect_local_server, list_models

    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    if settings.base_url:
        from mm_tui.engine.server_check import base_url_problem, check_server

        problem = base_url_problem(settings.base_url)
        if problem is not None:
            raise StartupError(problem)
        check = await check_server(settings.base_url, api_key=api_key)
        base_url = check.base_url
        if check.note:
            notes.append(check.note)
        model = settings.model
        if not model:
            if check.answering is False:  # it is down: naming a model would not help
                raise StartupError(f"mm: {check.note.rstrip('.')}.")
            try:
                models = await list_models(base_url, api_key=api_key)
            except Exception as exc:
                said = str(exc).rstrip(".")
                raise StartupError(
                    f"mm: no model given, and {base_url}/models cannot be listed ({said}). "
                    "Set model in the config or pass --model."
                ) from None
            if not models:
                raise StartupError(
                    f"mm: {base_url}/models lists no model — set model or pass --model"
                )
            model = models[0]
        client = OpenAIProvider(
            base_url,
            model,
            provider=settings.provider or "",
            api_key=api_key,
            temperature=settings.temperature,
        )
        client.answering = check.answering  # a server found down is not retried for seconds
        return Picked(client, notes, check.answering)
    found = await detect_local_server(presets=presets)
    model = settings.model or (found.model if found is not None else None)
    if found is None or not model:
        return Picked(DemoModel(), [DEMO_NOTE])
    provider = settings.provider or found.name
    if resumed is not None and _same_server(resumed.base_url, found.base_url):
        model = settings.model or resumed.model or model
        provider = settings.provider or resumed.provider or provider
    client = OpenAIProvider(
        found.base_url,
        model,
        provider=provider,
        api_key=api_key,
        temperature=settings.temperature,
    )
    return Picked(client, notes, True)


async def start(
    settings: Settings,
    cwd: Path,
    *,
    demo: bool = False,
    resume: str | None = None,
    presets: Sequence[Preset] | None = None,
    playground: bool = False,
) -> Started:
    """`resume`: None for a new session, "" for the latest one, else a session id. `presets`:
    the servers detection probes (the built-in table by default; tests give their own ports).
    `playground`: when no server answers, the demo model works in a throw-away playground (the
    interactive front ends: `make run` on a machine with no model server is `mm --demo`)."""
    folders = sessions_folders(settings, cwd)
    session: Session | None = None
    if resume is not None:
        try:
            session = find_session(folders, resume) if resume else latest_session(folders)
        except SessionError as exc:
            raise StartupError(str(exc)) from None
        if session is None:
            raise StartupError(f"mm: no session to resume in {folders[0]}")
    # The tools and the project's instructions do not depend on the model. For a server
    # elsewhere they are made in a thread while it is asked (network waits on this loop). For
    # one on this machine (a configured local one, or detection), which answers within a
    # millisecond or two, they are made here once it has: in a thread, the two took turns at
    # the GIL and ready came 2 to 3 ms later (docs/performance.md). The demo asks nobody.
    local = None
    if not demo and _asked_elsewhere(settings):
        local = asyncio.ensure_future(asyncio.to_thread(_local_parts, settings, cwd))
    try:
        picked = await pick_model(settings, demo=demo, presets=presets, resumed=session)
    except BaseException:
        if local is not None:
            await asyncio.gather(local, return_exceptions=True)
        raise
    client, notes = picked.client, list(picked.notes)
    # A server that does not answer: its note is the one warning among the notes.
    warnings = list(picked.notes) if picked.answering is False else []
    if session is not None:
        notes.append(f"resumed session {session.id}")
        note = None if demo else _journal_server_note(session, client)
        if note is not None:
            notes.append(note)
    else:
        if isinstance(client, DemoModel) and not demo and playground:
            # No model server: the demo model works in a playground, as `mm --demo` does, never
            # in the person's own folder (it edits files and runs tests).
            from mm_tui.engine.playground import make_playground

            cwd = make_playground()
            folders = sessions_folders(settings, cwd)
            notes.append(f"the demo works in a throw-away playground: {cwd}")
            if local is not None:  # made for the folder left behind
                await asyncio.gather(local, return_exceptions=True)
                local = None
        session = Session.new(
            folders[0],
            cwd=str(cwd),
            model=client.model,
            provider=client.provider,
            base_url=client.base_url,
        )
    asked = _window_asked(client, settings, picked.answering)
    # The AGENTS.md files are read here with the rest (in the window: after its first frame).
    registry, instructions = await local if local is not None else _local_parts(settings, cwd)
    engine = Engine(
        settings,
        client,
        cwd=cwd,
        session=session,
        registry=registry,
        instructions=instructions,
    )
    engine.server_answering = picked.answering
    if settings.mcp_servers:  # they connect in the background from here; tools join when ready
        pool = mcp_pool(settings.mcp_servers, cwd)
        notes.extend(pool.notes)  # a `${VAR}` that is not set
        engine.registry.add_source(pool)
        engine.registry.start()
    notes.extend(await engine.learn_context_window(asked))
    if not isinstance(client, DemoModel):  # probed in the background (engine/ask_style.py)
        engine.round_trip.asking.start(client, lambda: engine.context.meter.window)
    warnings.extend(engine.context.window_warnings)  # contextWindow that Ollama cannot keep
    notes.extend(session.warnings)
    notes.extend(engine.registry.warnings)
    notes.extend(instruction_notes(instructions))
    warnings.extend(instructions.warnings)
    # commands run unconfined (auto mode without Landlock): shown as the warning it is
    warnings.extend(w for w in engine.registry.warnings if w.startswith("[warning: sandbox:"))
    redact = engine.redactor.text  # a note can quote a server's answer or a base URL
    notes = [redact(note) for note in notes]
    warnings = [redact(warning) for warning in warnings]
    return Started(engine=engine, notes=notes, warnings=warnings)


def _window_asked(
    client: Any, settings: Settings, answering: bool | None
) -> asyncio.Future[Any] | None:
    """The model's context window, asked of its server as soon as the model is picked: the
    answer comes while the tools are made and the engine built, not after (a local server's
    round trip, on the way to ready). None where it will not be asked (the demo model, a
    configured contextWindow, a server found down). Whatever becomes of it is taken: a lookup
    that fails says so where it is awaited, or nowhere if start-up failed first."""
    reader = getattr(client, "read_context_window", None)
    if reader is None or settings.context_window or answering is False:
        return None
    task = asyncio.ensure_future(reader())
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
    return task


def _asked_elsewhere(settings: Settings) -> bool:
    """Whether start-up asks a server that is not plain http on this machine."""
    from mm_tui.engine.plain_http import plain_local

    return bool(settings.base_url) and not plain_local(settings.base_url.strip())


def _local_parts(settings: Settings, cwd: Path) -> tuple[ToolRegistry, Instructions]:
    """What an agent needs of its folder: the tools, and the project's instructions."""
    return tool_registry(settings, cwd), load_instructions(cwd)


def instruction_notes(instructions: Instructions) -> list[str]:
    """What was read (one note, none when nothing was), then its warnings."""
    note = instructions.note()
    return ([note] if note else []) + list(instructions.warnings)


def agent_runners(entries: Mapping[str, AgentEntry], command: Sequence[str] | None) -> AgentRunner:
    """Asked agents run as child `mm -acp` processes of the ACP client's pool, loaded at the
    first call (an mm without agents never loads the ACP package)."""
    from mm_tui.acp_client import AgentPool

    return AgentPool.acquire(entries, command)


def mcp_pool(
    servers: Mapping[str, McpServer], cwd: Path, *, beside: McpPool | None = None
) -> McpPool:
    """MCP servers (stdio ones working in `cwd`), as a source of tools for a registry; the
    package is loaded only when some server is configured. `beside`: another pool of the same
    registry, whose tool names this one's do not take."""
    from mm_tui.tools.mcp import McpPool

    return McpPool(servers, cwd, beside=beside)


def tool_registry(settings: Settings, cwd: Path) -> ToolRegistry:
    """The tools of an agent made here, the one place that knows how asked agents run."""
    return ToolRegistry.from_settings(settings, cwd, runners=agent_runners)


def _is_http(url: str | None) -> bool:
    return url is not None and url.startswith(("http://", "https://"))


def _same_server(one: str | None, other: str | None) -> bool:
    return one is not None and other is not None and one.rstrip("/") == other.rstrip("/")


def _journal_server_note(session: Session, client: ModelClient) -> str | None:
    """A resumed session goes on with the server the person configured (a flag, a variable,
    their config file) or the one detection found, never with the one its journal names: the
    journal is a file anyone who can write the session folder may have rewritten, and mm
    would send the api key and the whole conversation to the server it names. When the two
    differ, this note says so."""
    named = session.base_url
    if named is None or not _is_http(named):
        return None  # the demo model's session, or none named
    if _same_server(named, client.base_url):
        return None
    from mm_tui.core.trust import visible

    going = client.base_url if _is_http(client.base_url) else "the built-in demo model"
    return (
        f"the session was with {visible(named)}, which only its file names: it goes on with "
        f"{going} (pass --base-url to choose the server)"
    )


def new_session_like(engine: Engine) -> Session:
    """A fresh session in the same folder, for the same model: what `/new` starts."""
    return Session.new(
        sessions_folders(engine.settings, engine.cwd)[0],
        cwd=str(engine.cwd),
        model=engine.client.model,
        provider=engine.client.provider,
        base_url=engine.client.base_url,
    )
