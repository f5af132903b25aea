"""A streamed answer is read in batches (engine/paced_reads.py): fewer reads, nothing lost.

A real scripted server on 127.0.0.1 trickles its events, one write a few milliseconds apart,
as a local model server does; the provider's real httpx client reads them."""

from __future__ import annotations

import asyncio

import pytest
from support.scripted_server import (
    Completion,
    Raw,
    ScriptedServer,
    encode_sse,
    finish_chunk,
    role_chunk,
    text_chunks,
    tool_call_chunks,
    usage_chunk,
)

from mm_tui.engine import paced_reads
from mm_tui.engine.model_stream import StreamEnd, TextChunk, ToolCall
from mm_tui.engine.provider import OpenAIProvider

WORDS = [f"word{i} " for i in range(80)]


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


def answer(server: ScriptedServer, response: object) -> tuple[list, OpenAIProvider]:
    """The chunks of one streamed answer, and the provider that read it (closed)."""
    provider = OpenAIProvider(server.base_url, "m", retries=0)  # its client is made at the request

    async def go() -> list:
        try:
            server.script(response)
            return [c async for c in provider.stream([{"role": "user", "content": "hi"}], [])]
        finally:
            await provider.aclose()

    return asyncio.run(go()), provider


def trickle() -> Raw:
    """80 one-word events, each its own write 4 ms after the last (about 250 tokens a second)."""
    events = encode_sse([role_chunk(), *(text_chunks(w)[0] for w in WORDS)])
    return Raw(events, delay=0.004)


def test_a_trickling_answer_is_read_in_batches_and_loses_nothing(server):
    chunks, provider = answer(server, trickle())
    texts = [c.text for c in chunks if isinstance(c, TextChunk)]
    assert "".join(texts) == "".join(WORDS)
    assert isinstance(chunks[-1], StreamEnd) and chunks[-1].finish_reason is None
    assert provider.paced is not None
    (stream,) = provider.paced.streams
    # about 0.33 s of events at one read per 40 ms: a dozen reads, not eighty
    assert stream.reads <= 30, stream.reads
    assert stream.waits >= 3


def test_without_the_gap_every_event_is_a_read(server, monkeypatch):
    """What the test above would see unpaced: it can fail."""
    monkeypatch.setattr(paced_reads, "READ_GAP", 0.0)
    chunks, provider = answer(server, trickle())
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "".join(WORDS)
    assert provider.paced is not None
    (stream,) = provider.paced.streams
    assert stream.reads >= 60 and stream.waits == 0


def test_a_bulk_body_is_not_paced(server):
    """A big body (a server that answers a streamed request with one JSON completion) is read as
    fast as it comes: a read of BULK bytes or more is not followed by a wait."""
    content = "x" * 400_000
    chunks, provider = answer(server, Completion(content=content))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == content
    assert provider.paced is not None
    (stream,) = provider.paced.streams
    assert stream.reads >= 6  # 400 KB in reads of at most 64 KiB
    # measured: 7 to 9 reads, 0 to 2 waits (a read that finds less than BULK waits once, and the
    # next takes all that came meanwhile); every read would wait if bulk reads were paced
    assert stream.waits * 2 < stream.reads, (stream.reads, stream.waits)


TEXT_GAPS = (paced_reads.READ_GAP, paced_reads.READ_GAP * paced_reads.FAST_FACTOR)


def words(count: int) -> list[str]:
    return [f"w{i} " for i in range(count)]


def words_every(delay: float, count: int) -> Raw:
    """`count` one-word events, each its own write `delay` after the last."""
    events = encode_sse([role_chunk(), *(text_chunks(w)[0] for w in words(count))])
    return Raw(events, delay=delay)


def test_a_fast_stream_is_read_less_often(server):
    """At 500 tokens a second (FAST_RATE and more even when a loaded machine sleeps twice as
    long between writes), the reads wait FAST_FACTOR times the gap once RATE_SPAN of the text
    has told its pace: half as many reads and frames for text nobody reads that fast."""
    chunks, provider = answer(server, words_every(0.002, 600))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "".join(words(600))
    assert provider.paced is not None
    (stream,) = provider.paced.streams
    gaps = [gap for gap in stream.gaps if gap in TEXT_GAPS]
    assert gaps.count(paced_reads.READ_GAP * paced_reads.FAST_FACTOR) >= 2, stream.gaps


def test_a_model_slower_than_that_keeps_the_gap(server):
    """At 50 tokens a second every read of text waits READ_GAP, no more (the median from the
    server to the screen stays under 50 ms: bench/bench_e2e.py)."""
    chunks, provider = answer(server, words_every(0.02, 40))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == "".join(words(40))
    assert provider.paced is not None
    (stream,) = provider.paced.streams
    gaps = [gap for gap in stream.gaps if gap in TEXT_GAPS]
    assert len(gaps) >= 5 and set(gaps) == {paced_reads.READ_GAP}, stream.gaps


def text_then_a_call() -> Raw:
    """30 words, then a bash call whose arguments come a character an event, each event 4 ms
    after the last, as a model makes them; then the reply's end, at once, as servers send it."""
    words = [text_chunks(w)[0] for w in WORDS[:30]]
    call = tool_call_chunks("c1", "bash", {"command": "ls -la /tmp"})
    end = encode_sse([finish_chunk("tool_calls"), usage_chunk(10, 20)])
    return Raw([*encode_sse([role_chunk(), *words, *call], done=False), b"".join(end)], 0.004)


def test_text_is_paced_and_a_tool_call_is_read_as_it_comes(server):
    """The round trip of a tool call: the reads of its arguments, and of the reply's end after
    them, wait for nothing (paced as text, the end waited up to READ_GAP for its read)."""
    chunks, provider = answer(server, text_then_a_call())
    end = chunks[-1]
    assert isinstance(end, StreamEnd) and end.finish_reason == "tool_calls"
    assert end.tool_calls == (ToolCall("c1", "bash", '{"command": "ls -la /tmp"}'),)
    assert provider.paced is not None
    (stream,) = provider.paced.streams
    gaps = list(stream.gaps)
    text = [i for i, gap in enumerate(gaps) if gap in TEXT_GAPS]
    assert text, gaps  # the words
    after_text = gaps[text[-1] + 1 :]
    assert after_text and set(after_text) <= {paced_reads.CALL_GAP, None}, gaps
    assert gaps[-1] not in TEXT_GAPS  # the read that carried the end


def test_a_tool_call_paced_as_text_waits_for_its_end(server, monkeypatch):
    """What the test above would see if a call were paced as text: it can fail."""
    monkeypatch.setattr(paced_reads, "CALL_GAP", paced_reads.READ_GAP)
    chunks, provider = answer(server, text_then_a_call())
    assert isinstance(chunks[-1], StreamEnd) and len(chunks[-1].tool_calls) == 1
    assert provider.paced is not None
    (stream,) = provider.paced.streams
    assert stream.gaps[-1] == paced_reads.READ_GAP and stream.waits >= 1, stream.gaps


def test_an_httpx_without_the_pool_goes_unpaced():
    assert paced_reads.pace(object()) is None
