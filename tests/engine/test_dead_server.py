"""A model server that is not there, or a base URL that cannot reach it: the
base URL is diagnosed at start-up with the URL to use, a configured server is asked once at
start-up and the header marked when it does not answer, and retries are said as they happen
instead of a bare spinner. Everything against real sockets: a closed port, the scripted server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.engine import make_engine
from support.scripted_server import Error, Raw, Reply, ScriptedServer, closed_port_url
from support.waiting import await_until, until
from support.window_helpers import started_app

from mm_tui.config import Settings
from mm_tui.core.events import (
    Event,
    ModelRetrying,
    ServerState,
    TextDelta,
    Thinking,
    TurnEnded,
)
from mm_tui.engine.model_stream import ModelError, Retrying, TextChunk
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.server_check import base_url_problem
from mm_tui.engine.turn import Engine
from mm_tui.startup import StartupError, start
from mm_tui.window.widgets.agent_header import AgentHeader

MESSAGES = [{"role": "user", "content": "hi"}]


async def failing(provider: OpenAIProvider, *, close: bool = True) -> tuple[list, ModelError]:
    """The chunks `provider` streamed (its retries) before the error it ended with; closed
    after unless `close` is False."""
    seen: list = []
    try:
        with pytest.raises(ModelError) as raised:
            async for chunk in provider.stream(MESSAGES, []):
                seen.append(chunk)
    finally:
        if close:
            await provider.aclose()
    return seen, raised.value


# --------------------------------------------------------------------------- the base URL


@pytest.mark.parametrize(
    ("given", "fix"),
    [
        ("localhost:11434/v1", "http://localhost:11434/v1"),
        ("127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("api.example.com/v1", "https://api.example.com/v1"),
        ("htp://localhost:8080/v1", "http://localhost:8080/v1"),
    ],
)
def test_a_base_url_without_its_scheme_is_refused_with_the_fix(given: str, fix: str) -> None:
    assert base_url_problem(given) == (
        f'mm: the base URL "{given}" does not start with http:// or https:// — use {fix} '
        "(--base-url, or baseUrl in .mm/config.yaml)"
    )


def test_a_base_url_ending_in_chat_completions_is_refused_with_the_fix() -> None:
    given = "http://localhost:8080/v1/chat/completions"
    assert base_url_problem(given) == (
        f'mm: the base URL "{given}" ends in /chat/completions, which mm adds itself — '
        "use http://localhost:8080/v1 (--base-url, or baseUrl in .mm/config.yaml)"
    )


@pytest.mark.parametrize(
    "good", ["http://localhost:11434/v1", "https://api.openai.com/v1/", "http://h:1/engines/v1"]
)
def test_a_usable_base_url_has_no_problem(good: str) -> None:
    assert base_url_problem(good) is None


async def test_start_up_refuses_a_base_url_without_scheme_at_once(tmp_path: Path) -> None:
    settings = Settings(baseUrl="localhost:11434/v1", model="m", sessionsDir=str(tmp_path))
    with pytest.raises(StartupError, match="use http://localhost:11434/v1"):
        await asyncio.wait_for(start(settings, tmp_path), 2)


# --------------------------------------------------------------------------- the start-up check


async def test_start_up_on_a_dead_server_marks_it_and_warns(tmp_path: Path) -> None:
    url = closed_port_url()
    settings = Settings(baseUrl=url, model="m", sessionsDir=str(tmp_path))
    started = await start(settings, tmp_path)
    try:
        assert started.engine.server_answering is False
        [warning] = started.warnings
        assert warning in started.notes and "connection refused" in warning
    finally:
        await started.engine.aclose()
    # resumed on the dead server: its other notes stay notes, the server's alone is a warning
    started = await start(settings, tmp_path, resume="")
    try:
        assert any(note.startswith("resumed session") for note in started.notes)
        [again] = started.warnings
        assert "connection refused" in again
    finally:
        await started.engine.aclose()


async def test_start_up_fixes_a_missing_v1_and_goes_on(tmp_path: Path) -> None:
    with ScriptedServer(
        Reply("hello"), routes={("GET", "/models"): Error(404, "not found")}
    ) as server:
        settings = Settings(baseUrl=server.root_url, model="m", sessionsDir=str(tmp_path))
        started = await start(settings, tmp_path)
        try:
            assert started.engine.client.base_url == server.base_url
            assert any("lacks /v1" in n for n in started.notes)
            assert started.warnings == []
            end = await started.engine.run_turn("hi", lambda e: None)
            assert end.stop_reason == "end_turn"
        finally:
            await started.engine.aclose()


# --------------------------------------------------------------------------- retries, said


async def test_the_provider_says_each_retry_before_it_waits() -> None:
    seen, error = await failing(OpenAIProvider(closed_port_url(), "m", retries=2, backoff=0.01))
    assert [(c.attempt, c.attempts) for c in seen] == [(2, 3), (3, 3)]
    assert all(isinstance(c, Retrying) and c.unreachable for c in seen)
    assert "connection refused" in seen[0].reason
    assert error.unreachable
    assert "gave up after 3 tries" in error.message


async def test_a_busy_server_is_retried_aloud_then_answers() -> None:
    busy = Error(503, "loading model")
    with ScriptedServer(busy, busy, Reply("at last")) as server:
        provider = OpenAIProvider(server.base_url, "m", retries=3, backoff=0.01)
        try:
            chunks = [c async for c in provider.stream(MESSAGES, [])]
        finally:
            await provider.aclose()
    retries = [c for c in chunks if isinstance(c, Retrying)]
    assert [(r.attempt, r.attempts, r.unreachable) for r in retries] == [
        (2, 4, False),
        (3, 4, False),
    ]
    assert "503" in retries[0].reason and "loading model" in retries[0].reason
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "at last"


def test_the_retry_text_reads_as_the_issue_spells_it() -> None:
    event = ModelRetrying(attempt=2, attempts=5, delay=2.2, reason="connection refused")
    assert event.text == "retrying in 2 s, attempt 2/5: connection refused"
    assert ModelRetrying(attempt=2, attempts=5, delay=0.51, reason="x").text.startswith(
        "retrying in 0.5 s, attempt 2/5"
    )


def retrying_engine(url: str, tmp_path: Path) -> Engine:
    """An engine whose client tries three times, quickly."""
    return make_engine(tmp_path, OpenAIProvider(url, "m", retries=2, backoff=0.01))


async def test_the_engine_tells_retries_and_the_server_state(tmp_path: Path) -> None:
    engine = retrying_engine(closed_port_url(), tmp_path)
    events: list[Event] = []
    try:
        end = await engine.run_turn("hi", events.append)
    finally:
        await engine.aclose()
    assert end.stop_reason == "error"
    retries = [e for e in events if isinstance(e, ModelRetrying)]
    assert [(e.attempt, e.attempts) for e in retries] == [(2, 3), (3, 3)]
    states = [e for e in events if isinstance(e, ServerState)]
    assert [s.answering for s in states] == [False]  # said once, at the first failure
    assert "connection refused" in states[0].message
    assert engine.server_answering is False


async def test_a_server_that_comes_back_is_marked_answering(tmp_path: Path) -> None:
    busy = Error(503, "loading model")
    with ScriptedServer(busy, Reply("back")) as server:
        engine = retrying_engine(server.base_url, tmp_path)
        engine.server_answering = False  # as start-up leaves it when the server was down
        events: list[Event] = []
        try:
            await engine.run_turn("hi", events.append)
        finally:
            await engine.aclose()
    kinds = [type(e) for e in events]
    retry = kinds.index(ModelRetrying)
    # after the retry, the status line says Thinking again before the answer streams
    assert Thinking in kinds[retry:] and kinds.index(TextDelta) > retry
    assert [e.answering for e in events if isinstance(e, ServerState)] == [True]
    assert engine.server_answering is True
    assert isinstance(events[-1], TurnEnded) and events[-1].stop_reason == "end_turn"


# --------------------------------------------------------------------------- the window


async def test_the_window_marks_a_dead_server_and_shows_each_retry(tmp_path: Path) -> None:
    app = started_app(closed_port_url(), tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.engine is not None, "the start-up", pilot=pilot)
        header = app.screen.query_one(AgentHeader)
        assert not header.answering
        assert "no answer" in header.render().plain
        text = "\n".join(i.text for i in app.main.transcript.items if hasattr(i, "text"))
        assert "could not connect to the model server" in text
        # known dead: a request is not retried for seconds, its refusal is said at once
        states: list[str] = []
        app.main.submit("hi")

        def failed() -> bool:
            states.append(app.main.transcript.state or "")
            return (
                app.engine is not None
                and not app.engine.busy
                and len(app.main.transcript.items) > 3
            )

        await await_until(failed, 30, pilot=pilot)
        said = "\n".join(
            getattr(i, "text", "") or getattr(i, "message", "") for i in app.main.transcript.items
        )
        assert said.count("could not connect to the model server") >= 2, said
        assert not any(state.startswith("Retrying") for state in states)
        # a server that answered once and went away is retried, each retry said
        app.engine.client.answering = True
        app.engine.client.backoff = 0.5  # slow retries, so that the status line shows one
        seen = ""
        app.main.submit("again")

        def retrying() -> bool:
            nonlocal seen
            if (app.main.transcript.state or "").startswith("Retrying in"):
                seen = app.main.status.text
            return bool(seen)

        await await_until(retrying, 6, pilot=pilot)
        assert "Retrying in" in seen and "attempt 2/5" in seen, seen
        assert "connection refused" in seen
        app.action_cancel()


# --------------------------------------------------------------------------- what is said


HTTP_SERVER_PAGE = """<!DOCTYPE HTML>
<html lang="en">
    <head><meta charset="utf-8"><title>Error response</title></head>
    <body>
        <h1>Error response</h1>
        <p>Error code: 501</p>
        <p>Message: Unsupported method (&#x27;POST&#x27;).</p>
    </body>
</html>
"""


async def test_a_web_server_that_is_no_model_server_is_said_so_at_once() -> None:
    """Python's http.server as the base URL answers the POST with a 501 HTML page: said as a
    web page that is no model server's API, its words without the tags, and not retried."""
    page = Error(501, body=HTTP_SERVER_PAGE, headers={"Content-Type": "text/html"})
    with ScriptedServer(page, page) as server:
        _, error = await failing(OpenAIProvider(server.base_url, "m", retries=3, backoff=0.01))
        assert len(server.requests) == 1  # no retry: 501 will not change
    message = error.message
    assert "501" in message and "Message: Unsupported method ('POST')." in message
    assert "<" not in message
    assert "does not look like a model server's API; check baseUrl" in message


async def test_a_server_that_closes_the_connection_is_said_so_and_retries_count_from_two() -> None:
    """A server that takes the connection and closes it: said in words (not `ReadError`);
    the first retry, at once on a new connection, is not counted, so the ones said are
    numbered from 2."""
    drop = Raw([b""], drop=True)
    with ScriptedServer(drop, drop, drop, drop) as server:
        provider = OpenAIProvider(server.base_url, "m", retries=2, backoff=0.01)
        seen, error = await failing(provider)
    assert [(c.attempt, c.attempts) for c in seen] == [(2, 3), (3, 3)]
    assert "closed the connection without answering" in seen[0].reason
    assert "ReadError" not in error.message


async def test_a_server_known_dead_is_not_retried_for_seconds(tmp_path: Path) -> None:
    """Start-up found the server refusing connections: the first request says so at once,
    without ten seconds of retries; with no model named, start-up says the server is down
    (with its period) and does not ask for a model."""
    url = closed_port_url()
    settings = Settings(baseUrl=url, model="m", sessionsDir=str(tmp_path))
    started = await start(settings, tmp_path)
    try:
        assert started.engine.client.answering is False
        seen, error = await failing(started.engine.client, close=False)
        assert seen == []  # no retry
        assert "connection refused" in error.message
    finally:
        await started.engine.aclose()
    with pytest.raises(StartupError) as down:
        await start(Settings(baseUrl=url, sessionsDir=str(tmp_path)), tmp_path)
    said = str(down.value)
    assert said.startswith("mm: could not connect to the model server") and said.endswith(".")
    assert "--model" not in said
