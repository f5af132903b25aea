"""The one engine factory of the tests, and running a turn on it. An engine on an in-process
model, or on the scripted server through the real provider client:

    engine = make_engine(tmp_path, ScriptedModel(say("hi")))
    engine = make_engine(tmp_path, server)
    events = await turn(engine, "go", answer=lambda asked: Decision.ALLOW_ONCE)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mm_tui.config import Settings, resolve_dir
from mm_tui.core.events import Event, PermissionRequested
from mm_tui.engine.model_stream import ModelClient
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.session import Session
from mm_tui.engine.turn import Engine
from mm_tui.startup import tool_registry
from support.scripted_server import ScriptedServer

SERVER_MODEL = "scripted-model"


def make_engine(
    cwd: Path,
    model: ModelClient | ScriptedServer,
    *,
    settings: Settings | None = None,
    sessions: Path | None = None,
    session: Session | None = None,
    clock: Callable[[], float] | None = None,
    **keys: Any,
) -> Engine:
    """An Engine working in `cwd`, made as start-up makes one: its tools from the settings
    (ask_agent's runners included), a new session of its model.

    `model`: a model client (ScriptedModel, DemoModel, an OpenAIProvider the test configured),
    or a ScriptedServer, talked to through the real provider client (model `scripted-model`,
    no retries, the `apiKey` setting as its key).
    `keys`: settings in their YAML spelling, or `settings` made by the test.
    `sessions`: the session folder (the `sessionsDir` setting, by default `cwd`/.mm/sessions);
    `session`: a session to go on with instead (a loaded one).
    `clock`: the engine's clock (a frozen one for pictures)."""
    if settings is None:
        keys.setdefault("sessionsDir", str(sessions or cwd / ".mm" / "sessions"))
        settings = Settings(**keys)
    elif keys:
        raise TypeError("give either settings or keys, not both")
    if isinstance(model, ScriptedServer):
        key = settings.api_key.get_secret_value() if settings.api_key is not None else None
        model = OpenAIProvider(model.base_url, SERVER_MODEL, api_key=key, retries=0)
    if session is None:
        session = Session.new(
            sessions or resolve_dir(settings.sessions_dir, cwd),
            cwd=str(cwd),
            model=model.model,
            provider=model.provider,
            base_url=model.base_url,
        )
    extra: dict[str, Any] = {} if clock is None else {"clock": clock}
    registry = tool_registry(settings, cwd)
    return Engine(settings, model, cwd=cwd, session=session, registry=registry, **extra)


async def turn(
    engine: Engine, text: str, answer: Callable[[PermissionRequested], Any] | None = None
) -> list[Event]:
    """One turn of `engine` on `text`; its events. `answer` decides each permission question."""
    events: list[Event] = []

    def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, PermissionRequested) and answer is not None:
            engine.answer(event.agent, event.call_id, answer(event))

    await engine.run_turn(text, emit)
    return events


def of(events: list[Event], kind: type) -> list[Any]:
    """The events of one kind, in order."""
    return [e for e in events if isinstance(e, kind)]
