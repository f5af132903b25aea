"""The model client keeps its connection from one answer to the next: a streamed answer's body
is read to its end after `[DONE]` (engine/kept_connection.py), so that httpx gives the
connection back to its pool. Against the scripted server, which counts the connections it
was opened."""

from __future__ import annotations

import asyncio

from support.scripted_server import Reply, ScriptedServer, finish_chunk, silence_after, text_chunks

from mm_tui.engine.model_stream import Retrying, StreamEnd, TextChunk
from mm_tui.engine.provider import OpenAIProvider

MESSAGES = [{"role": "user", "content": "hi"}]


async def answer(provider: OpenAIProvider) -> tuple[str, list[object]]:
    """The text of one answer, and anything else it yielded but its end."""
    text, other = "", []
    async for item in provider.stream(MESSAGES, []):
        if isinstance(item, TextChunk):
            text += item.text
        elif not isinstance(item, StreamEnd):
            other.append(item)
    return text, other


async def test_the_answers_of_a_turn_share_one_connection() -> None:
    with ScriptedServer(Reply("one"), Reply("two"), Reply("three")) as server:
        provider = OpenAIProvider(server.base_url, "m")
        try:
            texts = [(await answer(provider))[0] for _ in range(3)]
        finally:
            await provider.aclose()
        assert texts == ["one", "two", "three"]
        assert server.connections_made == 1


async def test_a_body_left_open_after_done_does_not_hold_the_answer() -> None:
    """A server that sends `[DONE]` and then neither ends the body nor closes: the answer is
    whole at `[DONE]` and ends there; that connection is closed, and the next answer goes on
    a new one."""
    chunks = [*text_chunks("whole"), finish_chunk("stop")]
    held = silence_after(len(chunks) + 1, chunks)  # every event and [DONE], then nothing
    with ScriptedServer(held, Reply("next")) as server:
        provider = OpenAIProvider(server.base_url, "m")
        try:
            first = await asyncio.wait_for(answer(provider), 30)
            second = await asyncio.wait_for(answer(provider), 30)
        finally:
            await provider.aclose()
        assert (first, second) == (("whole", []), ("next", []))
        assert server.connections_made == 2


async def test_a_kept_connection_the_server_dropped_is_replaced_unsaid() -> None:
    """A server that closes idle connections (its keep-alive ran out) between two answers:
    the second goes on a new connection, with no retry said to the person."""
    with ScriptedServer(Reply("before"), Reply("after")) as server:
        provider = OpenAIProvider(server.base_url, "m")
        try:
            first = await answer(provider)
            server.cut_connections()
            second = await asyncio.wait_for(answer(provider), 30)
        finally:
            await provider.aclose()
        assert (first, second) == (("before", []), ("after", []))
        assert not any(isinstance(item, Retrying) for item in second[1])
        assert server.connections_made == 2
