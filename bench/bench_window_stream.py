"""Streaming: how fast mm's answer absorbs chunks of about 4 characters, against Textual's own
MarkdownStream in the same run, headless (App.run_test, 100x30).

1. Throughput. A realistic Markdown answer (headings, paragraphs, lists, code blocks, quotes) cut
   into 4-character chunks is pushed as fast as a fast server would deliver it: one chunk, then
   one turn of the event loop (`await asyncio.sleep(0)`), as a network read would give.
   - mm: each chunk is `app.main.emit(TextDelta(chunk))`, the engine's `emit` (which sends the
     deltas of a frame to the window as one message); the turn opens with TurnStarted and
     closes with TurnEnded.
   - floor: `await stream.write(chunk)` on `Markdown.get_stream(markdown)` inside an anchored
     VerticalScroll (it yields once per write by itself).
   Timed from the first chunk until every chunk is in the widget and the screen is up to date
   (pending messages processed, then a forced screen update, which paints whatever is dirty).
   chunks/s = chunks / that time; the median of interleaved rounds.
2. CPU share. The answer grows to 60,000 characters: the first 48,000 arrive at once (not
   timed), the last 12,000 at 200 chunks/s in real time (15 s). Reported: process time / wall
   time from the first timed chunk until the screen is up to date, the time taken to deliver
   the chunks (15 s when the app keeps up with the schedule) and the lag at the end.

   Beside them, the floor under any app that takes a stream as messages: a bare Textual app
   (one Static) that receives the same 200 messages a second and does nothing with them. It
   is what the event loop and Textual's message pump cost by themselves on this machine.

Goals: at least 5,000 chunks/s and 6x MarkdownStream; at most 30% of a core at 200 tokens/s.

Run: .venv/bin/python bench/bench_window_stream.py [chunks] [rounds] [seconds] (3,000, 3, 15 by
     default; --quick: 600 chunks, 1 round, 1 second)
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from window_common import (  # noqa: E402
    SIZE,
    answer_markdown,
    machine,
    median,
    mm_app,
    pieces,
    verdict,
)

GOAL_RATE = 5000.0
GOAL_RATIO = 6.0
GOAL_CPU = 0.30
RATE = 200  # chunks per second in the real-time run
LONG = 60_000  # characters of the long answer
PREFILL = 48_000


# -- mm -----------------------------------------------------------------------------------------


class MMStream:
    """Drives MMApp as the engine does: every event is posted as an EngineEvent."""

    name = "mm"

    def __init__(self) -> None:
        self.app = mm_app()
        self.flushes: list[float] = []

    async def start(self, pilot: Any) -> None:
        from mm_tui.core.events import TurnStarted

        self.pilot = pilot
        await pilot.pause()
        view = self.app.main.view
        original = view.flush

        def flush() -> None:  # counts the view's (coalesced) updates
            original()
            self.flushes.append(time.perf_counter())

        view.flush = flush  # type: ignore[method-assign]
        self.app.main.emit(TurnStarted(turn=1, text="explain the design"))
        await self.settled()

    def write(self, chunk: str) -> None:
        from mm_tui.core.events import TextDelta

        self.app.main.emit(TextDelta(chunk))

    def finish(self) -> None:
        from mm_tui.core.events import Counters, TurnEnded, Usage

        event = TurnEnded(
            turn=1, counters=Counters(), elapsed=1.0, usage=Usage(), stop_reason="end_turn"
        )
        self.app.main.emit(event)

    def absorbed(self) -> bool:
        view = self.app.main.view
        items = self.app.main.transcript.items
        return (
            not self.app.main.deltas_pending and not self.app.main._message_queue.qsize()
        ) and all(view.drawn_version(item) == item.version for item in items)

    async def settled(self) -> None:
        """Every chunk posted so far is in the view, and the screen shows it."""
        while not self.absorbed():
            await asyncio.sleep(0.001)
        await self.pilot._wait_for_screen()
        self.app.screen._on_timer_update()

    def text(self) -> str:
        from mm_tui.window.transcript.store import AnswerItem

        return "".join(i.text for i in self.app.main.transcript.items if isinstance(i, AnswerItem))

    def updates(self) -> int:
        return len(self.flushes)


# -- the floor: Textual's MarkdownStream --------------------------------------------------------


def markdown_app() -> Any:
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Markdown

    class MarkdownApp(App[None]):
        CSS = "VerticalScroll { height: 1fr; }"

        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield Markdown()

    return MarkdownApp()


class TextualStream:
    name = "MarkdownStream"

    def __init__(self) -> None:
        self.app = markdown_app()
        self.appends = 0

    async def start(self, pilot: Any) -> None:
        from textual.containers import VerticalScroll
        from textual.widgets import Markdown

        self.pilot = pilot
        await pilot.pause()
        self.markdown = self.app.query_one(Markdown)
        self.app.query_one(VerticalScroll).anchor()
        original = self.markdown.append

        def append(markdown: str) -> Any:  # counts the stream's (coalesced) updates
            self.appends += 1
            return original(markdown)

        self.markdown.append = append  # type: ignore[method-assign]
        self.stream = Markdown.get_stream(self.markdown)

    async def prefill(self, text: str) -> None:
        await self.markdown.append(text)
        await self.pilot._wait_for_screen()
        self.app.screen._on_timer_update()

    async def write(self, chunk: str) -> None:
        await self.stream.write(chunk)

    async def settled(self) -> None:
        await self.stream.stop()
        await self.pilot._wait_for_screen()
        self.app.screen._on_timer_update()

    def text(self) -> str:
        return self.markdown.source

    def updates(self) -> int:
        return self.appends


# -- the runs -----------------------------------------------------------------------------------


async def throughput(kind: type, chunks: list[str]) -> dict[str, float]:
    driver = kind()
    async with driver.app.run_test(size=SIZE) as pilot:
        await driver.start(pilot)
        t0 = time.perf_counter()
        if isinstance(driver, MMStream):
            for chunk in chunks:
                driver.write(chunk)
                await asyncio.sleep(0)
            driver.finish()
        else:
            for chunk in chunks:
                await driver.write(chunk)
        await driver.settled()
        elapsed = time.perf_counter() - t0
        whole = driver.text().rstrip() == "".join(chunks).rstrip()
        marks = getattr(driver, "flushes", [])
        gaps = [b - a for a, b in zip([t0, *marks], marks, strict=False)] or [0.0]
        return {
            "seconds": elapsed,
            "rate": len(chunks) / elapsed,
            "updates": driver.updates(),
            "gap": max(gaps) if isinstance(driver, MMStream) else float("nan"),
            "whole": whole,
        }


async def realtime(kind: type, text: str, seconds: float) -> dict[str, float]:
    prefix, tail = text[:PREFILL], pieces(text[PREFILL:])
    tail = tail[: int(RATE * seconds)]
    driver = kind()
    async with driver.app.run_test(size=SIZE) as pilot:
        await driver.start(pilot)
        if isinstance(driver, MMStream):
            driver.write(prefix)
            await driver.settled()
        else:
            await driver.prefill(prefix)
        await asyncio.sleep(0.2)
        t0 = time.perf_counter()
        c0 = time.process_time()
        late = 0.0
        for i, chunk in enumerate(tail):
            delay = t0 + i / RATE - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                late = max(late, -delay)
            if isinstance(driver, MMStream):
                driver.write(chunk)
            else:
                await driver.write(chunk)
        sent = time.perf_counter()
        await driver.settled()
        end = time.perf_counter()
        cpu = time.process_time() - c0
        return {
            "cpu": cpu / (end - t0),
            "delivery": sent - t0,
            "lag": end - sent,
            "late": late,
            "chars": len(driver.text()),
        }


async def message_floor(seconds: float) -> float:
    """The CPU share of a bare Textual app receiving RATE no-op messages a second."""
    from textual.app import App, ComposeResult
    from textual.message import Message
    from textual.widgets import Static

    class Chunk(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("floor")

        def on_chunk(self, message: Chunk) -> None:
            pass

    app = Bare()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        t0 = time.perf_counter()
        c0 = time.process_time()
        for i in range(int(RATE * seconds)):
            delay = t0 + i / RATE - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            app.post_message(Chunk("abcd"))
        await pilot.pause()
        return (time.process_time() - c0) / (time.perf_counter() - t0)


async def main(n_chunks: int, rounds: int, seconds: float) -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    text = answer_markdown(n_chunks * 4)
    chunks = pieces(text)[:n_chunks]
    # warm up both: imports, CSS, caches
    await throughput(MMStream, chunks[:300])
    await throughput(TextualStream, chunks[:300])
    results: dict[str, list[dict[str, float]]] = {"mm": [], "MarkdownStream": []}
    for r in range(rounds):
        order = [MMStream, TextualStream] if r % 2 == 0 else [TextualStream, MMStream]
        for kind in order:
            results[kind.name].append(await throughput(kind, chunks))

    print(f"machine: {machine()}")
    print(
        f"throughput: {len(chunks):,} chunks of 4 characters ({len(''.join(chunks)):,} chars of "
        f"Markdown), {rounds} interleaved rounds, medians, headless {SIZE[0]}x{SIZE[1]}"
    )
    rate = {}
    for name, runs in results.items():
        rate[name] = median([r["rate"] for r in runs])
        secs = median([r["seconds"] for r in runs])
        updates = median([r["updates"] for r in runs])
        extra = ""
        if name == "mm":
            gap = max(r["gap"] for r in runs) * 1000
            extra = f", longest gap between view updates {gap:.0f} ms"
        whole = "whole" if all(r["whole"] for r in runs) else "TEXT DIFFERS"
        print(
            f"  {name:16}{rate[name]:10,.0f} chunks/s  {secs * 1000:8.0f} ms  "
            f"{updates:6.0f} updates{extra}  ({whole})"
        )
    differs = [name for name, runs in results.items() if not all(r["whole"] for r in runs)]
    if differs:  # a figure of a wrong text measures nothing
        raise SystemExit(f"{', '.join(differs)}: the text shown is not the text streamed")
    ratio = rate["mm"] / rate["MarkdownStream"]
    ok = rate["mm"] >= GOAL_RATE and ratio >= GOAL_RATIO
    print(
        f"  ratio mm / MarkdownStream: {ratio:.1f}x  "
        f"(goal: >= {GOAL_RATE:,.0f} chunks/s and >= {GOAL_RATIO:.0f}x) -> {verdict(ok)}"
    )

    long_text = answer_markdown(LONG)[:LONG]
    print(
        f"CPU share: an answer growing from {PREFILL:,} to "
        f"{PREFILL + int(RATE * seconds) * 4:,} characters at {RATE} chunks/s "
        f"({seconds:.0f} s of it)"
    )
    cpu = {}
    for kind in (MMStream, TextualStream):
        r = await realtime(kind, long_text, seconds)
        cpu[kind.name] = r["cpu"]
        print(
            f"  {kind.name:16}{r['cpu'] * 100:6.1f}% of a core; chunks delivered in "
            f"{r['delivery']:5.1f} s (schedule {seconds:.0f} s, worst delay "
            f"{r['late'] * 1000:.0f} ms); on screen {r['lag'] * 1000:.0f} ms after the last"
        )
    floor = await message_floor(seconds)
    print(
        f"  {'floor':16}{floor * 100:6.1f}% of a core: a bare Textual app receiving the same "
        f"{RATE} messages a second, doing nothing with them"
    )
    print(
        f"  ratio mm / MarkdownStream: {cpu['mm'] / cpu['MarkdownStream']:.2f}x; mm above the "
        f"floor: {(cpu['mm'] - floor) * 100:.1f}% of a core  "
        f"(goal: mm <= {GOAL_CPU:.0%} of a core) -> {verdict(cpu['mm'] <= GOAL_CPU)}"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--quick" in args:
        args = ["600", "1", "1"]
    asyncio.run(
        main(
            int(args[0]) if args else 3000,
            int(args[1]) if len(args) > 1 else 3,
            float(args[2]) if len(args) > 2 else 15.0,
        )
    )
