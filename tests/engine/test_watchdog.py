"""The watchdog of a streamed answer: moved on by the chunks, without a new timer per chunk.

A server sends a chunk per token; moving the watchdog's deadline is a new timer of the event loop
(asyncio's `Timeout.reschedule` cancels one handle and schedules another), which cost as much as
decoding the chunk. It moves once it has fallen a step (1/WATCHDOG_STEPS of the timeout) behind,
and a silence is still ended a timeout after the last chunk, less at most a step."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.engine import make_engine, of
from support.engine import turn as run
from support.scripted_model import ScriptedModel

from mm_tui.core.events import EngineError, TextDelta
from mm_tui.engine.model_stream import ModelChunk, StreamEnd, TextChunk
from mm_tui.engine.round_trip import WATCHDOG_STEPS


class TricklingModel(ScriptedModel):
    """`count` words, `gap` seconds apart; then the end of the reply, or silence (`hang`)."""

    def __init__(self, count: int, gap: float, hang: bool = False) -> None:
        super().__init__()
        self.count, self.gap, self.hang = count, gap, hang
        self.last_word = 0.0  # the event loop's time of the last word

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        loop = asyncio.get_running_loop()
        for n in range(self.count):
            await asyncio.sleep(self.gap)
            self.last_word = loop.time()
            yield TextChunk(f"w{n} ")
        if self.hang:
            await asyncio.sleep(3600)
        yield StreamEnd("stop")


@pytest.fixture
def moves(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """Every move of a watchdog's deadline (asyncio's own method, counted)."""
    made: list[float | None] = []
    original = asyncio.Timeout.reschedule

    def counted(self: asyncio.Timeout, when: float | None) -> None:
        made.append(when)
        original(self, when)

    monkeypatch.setattr(asyncio.Timeout, "reschedule", counted)
    return made


async def test_a_stream_of_words_moves_the_watchdog_a_few_times(
    tmp_path: Path, moves: list[float | None]
) -> None:
    model = TricklingModel(400, 0.0005)
    engine = make_engine(tmp_path, model, watchdogTimeout=30)
    events = await run(engine, "go")
    assert len(of(events, TextDelta)) == 400
    assert events[-1].stop_reason == "end_turn"
    # 400 words came in well under a step (30 s / 64): the first word moves it, and the few
    # others can only be words that came a step apart on a machine stalled that long
    assert 1 <= len(moves) < 10


async def test_a_silence_after_words_is_still_ended_by_the_watchdog(
    tmp_path: Path, moves: list[float | None]
) -> None:
    timeout = 0.4
    model = TricklingModel(60, 0.01, hang=True)
    engine = make_engine(tmp_path, model, watchdogTimeout=timeout)
    events = await asyncio.wait_for(run(engine, "go"), 10)
    ended = asyncio.get_running_loop().time()
    assert events[-1].stop_reason == "error"
    assert of(events, EngineError)[0].where == "generation"
    assert "the model sent nothing for 0.4s — turn stopped by the watchdog" in events[-1].error
    # the words went on longer than the timeout: the watchdog moved with them, and ended the
    # silence no sooner than a timeout after the last word, less a step
    assert moves
    assert ended - model.last_word >= timeout * (1 - 1 / WATCHDOG_STEPS)
