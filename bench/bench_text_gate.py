"""What the gate for tool calls written as text costs a streamed answer in the engine.

An answer's text goes through `engine/call_gate.py` before it is shown, whenever tools are
declared: the gate holds back text that may be a call. This measures a whole streamed answer
through the engine's turn (`Engine.run_turn`, its round trip, the gate, the events, the session)
with the built-in tools declared, against the same turn on an engine with no tool declared,
which has no gate: the floor. The model is in the process (a scripted model that yields the
chunks at once), so that only mm's work is timed, and the events go to a list.

The answer is real Markdown with JSON, code, XML and links (the ordinary answers of
tests/engine/text_calls_corpus/ordinary.jsonl, joined), cut into chunks of 4 characters; the
turns alternate over several rounds, and the median of each is reported. Goal: the gate's turn
at least 0.9x the floor's chunks per second.

Run: .venv/bin/python bench/bench_text_gate.py [chunks, 60,000 by default] [rounds, 5 by default]
     (--quick: 3,000 chunks, 2 rounds)
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from window_common import machine, median, verdict  # noqa: E402

from mm_tui.config import Settings  # noqa: E402
from mm_tui.core.events import Event, TextDelta, Usage  # noqa: E402
from mm_tui.engine.model_stream import ModelChunk, StreamEnd, TextChunk  # noqa: E402
from mm_tui.engine.session import Session  # noqa: E402
from mm_tui.engine.turn import Engine  # noqa: E402
from mm_tui.tools.registry import ToolRegistry  # noqa: E402

GOAL = 0.9
CORPUS = ROOT / "tests" / "engine" / "text_calls_corpus" / "ordinary.jsonl"


class _Model:
    """A model that answers with `chunks` at once."""

    model = "bench"
    provider = "bench"
    base_url = "bench:"

    def __init__(self, chunks: list[str]) -> None:
        self.chunks = chunks

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        for chunk in self.chunks:
            yield TextChunk(chunk)
        yield StreamEnd("stop", usage=Usage(10, 5))

    async def aclose(self) -> None:
        pass


def answer_chunks(count: int) -> list[str]:
    texts = [json.loads(line)["text"] for line in CORPUS.read_text().splitlines()]
    text = "\n\n".join(texts)
    while len(text) < count * 4:
        text += "\n\n" + text
    return [text[i : i + 4] for i in range(0, count * 4, 4)]


def engine(folder: Path, chunks: list[str], tools: bool) -> Engine:
    settings = Settings(sessionsDir=str(folder / "sessions"), yolo=True)
    registry = ToolRegistry.from_settings(settings, folder) if tools else ToolRegistry([])
    model = _Model(chunks)
    session = Session.new(
        folder / "sessions", cwd=str(folder), model="bench", provider="bench", base_url="bench:"
    )
    return Engine(settings, model, cwd=folder, session=session, registry=registry)


async def one_turn(folder: Path, chunks: list[str], tools: bool) -> float:
    """Seconds for the turn; checks that the whole answer was shown."""
    made = engine(folder, chunks, tools)
    assert bool(made.tools()) == tools
    events: list[Event] = []
    started = time.perf_counter()
    await made.run_turn("go", events.append)
    elapsed = time.perf_counter() - started
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown == "".join(chunks), "the answer was not shown whole"
    await made.aclose()
    return elapsed


async def main() -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    count = int(args[0]) if args else (3_000 if quick else 60_000)
    rounds = int(args[1]) if len(args) > 1 else (2 if quick else 5)
    chunks = answer_chunks(count)
    times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(rounds):
            for tools in (False, True):
                folder = Path(tmp) / f"{n}-{tools}"
                folder.mkdir()
                times[tools].append(await one_turn(folder, chunks, tools))
    gate, floor = count / median(times[True]), count / median(times[False])
    print(f"a streamed answer of {count:,} chunks of 4 characters, {rounds} rounds, medians")
    print(f"  floor (no tool declared, no gate)  {floor:12,.0f} chunks/s")
    print(f"  the gate (the built-in tools)      {gate:12,.0f} chunks/s")
    print(f"  ratio: {gate / floor:.2f}x (goal >= {GOAL}x) -> {verdict(gate / floor >= GOAL)}")
    print(f"  machine: {machine()}")


if __name__ == "__main__":
    asyncio.run(main())
