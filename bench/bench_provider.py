"""How fast OpenAIProvider.stream turns server-sent events into chunks.

A fast local server can send thousands of tokens a second, and every one of them passes through
this parser, so it must cost about what the bare minimum costs: httpx's `aiter_lines` and one
`json.loads` per `data:` line, with no handling of CR, comments, multi-line data, tool calls,
retries or errors. The goal is at least 0.8x the floor's events per second. Both read the same
pre-encoded stream from the same scripted server on 127.0.0.1, in a child process so that it
does not share the GIL with the client measured.

The figure must not move with the machine's load, which on a shared two-core machine it did
(0.75x to 0.95x with nothing changed in the provider): the server child, anything else running
and the 80 ms pace of a read that happened to find less than a bulk read's worth
(engine/paced_reads.py) all landed in one side's wall time and not the other's. So:

- the runs go in pairs, floor and provider back to back, the order alternating (ABBA), so that
  a pair runs under one load and neither side always goes first;
- each run is timed in this process's CPU time as well as in wall time: CPU time is the client's
  own work, which is what the two differ in, and it leaves out waiting for the server, for a
  core, or for the pace;
- the verdict is the median of the pairs' CPU-time ratios. Beside it: best against best, and
  the same two in wall time, which still move with the load.

Run: .venv/bin/python bench/bench_provider.py [events, 100,000 by default] [pairs, 8 by default]
     (--quick: 10,000 events, 2 pairs)
"""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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
from window_common import machine  # noqa: E402

from mm_tui.engine.model_stream import StreamEnd, TextChunk  # noqa: E402
from mm_tui.engine.paced_reads import PacedStream  # noqa: E402
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


@dataclass
class Run:
    """One run's seconds: on the clock, and of this process's CPU."""

    wall: float
    cpu: float


async def timed(work: Callable[[], Awaitable[int]], events: int, who: str) -> Run:
    """One run of `work`, checked. The collector runs first, outside the timing, so that each
    run starts with the same heap and none pays for garbage the one before left."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    counted = await work()
    run = Run(time.perf_counter() - wall, time.process_time() - cpu)
    check(counted, events, who)
    return run


async def pairs(
    floor: Callable[[], Awaitable[int]], ours: Callable[[], Awaitable[int]], events: int, n: int
) -> tuple[list[Run], list[Run]]:
    """`n` pairs of runs, floor and provider back to back, the floor first in even pairs and
    second in odd ones (ABBA): a pair runs under one load, and neither always goes first."""
    floors, ourses = [], []
    for i in range(n):
        if i % 2 == 0:
            floors.append(await timed(floor, events, "the floor"))
            ourses.append(await timed(ours, events, "OpenAIProvider"))
        else:
            ourses.append(await timed(ours, events, "OpenAIProvider"))
            floors.append(await timed(floor, events, "the floor"))
    return floors, ourses


def ratios(floors: list[Run], ourses: list[Run], clock: str) -> tuple[float, str]:
    """The median of the pairs' ratios on `clock` ("cpu" or "wall": the provider's events per
    second over the floor's, each pair on its own), and a line that gives it with its spread
    and best against best."""
    each = sorted(
        getattr(f, clock) / getattr(o, clock) for f, o in zip(floors, ourses, strict=True)
    )
    best = min(getattr(f, clock) for f in floors) / min(getattr(o, clock) for o in ourses)
    mid = statistics.median(each)
    spread = f"{each[0]:.2f} to {each[-1]:.2f} over {len(each)} pairs"
    return mid, f"median of the pairs {mid:.2f} ({spread}), best against best {best:.2f}"


def rates(runs: list[Run], events: int) -> str:
    """Best and median events per second, in CPU time and in wall time."""
    cpu = sorted(events / r.cpu for r in runs)
    wall = sorted(events / r.wall for r in runs)
    return (
        f"{cpu[-1]:10,.0f} {statistics.median(cpu):10,.0f}   "
        f"{wall[-1]:10,.0f} {statistics.median(wall):10,.0f}"
    )


def report(floors: list[Run], ourses: list[Run], events: int, waits: int) -> None:
    print(f"{'events/s':40} {'CPU best':>10} {'median':>10}   {'wall best':>10} {'median':>10}")
    print(f"{'floor (httpx aiter_lines + json.loads)':40} {rates(floors, events)}")
    print(f"{'OpenAIProvider.stream':40} {rates(ourses, events)}")
    ratio, cpu_line = ratios(floors, ourses, "cpu")
    print(f"ratio in CPU time:  {cpu_line}")
    print(f"ratio in wall time: {ratios(floors, ourses, 'wall')[1]}")
    print(f"reads of the provider that waited for the pace: {waits}")
    print(f"machine: {machine()}")
    verdict = "meets" if ratio >= GOAL else "MISSES"
    print(f"ratio: {ratio:.2f} (the pairs' median in CPU time; goal >= {GOAL}: {verdict} it)")


def paced_waits(provider: OpenAIProvider, seen: dict[PacedStream, int]) -> None:
    """Note the waits of the provider's connections in `seen`: it opens one a run (a stream
    left at `[DONE]` is not read to its end, so its connection is not kept), and keeps only
    the last few."""
    if provider.paced is not None:
        for stream in provider.paced.streams:
            seen[stream] = stream.waits


async def main(events: int, rounds: int) -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=serve, args=(child, events), daemon=True)
    proc.start()
    base_url, size = parent.recv()
    print(f"{events:,} events, {size / 1e6:.1f} MB, {rounds} pairs of runs, the order alternating")
    client = httpx.AsyncClient(timeout=None, trust_env=False)
    provider = OpenAIProvider(base_url, "m")
    url = base_url + "/chat/completions"
    seen: dict[PacedStream, int] = {}

    async def ours() -> int:
        counted = await provider_run(provider)
        paced_waits(provider, seen)
        return counted

    try:
        # Warm up: connections, imports, caches.
        check(await bare(client, url), events, "the floor")
        check(await provider_run(provider), events, "OpenAIProvider")
        paced_waits(provider, seen)
        warm = sum(seen.values())
        floors, ourses = await pairs(lambda: bare(client, url), ours, events, rounds)
    finally:
        await client.aclose()
        await provider.aclose()
        parent.send("done")
        proc.join(5)
    report(floors, ourses, events, sum(seen.values()) - warm)


if __name__ == "__main__":
    if "--quick" in sys.argv:
        asyncio.run(main(10_000, 2))
    else:
        n_events = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
        n_rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
        asyncio.run(main(n_events, n_rounds))
