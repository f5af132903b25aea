"""Helpers of the end-to-end tests: config files, an engine on the real server, events, the
window. (The real `mm` as a subprocess and its environment are in the support package.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml
from support.engine import make_engine
from support.session_helpers import journal_files, sessions_of
from support.session_helpers import saved as saved_journal
from support.trusting import trust_project_file
from support.waiting import await_until

from mm_tui.config import Settings, load_settings
from mm_tui.core.events import (
    Event,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.turn import Engine
from mm_tui.startup import start


def write_config(folder: Path, **keys: object) -> Path:
    """`.mm/config.yaml` in `folder` with the given keys (temperature 0 unless said), trusted
    as the person's answer records it for an mm whose home is `folder` (keys such as bashTool
    need that)."""
    keys.setdefault("temperature", 0)
    path = folder / ".mm" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(keys), encoding="utf-8")
    trust_project_file(folder, folder)
    return path


# -- in-process: an engine on the real server, every request it sends recorded ---------------------


class Recorded:
    """The JSON bodies mm sent to the server, in order (an httpx request hook sees them)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def hook(self, request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            self.bodies.append(json.loads(request.content))

    def with_tools(self) -> list[dict[str, Any]]:
        return [b for b in self.bodies if b.get("tools")]


@asynccontextmanager
async def engine_on(
    server: Any, folder: Path, **keys: Any
) -> AsyncIterator[tuple[Engine, Recorded]]:
    """An Engine on the real server (temperature 0), its session in `folder`/.mm/sessions."""
    recorded = Recorded()
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(10.0, read=None),
        trust_env=False,
        event_hooks={"request": [recorded.hook]},
    )
    provider = OpenAIProvider(
        server.base_url, server.model_id, provider="llama.cpp", temperature=0, client=client
    )
    engine = make_engine(folder, provider, **keys)
    try:
        yield engine, recorded
    finally:
        engine.cancel()
        await engine.aclose()
        await client.aclose()


async def turn(engine: Engine, text: str, timeout: float = 120) -> tuple[list[Event], TurnEnded]:
    events: list[Event] = []
    ended = await asyncio.wait_for(engine.run_turn(text, events.append), timeout)
    return events, ended


def texts(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


def saved_session(folder: Path) -> dict[str, Any]:
    """The one session file of `folder`, as written on disk: in mm's state folder (the real
    program, whose home is `folder`), or in `.mm/sessions` (an engine made here)."""
    (path,) = journal_files(sessions_of(folder)) or journal_files(folder / ".mm" / "sessions")
    return saved_journal(path.parent, path.name.removesuffix(".jsonl"))


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """Every tool call of an assistant message has exactly one result right after it, and no
    result answers a call that was not made."""
    waiting: list[str] = []
    for message in messages:
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in waiting, message
            waiting.remove(message["tool_call_id"])
            continue
        assert not waiting, f"calls without a result: {waiting}"
        if role == "assistant":
            waiting = [c["id"] for c in message.get("tool_calls") or []]
    assert not waiting, f"calls without a result: {waiting}"


def assert_calls_concluded(events: list[Event]) -> None:
    started = [e.call_id for e in events if isinstance(e, ToolCallStarted)]
    finished = [e.call_id for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(started) == sorted(finished), (started, finished)
    assert len(set(finished)) == len(finished)


# -- window mode ---------------------------------------------------------------------------------


def settings_for(folder: Path, **overrides: Any) -> Settings:
    """The settings mm would load in `folder` (its .mm/config.yaml; no home config, no MM_*)."""
    return load_settings(cwd=folder, home=folder, environ={}, overrides=overrides)


def window(folder: Path, presets: Any = None, **overrides: Any) -> Any:
    """MMApp starting as `mm` does in `folder`, with `overrides` as flags would give them."""
    from mm_tui.window.app import MMApp

    async def boot() -> Any:
        return await start(settings_for(folder, **overrides), folder, presets=presets)

    return MMApp(boot)


async def send(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def items_of(app: Any, kind: type) -> list[Any]:
    return [i for i in app.main.transcript.items if isinstance(i, kind)]


# -- the next prompt after an interruption ---------------------------------------------------------
#
# After an interrupted story the history ends in half a story, and where it was cut depends on
# timing; what the model makes of the next prompt then varies, sometimes the rest of the story, to
# the end of the context. The session is usable when the next prompt is taken and answered: its
# answer streams, and its turn ends, by itself or (past `patience`) when cancelled.


async def next_turn_answers(
    engine: Engine, text: str, patience: float = 30.0
) -> tuple[list[Event], TurnEnded]:
    events: list[Event] = []
    spoke = asyncio.Event()

    def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, TextDelta):
            spoke.set()

    task = asyncio.create_task(engine.run_turn(text, emit))
    speaking = asyncio.ensure_future(spoke.wait())
    await asyncio.wait({task, speaking}, timeout=90, return_when=asyncio.FIRST_COMPLETED)
    speaking.cancel()
    assert spoke.is_set(), f"no answer to the next prompt: {events}"
    done, _ = await asyncio.wait({task}, timeout=patience)
    if not done:
        engine.cancel()
    ended = await asyncio.wait_for(task, 10)
    assert ended.stop_reason in ("end_turn", "cancelled"), ended
    return events, ended


async def window_answers_next(pilot: Any, app: Any, text: str, patience: float = 30.0) -> Any:
    """The same in the window: `text` sent, its answer on screen, its recap. Returns the recap."""
    from mm_tui.window.transcript.store import AnswerItem, RecapItem

    answers = len(items_of(app, AnswerItem))
    recaps = len(items_of(app, RecapItem))
    await send(pilot, text)
    answered = await await_until(
        lambda: (
            any(a.text.strip() for a in items_of(app, AnswerItem)[answers:])
            or len(items_of(app, RecapItem)) > recaps
        ),
        90,
        0.05,
        pilot=pilot,
    )
    assert answered, "waited 90s for the answer to the next prompt"
    assert any(a.text.strip() for a in items_of(app, AnswerItem)[answers:]), "no answer"

    def recapped() -> bool:
        return len(items_of(app, RecapItem)) > recaps

    if not await await_until(recapped, patience, 0.05, pilot=pilot):
        await pilot.press("escape")
        assert await await_until(recapped, 10, 0.05, pilot=pilot), "no recap after Esc"
    recap = items_of(app, RecapItem)[-1]
    assert recap.stop_reason in ("end_turn", "cancelled"), recap
    return recap
