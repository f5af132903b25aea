"""What a cancelled request costs the real server (llama-cpp-python, SmolLM2-135M): mm closes
the connection at the cancel; a streamed answer then stops, but a non-streamed one (what mm
sends this server once it lost a streamed tool call) runs to its end, unread, and the next
request waits behind it. mm then says the server is still finishing the last answer, and the
watchdog does not end the turn meanwhile.

The server's own log is the record: it prints `disconnected` for a stream it stopped, and
`eval time = … / N runs` for every completion it ran to its end. The figures (the server's CPU
time after the cancel, the wait of the next request) are printed (`pytest -s`);
docs/cancelling.md has those of a run."""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest
from e2e_helpers import engine_on, texts
from support.waiting import await_until

from mm_tui.core.events import EngineError, Event, ServerFinishing, TextDelta

LONG = "Write a long story about a dragon who learns to write Python. Use at least 600 words."
SHORT = "Say hello."
NO_TOOLS = {"bashTool": False, "editTools": False}
RUNS = re.compile(r"llama_perf_context_print:\s+eval time =.*/\s+(\d+) runs")


def cpu_seconds(pid: int) -> float:
    """The user and system time of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def log_since(server, offset: int) -> str:  # noqa: ANN001
    return Path(server.log).read_bytes()[offset:].decode(errors="replace")


def log_size(server) -> int:  # noqa: ANN001
    return Path(server.log).stat().st_size


async def burned_after(server, seconds: float = 3.0) -> float:  # noqa: ANN001
    """The server's CPU seconds during the next `seconds`."""
    before = cpu_seconds(server.proc.pid)
    await asyncio.sleep(seconds)
    return cpu_seconds(server.proc.pid) - before


async def test_a_cancelled_stream_stops_the_server(server, project: Path) -> None:
    """Streamed, the answer stops at the close: the server says `disconnected`, runs no
    completion to its end, and the next one-token request waits for nothing."""
    mark = log_size(server)
    async with engine_on(server, project, **NO_TOOLS) as (engine, _):
        events: list[Event] = []
        task = asyncio.create_task(engine.run_turn(LONG, events.append))
        started = await await_until(
            lambda: sum(isinstance(e, TextDelta) for e in events) >= 10, 120, 0.05
        )
        assert started, f"no words in 120 s: {events}"
        assert engine.cancel()
        assert (await asyncio.wait_for(task, 30)).stop_reason == "cancelled"
        burned = await burned_after(server)
    waited = server.wait_idle()
    log = log_since(server, mark)
    print(
        f"\nstreamed: the server's CPU in the 3 s after the cancel {burned:.2f} s; "
        f"a one-token request then waited {waited:.2f} s"
    )
    assert "disconnected" in log, log[-2000:]
    assert [int(n) for n in RUNS.findall(log)] == [1], log[-2000:]  # wait_idle's, alone


@pytest.mark.timeout(600)  # the old answer, 600 tokens, takes minutes on a loaded machine
async def test_a_cancelled_whole_answer_runs_on_and_the_next_turn_says_so(
    server, project: Path
) -> None:
    """Non-streamed, the answer runs to its end though mm closed the connection: the next
    turn waits behind it, says so, and ends with its own answer; a watchdog shorter than the
    wait does not end it."""
    mark = log_size(server)
    watchdog = (
        3.0  # the old answer takes longer than this after the cancel (13 s on an idle machine)
    )
    async with engine_on(server, project, watchdogTimeout=watchdog, **NO_TOOLS) as (engine, _):
        # what the provider does for this server once it lost a streamed tool call
        engine.client._no_stream.add("plain")  # type: ignore[attr-defined]
        engine.server.finish_watchdogs = 180  # the bound is not what is tested here
        pid = server.proc.pid
        before = cpu_seconds(pid)
        first = asyncio.create_task(engine.run_turn(LONG, lambda event: None))
        working = await await_until(lambda: cpu_seconds(pid) - before > 1.0, 120, 0.05)
        assert working, "the server did not start on the answer"
        assert engine.cancel()
        cancelled = time.monotonic()
        assert (await asyncio.wait_for(first, 30)).stop_reason == "cancelled"
        events: list[Event] = []
        ended = await asyncio.wait_for(engine.run_turn(SHORT, events.append), 540)
        first_word = next(
            (i for i, e in enumerate(events) if isinstance(e, TextDelta)), len(events)
        )
        waited = time.monotonic() - cancelled
    log = log_since(server, mark)
    runs = [int(n) for n in RUNS.findall(log)]
    print(
        f"\nwhole: the cancelled answer ran {runs[0] if runs else '?'} tokens, unread; the "
        f"next turn ended {waited:.1f} s after the cancel (watchdog {watchdog:g} s)"
    )
    errors = [e.message for e in events if isinstance(e, EngineError)]
    assert (ended.stop_reason, errors) == ("end_turn", []), errors
    assert "".join(texts(events)).strip()
    said = [i for i, e in enumerate(events) if isinstance(e, ServerFinishing)]
    assert len(said) == 1 and said[0] < first_word, events
    assert runs and runs[0] > 50, log[-2000:]  # the cancelled answer, run to its end
