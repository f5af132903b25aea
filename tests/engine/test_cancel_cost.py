"""A cancelled request stops costing the server, as far as mm can make it: mm closes the
connection at the cancel (the scripted server's own record of the hang-up), and when the server
goes on writing the cancelled answer regardless (llama-cpp-python's non-streamed ones; the
scripted `Generating` plays it), the next request says so (`ServerFinishing`) while it waits
behind it, and the watchdog waits for it, within a bound."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.engine import make_engine
from support.scripted_server import EmptyBody, Generating, Reply, ScriptedServer, silence_after
from support.scripted_server import text_chunks as chunks_of
from support.waiting import until

from mm_tui.core.events import (
    FINISHING,
    EngineError,
    Event,
    ServerFinishing,
    TextDelta,
    Thinking,
    TurnEnded,
)
from mm_tui.engine.server_watch import FINISH_WATCHDOGS
from mm_tui.engine.turn import Engine

NO_TOOLS = {"bashTool": False, "editTools": False}
SLOW = 0.05  # the least wait for a first word that counts as waiting behind a cancelled answer


class Turn:
    """A turn running in a task, its events as they come."""

    def __init__(self, engine: Engine, text: str) -> None:
        self.events: list[Event] = []
        self.task = asyncio.create_task(engine.run_turn(text, self.events.append))

    def said(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))

    def finishing(self) -> list[ServerFinishing]:
        return [e for e in self.events if isinstance(e, ServerFinishing)]

    def errors(self) -> list[str]:
        return [e.message for e in self.events if isinstance(e, EngineError)]


async def cancelled_turn(
    engine: Engine, server: ScriptedServer | None = None, words: str = "Once upon"
) -> Turn:
    """A turn cancelled once the `words` shown came, or once `server` has its second
    request."""
    first = Turn(engine, "a long answer")
    if server is None:
        await until(lambda: first.said() == words, "the words shown")
    else:
        await until(lambda: len(server.requests) == 2, "the request sent whole")
    assert engine.cancel()
    ended = await asyncio.wait_for(first.task, 30)
    assert ended.stop_reason == "cancelled"
    return first


async def test_a_cancel_closes_the_connection_at_once(tmp_path: Path) -> None:
    """The server sees the socket closed while it still generates, mm's client still open and
    no other request made: the cancel itself closed it (a connection kept for the pool would
    stay open until the client closes)."""
    generating = Generating()
    with ScriptedServer(generating) as server:
        engine = make_engine(tmp_path, server, **NO_TOOLS)
        try:
            first = await cancelled_turn(engine)
            assert first.said() == "Once upon"
            await until(generating.hung_up.is_set, "the server's record of the hang-up")
            assert not generating.done.is_set() and len(server.requests) == 1
        finally:
            generating.finish()
            await engine.aclose()


async def test_a_cancel_closes_a_non_streamed_request_too(tmp_path: Path) -> None:
    """A request mm sends whole (to a server that lost a streamed answer: llama-cpp-python)
    has its connection closed at the cancel as well, before any answer."""
    generating = Generating()
    with ScriptedServer(EmptyBody(), generating) as server:
        engine = make_engine(tmp_path, server, **NO_TOOLS)
        try:
            await cancelled_turn(engine, server)
            await until(generating.hung_up.is_set, "the server's record of the hang-up")
            assert [r.stream for r in server.requests] == [True, False]
            assert not generating.done.is_set()
        finally:
            generating.finish()
            await engine.aclose()


async def test_the_request_behind_a_finishing_answer_says_so_and_waits(tmp_path: Path) -> None:
    """The server goes on with the cancelled answer and holds the next request until it ends:
    the next turn says the server is still finishing the last answer, the watchdog (a tenth of
    a second here) does not end it meanwhile, and once the old answer ends the turn gets its
    own, says "Thinking" again, and ends as any other."""
    generating = Generating()
    with ScriptedServer(generating, Reply("next answer")) as server:
        engine = make_engine(tmp_path, server, watchdogTimeout=0.1, **NO_TOOLS)
        engine.server.slow_floor = SLOW
        engine.server.finish_watchdogs = 300  # the bound, far: the next test has it near
        try:
            await cancelled_turn(engine)
            second = Turn(engine, "next")
            await until(lambda: second.finishing(), "the server said to be finishing")
            await until(lambda: len(server.requests) == 2, "the second request")
            await asyncio.sleep(0.5)  # five times the watchdog: it would have ended the turn
            assert not second.task.done(), second.events
            generating.finish()
            ended = await asyncio.wait_for(second.task, 30)
        finally:
            generating.finish()
            await engine.aclose()
    assert (ended.stop_reason, second.errors(), second.said()) == ("end_turn", [], "next answer")
    states = [
        e.state if isinstance(e, Thinking) else e.text
        for e in second.events
        if isinstance(e, Thinking | ServerFinishing)
    ]
    assert states == ["Thinking", FINISHING, "Thinking"]
    (said,) = second.finishing()
    assert said.text == "the server is still finishing the last answer"
    # The server is free again: the turn after is an ordinary one.
    assert engine.server.cancelled_at is None


async def test_the_watchdog_still_ends_a_wait_behind_an_answer_that_never_ends(
    tmp_path: Path,
) -> None:
    """An old answer that never ends (a server stuck): the watchdog waits for it only so long,
    FINISH_WATCHDOGS watchdog times after the cancel and then its own, and says why it
    stopped."""

    generating = Generating()
    with ScriptedServer(generating, Reply("never sent")) as server:
        engine = make_engine(tmp_path, server, watchdogTimeout=0.2, **NO_TOOLS)
        engine.server.slow_floor = SLOW
        try:
            await cancelled_turn(engine)
            second = Turn(engine, "next")
            ended = await asyncio.wait_for(second.task, 30)
        finally:
            generating.finish()
            await engine.aclose()
    assert ended.stop_reason == "error" and len(server.requests) == 2
    (said,) = second.finishing()
    assert said.seconds <= (FINISH_WATCHDOGS + 1) * 0.2
    (error,) = second.errors()
    assert "after a cancelled answer, the longest mm waits for the server to finish one" in error
    assert "turn stopped by the watchdog" in error


async def test_a_server_that_stopped_the_cancelled_answer_is_not_said_to_finish_it(
    tmp_path: Path,
) -> None:
    """A server that answers the next request at once (it stopped the cancelled answer, as
    llama-cpp-python stops a streamed one) is not said to be finishing anything: the status
    line says "Thinking", and the turn after is an ordinary one."""
    hanging = silence_after(1, chunks_of("never"))
    with ScriptedServer(hanging, Reply("next answer"), Reply("third answer")) as server:
        engine = make_engine(tmp_path, server, watchdogTimeout=30, **NO_TOOLS)
        try:
            await cancelled_turn(engine, words="never")
            assert engine.server.cancelled_at is not None
            second = Turn(engine, "next")
            ended: TurnEnded = await asyncio.wait_for(second.task, 30)
            assert (ended.stop_reason, second.said()) == ("end_turn", "next answer")
            assert second.finishing() == [] and engine.server.cancelled_at is None
        finally:
            await engine.aclose()


async def test_a_request_the_watchdog_stopped_counts_as_cancelled(tmp_path: Path) -> None:
    """The watchdog stops a whole answer that is merely long as well (nothing comes before its
    end): the server goes on with it, and the next request waiting behind it says so."""
    generating = Generating()
    with ScriptedServer(EmptyBody(), generating, Reply("next answer")) as server:
        engine = make_engine(tmp_path, server, watchdogTimeout=0.3, **NO_TOOLS)
        engine.server.slow_floor = SLOW
        engine.server.finish_watchdogs = 300
        try:
            first = Turn(engine, "a long answer")
            assert (await asyncio.wait_for(first.task, 30)).stop_reason == "error"
            assert "turn stopped by the watchdog" in first.errors()[0]
            second = Turn(engine, "next")
            await until(lambda: second.finishing(), "the server said to be finishing")
            generating.finish()
            ended = await asyncio.wait_for(second.task, 30)
        finally:
            generating.finish()
            await engine.aclose()
    assert (ended.stop_reason, second.said()) == ("end_turn", "next answer")
