"""How fast OpenAIProvider.stream turns server-sent events into chunks.

A fast local server can send thousands of tokens a second, and every one of them passes through
this parser, so it must cost about what the bare minimum costs: httpx's `aiter_lines` and one
`json.loads` per `data:` line, with no handling of CR, comments, multi-line data, tool calls,
retries or errors. The goal is at least 0.8x the floor's events per second. Both read the same
pre-encoded stream from the same scripted server on 127.0.0.1 (in a child process, so that it
does not share the GIL with the client being measured), interleaved over several rounds so
that a busy machine slows both alike; the best round of each is reported.

Run: .venv/bin/python bench/bench_provider.py [events, 100,000 by default] [rounds, 5 by default]
     (--quick: 10,000 events, 2 rounds)
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the tests' support package, as the tests import it

import httpx  # noqa: E402
from support.scripted_server import (  # noqa: E402
    Raw,
    ScriptedServer,
    encode_sse,
    finish_chunk,
    text_chunks,
    usage_chunk,
)

from mm_tui.engine.model_stream import StreamEnd, TextChunk  # noqa: E402
from mm_tui.engine.provider import OpenAIProvider  # noqa: E402

GOAL = 0.8
WRITE_SIZE = 64 * 1024


WORDS = ["Hello", " world", ",", " this", " is", " a", " token", " é", "\n"]


def stream_bytes(events: int) -> bytes:
    """`events` one-token content events, a finish and a usage chunk, as a real server sends."""
    chunks = [text_chunks(WORDS[i % len(WORDS)])[0] for i in range(events)]
    chunks += [finish_chunk("stop"), usage_chunk(100, events)]
    return b"".join(encode_sse(chunks))


async def bare(client: httpx.AsyncClient, url: str) -> int:
    """The floor: lines, `data:` prefix, `json.loads`, the content field. Nothing else. The
    characters of text it read."""
    n = 0
    body = {"model": "m", "messages": [], "stream": True}
    async with client.stream("POST", url, json=body) as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: "):
                data = line[6:]
                if data == "[DONE]":
                    break
                obj = json.loads(data)
                choices = obj.get("choices")
                if choices:
                    n += len(choices[0]["delta"].get("content") or "")
    return n


async def provider_run(provider: OpenAIProvider) -> int:
    """The characters of text the provider gives (it joins the events one read brings into
    one chunk, so chunks are not events)."""
    n = 0
    async for item in provider.stream([{"role": "user", "content": "go"}], []):
        if isinstance(item, TextChunk):
            n += len(item.text)
        elif isinstance(item, StreamEnd) and item.finish_reason != "stop":
            return -1
    return n


def check(counted: int, events: int, who: str) -> None:
    """A benchmark of a parser that loses text would measure nothing: stop and say so."""
    wanted = sum(len(WORDS[i % len(WORDS)]) for i in range(events))
    if counted != wanted:
        sys.exit(f"{who} counted {counted:,} characters of text, not {wanted:,}")


def serve(conn: Connection, events: int) -> None:
    """The server runs in a child process, so that it never competes with the measured client
    for the GIL; it answers every request with the same pre-encoded stream."""
    data = stream_bytes(events)
    pieces = [data[i : i + WRITE_SIZE] for i in range(0, len(data), WRITE_SIZE)]
    with ScriptedServer(on_empty=lambda req: Raw(pieces, delay=0)) as server:
        conn.send((server.base_url, len(data)))
        conn.recv()  # until the parent is done


async def main(events: int, rounds: int) -> None:
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=serve, args=(child, events), daemon=True)
    proc.start()
    base_url, size = parent.recv()
    print(f"{events:,} events, {size / 1e6:.1f} MB, {rounds} rounds each, interleaved")
    client = httpx.AsyncClient(timeout=None, trust_env=False)
    provider = OpenAIProvider(base_url, "m")
    url = base_url + "/chat/completions"
    try:
        # Warm up: connections, imports, caches.
        check(await bare(client, url), events, "the floor")
        check(await provider_run(provider), events, "OpenAIProvider")
        bare_rates, provider_rates = [], []
        for _ in range(rounds):
            t = time.perf_counter()
            counted = await bare(client, url)
            bare_rates.append(events / (time.perf_counter() - t))
            check(counted, events, "the floor")
            t = time.perf_counter()
            counted = await provider_run(provider)
            provider_rates.append(events / (time.perf_counter() - t))
            check(counted, events, "OpenAIProvider")
    finally:
        await client.aclose()
        await provider.aclose()
        parent.send("done")
        proc.join(5)
    floor, ours = max(bare_rates), max(provider_rates)
    ratio = ours / floor
    print(f"floor (httpx aiter_lines + json.loads): {floor:12,.0f} events/s")
    print(f"OpenAIProvider.stream:                  {ours:12,.0f} events/s")
    verdict = "meets" if ratio >= GOAL else "MISSES"
    print(f"ratio: {ratio:.2f} (goal >= {GOAL}: {verdict} it)")


if __name__ == "__main__":
    if "--quick" in sys.argv:
        asyncio.run(main(10_000, 2))
    else:
        n_events = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
        n_rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
        asyncio.run(main(n_events, n_rounds))
