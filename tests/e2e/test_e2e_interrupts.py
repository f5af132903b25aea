"""4. Interrupting a real generation: cancelling it (the engine's cancel, Esc in the window), and
the watchdog when the server stops (SIGSTOP) in the middle of an answer. Each ends the turn with
a clear message, keeps what the model had said, and leaves a session whose next prompt works."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from e2e_helpers import (
    assert_well_formed,
    engine_on,
    items_of,
    next_turn_answers,
    saved_session,
    send,
    texts,
    window,
    window_answers_next,
    write_config,
)
from support.waiting import await_until
from support.window_helpers import all_text, settle

from mm_tui.core.events import EngineError, Event, TextDelta
from mm_tui.window.transcript.store import AnswerItem, NoticeItem, RecapItem

LONG = "Write a long story about a dragon who learns to write Python. Use at least 600 words."
SHORT = "Say hello."
NO_TOOLS = {"bashTool": False, "editTools": False}
# Long enough for the first token on a busy machine (the prompt is evaluated first), short
# enough for a test.
WATCHDOG = 8.0
WATCHDOG_MESSAGE = (
    f"[error: the model sent nothing for {WATCHDOG:g}s — turn stopped by the watchdog; check "
    "that the model server is still running, or raise watchdogTimeout for a slow model]"
)


async def start_and_wait_for_text(engine, text: str, pieces: int):  # noqa: ANN001, ANN201
    """Start a turn; return its task and its events once `pieces` pieces of text arrived."""
    events: list[Event] = []
    enough = asyncio.Event()

    def emit(event: Event) -> None:
        events.append(event)
        if sum(isinstance(e, TextDelta) for e in events) >= pieces:
            enough.set()

    task = asyncio.create_task(engine.run_turn(text, emit))
    waiting = asyncio.ensure_future(enough.wait())
    await asyncio.wait({task, waiting}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    assert enough.is_set(), f"the turn ended before {pieces} pieces of text: {events}"
    return task, events


async def test_cancelling_a_real_generation(server, project: Path):
    async with engine_on(server, project, **NO_TOOLS) as (engine, _):
        task, events = await start_and_wait_for_text(engine, LONG, pieces=10)
        cancelled_at = time.monotonic()
        assert engine.cancel()
        ended = await asyncio.wait_for(task, 10)
        assert time.monotonic() - cancelled_at < 2.0  # at once, not at the end of the story
        assert ended.stop_reason == "cancelled" and ended.recap().endswith("cancelled")
        said = "".join(texts(events))
        # What the model had said stays in the history, and the session on disk.
        assert engine.session.messages[-1] == {"role": "assistant", "content": said}
        assert saved_session(project)["messages"][-1]["content"] == said
        # The session goes on: the next prompt is taken, with the half story, and answered.
        events, ended = await next_turn_answers(engine, SHORT)
        assert "".join(texts(events)).strip()
        roles = [m["role"] for m in saved_session(project)["messages"]]
        assert roles == ["system", "user", "assistant", "user", "assistant"]


async def test_the_watchdog_when_the_server_stops_mid_answer(server, project: Path):
    async with engine_on(server, project, watchdogTimeout=WATCHDOG, **NO_TOOLS) as (engine, _):
        task, events = await start_and_wait_for_text(engine, LONG, pieces=5)
        server.pause()
        try:
            stopped_at = time.monotonic()
            ended = await asyncio.wait_for(task, WATCHDOG + 10)
            waited = time.monotonic() - stopped_at
        finally:
            server.resume()
        assert WATCHDOG - 0.5 <= waited <= WATCHDOG + 3
        assert ended.stop_reason == "error" and ended.error == WATCHDOG_MESSAGE
        errors = [e for e in events if isinstance(e, EngineError)]
        assert [(e.where, e.message) for e in errors] == [("generation", WATCHDOG_MESSAGE)]
        saved = saved_session(project)
        assert [e["message"] for e in saved["errors"]] == [WATCHDOG_MESSAGE]
        assert saved["messages"][-1] == {"role": "assistant", "content": "".join(texts(events))}
        # Continued, the server finishes nothing for a client that left; the next prompt works.
        events, ended = await next_turn_answers(engine, SHORT)
        assert "".join(texts(events)).strip()
        assert_well_formed(engine.session.messages)


async def test_escape_cancels_in_the_window_and_the_next_prompt_works(server, project: Path):
    write_config(project, temperature=0, **NO_TOOLS)
    app = window(project, baseUrl=server.base_url, model=server.model_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, timeout=30)
        await send(pilot, LONG)
        started = await await_until(
            lambda: any(len(a.text) > 40 for a in items_of(app, AnswerItem)), 60, 0.05, pilot=pilot
        )
        assert started, "waited 60s for the story to start"
        await pilot.press("escape")
        recapped = await await_until(lambda: items_of(app, RecapItem), 10, 0.05, pilot=pilot)
        assert recapped, "waited 10s for the recap"
        await settle(pilot, app, timeout=10)
        (recap,) = items_of(app, RecapItem)
        assert recap.stop_reason == "cancelled" and recap.text.endswith("cancelled")
        assert "cancelled" in all_text(app)
        await window_answers_next(pilot, app, SHORT)
        await settle(pilot, app, timeout=30)
        assert len(items_of(app, AnswerItem)) == 2


async def test_the_watchdog_in_the_window(server, project: Path):
    write_config(project, temperature=0, watchdogTimeout=WATCHDOG, **NO_TOOLS)
    app = window(project, baseUrl=server.base_url, model=server.model_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, timeout=30)
        await send(pilot, LONG)
        started = await await_until(
            lambda: (
                any(len(a.text) > 20 for a in items_of(app, AnswerItem)) or items_of(app, RecapItem)
            ),
            60,
            0.05,
            pilot=pilot,
        )
        assert started, "waited 60s for the story to start"
        assert not items_of(app, RecapItem), all_text(app)
        server.pause()
        try:
            stopped = await await_until(
                lambda: items_of(app, RecapItem), WATCHDOG + 10, 0.05, pilot=pilot
            )
            assert stopped, "the watchdog never stopped the turn"
        finally:
            server.resume()
        await settle(pilot, app, timeout=10)
        (notice,) = [n for n in items_of(app, NoticeItem) if n.level == "error"]
        assert notice.text == WATCHDOG_MESSAGE
        assert "turn stopped by the watchdog" in all_text(app)
        assert items_of(app, RecapItem)[0].stop_reason == "error"
        await window_answers_next(pilot, app, SHORT)
        await settle(pilot, app, timeout=30)
        assert len(items_of(app, AnswerItem)) == 2
