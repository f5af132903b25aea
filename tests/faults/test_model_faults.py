"""Faults of the model connection, each through the whole engine against
the scripted server really listening on 127.0.0.1. Every scenario ends with mm still usable: the
next prompt works and the session file loads."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from support.engine import make_engine, of, turn
from support.program import mm
from support.scripted_server import (
    SSE,
    Error,
    Raw,
    Reply,
    ScriptedServer,
    call,
    chunk,
    drop_after,
    encode_sse,
    finish_chunk,
    interleave,
    role_chunk,
    silence_after,
    split_bytes,
    text_chunks,
    tool_call_chunks,
)
from support.session_helpers import saved as saved_session
from support.session_helpers import sessions_of
from support.waiting import await_until
from support.waits import Waits

from mm_tui.core.events import (
    EngineError,
    Event,
    ModelRetrying,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.session import Session
from mm_tui.engine.turn import Engine


def retrying_engine(server: ScriptedServer, folder: Path, **settings: object) -> Engine:
    """An engine whose client retries as a configured one does, quickly (backoff 0.05 s)."""
    client = OpenAIProvider(server.base_url, "m", backoff=0.05, retries=3)
    return make_engine(folder, client, sessions=folder / "sessions", **settings)


def shown(events: list[Event]) -> str:
    return "".join(e.text for e in of(events, TextDelta))


async def still_usable(engine: Engine, server: ScriptedServer, scripted: bool = True) -> None:
    """The next prompt works and the session file loads, well formed."""
    if scripted:
        server.script(Reply("still here"))
    events = await turn(engine, "are you there?")
    assert shown(events) == "still here"
    assert of(events, TurnEnded)[0].stop_reason == "end_turn"
    loaded = Session.load(engine.session.path.parent, engine.session.id)
    messages = loaded.messages
    assert messages[-1] == {"role": "assistant", "content": "still here"}
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    asked = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    assert asked == answered  # every call has its result
    await engine.aclose()


# -- 1. a stream cut in the middle of a tool call's arguments ------------------------------------


def cut_call(text: str, arguments: dict, events_before_cut: int) -> SSE:
    chunks = [role_chunk(), *text_chunks(text), *tool_call_chunks("c1", "bash", arguments, split=3)]
    return drop_after(events_before_cut, chunks)


async def test_a_cut_in_a_tool_calls_arguments_is_asked_again_and_nothing_shows_twice(
    tmp_path: Path,
) -> None:
    arguments = {"command": "echo once"}
    whole = Reply("Let me look. ", tool_calls=[call("bash", arguments, id="c1")])
    with ScriptedServer(cut_call("Let me look. ", arguments, 6), whole, Reply("done")) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "look")
        assert shown(events) == "Let me look. done"  # the retried text was not shown again
        (started,) = of(events, ToolCallStarted)  # run once, with the whole arguments
        assert started.arguments == arguments
        (finished,) = of(events, ToolCallFinished)
        assert finished.output == "once\n"
        assert not of(events, EngineError)
        assert len(server.requests) == 3  # the cut answer, its retry, the answer after the tool
        assert server.requests[0].messages == server.requests[1].messages
        assistant = [m for m in engine.session.messages if m["role"] == "assistant"][0]
        assert assistant["content"] == "Let me look. "
        await still_usable(engine, server)


async def test_a_repeated_chunk_still_brings_its_finish_reason(tmp_path: Path) -> None:
    """The retry's last chunk repeats text already shown and carries the finish reason (no
    [DONE] follows): the answer still ends there, with its tool call."""
    arguments = {"command": "echo once"}
    retry = SSE(
        [
            role_chunk(),
            *tool_call_chunks("c1", "bash", arguments, split=3),
            chunk({"content": "Let me look. "}, "tool_calls"),
        ],
        done=False,
    )
    with ScriptedServer(cut_call("Let me look. ", arguments, 6), retry, Reply("done")) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "look")
        assert shown(events) == "Let me look. done"
        assert [e.output for e in of(events, ToolCallFinished)] == ["once\n"]
        assert len(server.requests) == 3
        await still_usable(engine, server)


async def test_a_retry_that_says_something_else_shows_only_what_is_new(tmp_path: Path) -> None:
    arguments = {"command": "true"}
    retry = Reply("Let me check. ", tool_calls=[call("bash", arguments, id="c1")])
    with ScriptedServer(cut_call("Let me look. ", arguments, 5), retry, Reply("ok")) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "look")
        assert shown(events) == "Let me look. check. ok"
        await still_usable(engine, server)


async def test_cut_at_every_try_ends_with_a_clear_error_and_runs_nothing(tmp_path: Path) -> None:
    arguments = {"command": "touch ran"}
    cuts = [cut_call("Working. ", arguments, 5) for _ in range(4)]
    with ScriptedServer(*cuts) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "go")
        assert shown(events) == "Working. "
        assert not of(events, ToolCallStarted)  # never run on half arguments
        assert not (tmp_path / "ran").exists()
        (error,) = of(events, EngineError)
        assert "closed the stream in the middle of the answer, in a tool call" in error.message
        assert "gave up after 4 tries" in error.message
        assert of(events, TurnEnded)[0].stop_reason == "error"
        assert len(server.requests) == 4
        await still_usable(engine, server)


async def test_a_cut_in_plain_text_is_not_asked_again(tmp_path: Path) -> None:
    with ScriptedServer(drop_after(3, [role_chunk(), *text_chunks("Half an answ", 4)])) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "go")
        assert shown(events) == "Half an "
        assert "closed the stream in the middle" in of(events, EngineError)[0].message
        assert len(server.requests) == 1
        await still_usable(engine, server)


# -- 2. 429 and its hints, 5xx retried, 4xx not ------------------------------------------------


def busy(**headers: str) -> Error:
    return Error(429, "Rate limit reached", headers=headers)


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"Retry-After": "1"}, 1.0, 1.0),  # seconds
        ({"retry-after-ms": "400", "Retry-After": "9"}, 0.4, 0.4),  # milliseconds win
        ({"Retry-After": "later, maybe"}, 0.05, 0.075),  # garbage: backoff with jitter
        ({"Retry-After": "3600"}, 0.5, 0.5),  # capped (the cap is 0.5 s here)
    ],
    ids=["seconds", "milliseconds", "garbage", "capped"],
)
async def test_429_honours_the_servers_hint_up_to_a_cap(
    tmp_path: Path, headers: dict[str, str], low: float, high: float
) -> None:
    with ScriptedServer(busy(**headers), Reply("after the wait")) as server:
        engine = retrying_engine(server, tmp_path)
        engine.client.max_retry_after = 0.5 if headers.get("Retry-After") == "3600" else 30
        engine.client.sleep = waits = Waits()
        events = await turn(engine, "hi")
        assert shown(events) == "after the wait"
        assert len(waits.asked) == 1 and low <= waits.asked[0] <= high, waits.asked
        await still_usable(engine, server)


async def test_429_with_an_http_date(tmp_path: Path) -> None:
    when = formatdate(time.time() + 100, usegmt=True)  # whole seconds: 99 to 100 s away
    with ScriptedServer(busy(**{"Retry-After": when}), Reply("after the date")) as server:
        engine = retrying_engine(server, tmp_path)
        engine.client.max_retry_after = 1000
        engine.client.sleep = waits = Waits()
        events = await turn(engine, "hi")
        # the date, less the time the request took (a loaded machine's seconds at most)
        assert len(waits.asked) == 1 and 80 <= waits.asked[0] <= 100, waits.asked
        assert shown(events) == "after the date"
        await still_usable(engine, server)


async def test_backoff_without_a_hint_grows_with_jitter(tmp_path: Path) -> None:
    with ScriptedServer(Error(503), Error(503), Error(503), Reply("third time")) as server:
        engine = retrying_engine(server, tmp_path)
        engine.client.sleep = waits = Waits()
        await turn(engine, "hi")
        # backoff 0.05 s doubling, each with up to half again of jitter
        low, high = [0.05, 0.1, 0.2], [0.075, 0.15, 0.3]
        assert len(waits.asked) == 3, waits.asked
        assert all(a <= w <= b for a, w, b in zip(low, waits.asked, high, strict=True)), waits.asked
        await still_usable(engine, server)


async def test_cancelling_stops_the_wait_at_once(tmp_path: Path) -> None:
    with ScriptedServer(busy(**{"Retry-After": "25"})) as server:
        engine = retrying_engine(server, tmp_path)
        asked: list[float] = []

        async def wait_forever(delay: float) -> None:  # the wait ends by the cancel or never
            asked.append(delay)
            await asyncio.Event().wait()

        engine.client.sleep = wait_forever
        events: list[Event] = []
        task = asyncio.create_task(engine.run_turn("hi", events.append))
        # cancelled in the 25 s wait the server asked for, once the engine said it waits
        assert await await_until(lambda: of(events, ModelRetrying)), "no retry was said"
        assert await await_until(lambda: asked), "the wait never began"
        assert asked == [25.0]
        assert engine.cancel()  # what Esc, Ctrl+C and /abort do
        ended = await task  # only a cancel that stops the wait ends it
        assert ended.stop_reason == "cancelled"
        await still_usable(engine, server)


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_errors_are_retried(tmp_path: Path, status: int) -> None:
    with ScriptedServer(Error(status, "overloaded"), Reply("recovered")) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "hi")
        assert shown(events) == "recovered"
        assert len(server.requests) == 2
        await still_usable(engine, server)


@pytest.mark.parametrize("status", [400, 401, 404, 413])
async def test_client_errors_are_not_retried_and_show_the_servers_words(
    tmp_path: Path, status: int
) -> None:
    said = f"the server's own words for {status}"
    with ScriptedServer(Error(status, said)) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "hi")
        (error,) = of(events, EngineError)
        assert said in error.message and str(status) in error.message
        assert len(server.requests) == 1
        assert of(events, TurnEnded)[0].stop_reason == "error"
        await still_usable(engine, server)


# -- 3. context overflow ---------------------------------------------------------------------------

OVERFLOWS = {
    "openai": Error(
        400,
        "This model's maximum context length is 4096 tokens. However, your messages resulted in "
        "5021 tokens. Please reduce the length of the messages.",
    ),
    "llama.cpp": Error(
        400,
        body={
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ),
    "as a 500": Error(500, "prompt is too long: 9000 tokens > 8192 context window"),
    "in the stream": SSE(
        [role_chunk(), {"error": {"message": "context length exceeded (8192)"}}], done=False
    ),
}


# How many requests a refusal costs: one more, made after making room, when the server states
# its window (OpenAI's wording does); none when it does not, for mm guesses no window.
ASKED = {"openai": 2, "llama.cpp": 1, "as a 500": 1, "in the stream": 1}


@pytest.mark.parametrize("name", OVERFLOWS)
async def test_context_overflow_says_what_to_do_and_is_retried_once_at_most(
    tmp_path: Path, name: str
) -> None:
    with ScriptedServer(OVERFLOWS[name], OVERFLOWS[name]) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "a very long question")
        (error,) = of(events, EngineError)
        assert "no longer fits the model's context" in error.message
        assert "/compact" in error.message and "larger context" in error.message
        assert len(server.requests) == ASKED[name]
        # the same conversation asked again; the system prompt may be its short form, when
        # the window the refusal stated leaves the full one over the fixed prompt's budget
        first, last = server.requests[0].messages, server.requests[-1].messages
        assert last[1:] == first[1:]
        assert last[0]["role"] == "system" and last[0]["content"].startswith("You are mm")
        server.drop_script()  # the second refusal, when none was retried
        saved = saved_session(engine.session)
        assert saved["errors"][-1]["message"] == error.message
        # mm now knows the window (when the server said it) and compacts before the next
        # request: a model that summarises, then answers.
        server.on_empty = lambda req: Reply(
            "a summary" if "Summarise this conversation" in str(req.messages[-1]) else "still here"
        )
        await still_usable(engine, server, scripted=False)


# -- 4. silence, and awkward but valid streams ---------------------------------------------------


@pytest.mark.parametrize("after", [0, 2])
async def test_headers_then_silence_ends_the_turn_by_the_watchdog(
    tmp_path: Path, after: int
) -> None:
    with ScriptedServer(silence_after(after, [role_chunk(), *text_chunks("abcdef", 3)])) as server:
        engine = retrying_engine(server, tmp_path, watchdogTimeout=1)
        events = await turn(engine, "hi")  # the server never speaks again: only the watchdog
        (error,) = of(events, EngineError)
        assert "the model sent nothing for 1s — turn stopped by the watchdog" in error.message
        assert shown(events) == ("abc" if after == 2 else "")
        await still_usable(engine, server)


async def test_an_awkward_stream_parses_whole(tmp_path: Path) -> None:
    """Keep-alive comments, CRLF line ends, a UTF-8 character split across TCP packets, events
    split across packets, and two tool calls whose pieces interleave."""
    first = tool_call_chunks("c1", "bash", {"command": "echo é"}, split=4, index=0)
    second = tool_call_chunks("c2", "bash", {"command": "echo 🙂"}, split=4, index=1)
    chunks = [
        role_chunk(),
        chunk({"content": "Deux appels — "}),
        chunk({"content": "voilà 🙂. "}),
        b": keep-alive\n\n",
        *interleave(first, second),
        finish_chunk("tool_calls"),
    ]
    body = b"".join(encode_sse(chunks, crlf=True))
    cuts = range(3, len(body), 7)  # every packet cuts something: events, lines, characters
    with ScriptedServer(Raw(split_bytes(body, cuts), delay=0.0005), Reply("both ran")) as server:
        engine = retrying_engine(server, tmp_path)
        events = await turn(engine, "two calls")
        assert shown(events) == "Deux appels — voilà 🙂. both ran"
        assert [e.arguments["command"] for e in of(events, ToolCallStarted)] == [
            "echo é",
            "echo 🙂",
        ]
        assert [e.output for e in of(events, ToolCallFinished)] == ["é\n", "🙂\n"]
        await still_usable(engine, server)


# -- 5. a session whose last tool calls have no results --------------------------------------------


def test_a_crash_between_a_call_and_its_result_resumes_well_formed(tmp_path: Path) -> None:
    """The real `mm -p --resume` on a session written by a process that died after the model
    asked for two tools and before either answered: each call gets a synthetic result saying it
    was interrupted, so the history sent to the model is well formed."""
    folder = tmp_path / ".mm" / "sessions"
    session = Session.new(folder, cwd=str(tmp_path), model="m", provider="p", base_url="u")
    session.messages += [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "do two things"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "k1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                {"id": "k2", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            ],
        },
    ]
    session.save()
    with ScriptedServer(Reply("picking up")) as server:
        args = ["--base-url", server.base_url, "--model", "m", "--resume", "-p", "go on"]
        result = mm(*args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "picking up" in result.stdout
        sent = server.requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert [m["tool_call_id"] for m in sent[3:5]] == ["k1", "k2"]
    assert all("interrupted" in m["content"] for m in sent[3:5])
    # The session, found in the project's old folder, goes on in mm's state folder.
    loaded = Session.load(sessions_of(tmp_path), session.id)
    assert [m["role"] for m in loaded.messages][-2:] == ["user", "assistant"]
