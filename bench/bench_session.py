"""Saving a session: what one more tool result costs at event 10 and at event 10,000.

A session is an append-only journal (`mm_tui/engine/session.py`, `journal.py`): a save hands the
new records to one writer thread and returns. Each tool call is recorded exactly as the engine
records it: the model's message with the call appended to `session.messages` and saved
(`Engine._generate`), then the tool's result of 4 KB recorded with `session.add_message(message,
tool=ToolRecord(...))` and saved (`Engine._finish`). Each session's journal is created as a turn creates it
(system and user messages, one save, written and synced) before its first tool call.

Two sessions in a temporary folder: a big one is first filled with 9,900 tool calls back to
back; then the small one takes its calls 1-100 ("event 10") and the big one its calls
9,901-10,000 ("event 10,000"), one call each in turn, so that the machine's load weighs on both
ends alike. At each end:
- caller: `add_message(result, tool=...)` + `save()`, on the calling thread (the UI loop, in the
  window), median per call; the save of the model's message beside it. Goal (issue): the result's
  save at event 10,000 within 1.5x of event 10. In these windows the writer is waited for
  (untimed) after each save: in mm the tool's run and the next model answer, milliseconds at
  least, come between two saves, so each save finds the writer idle. (Without the wait, 100
  saves in a row take a millisecond or so and share the GIL with the writer's backlog: what is
  timed is then the interpreter's thread switching, not the session.)
- writer: the writer thread's time in its writes (`Journal._write`: encoding, redaction check,
  write(2), the metadata file when it is replaced), summed over the window and divided by its
  tool calls (2 records each), with that thread's CPU time; and the wall time per tool call,
  caller and writer (the two saves and the waits for the writer).
- floor: a bare `os.write` of the same bytes (a result's journal line) appended to a file as big
  as that end's journal, median per call.
- journal size at both ends, and how many writer batches also replaced the metadata file.
- for the record, the save that the journal replaced: the whole history as one JSON document
  (indent=1), written to a temporary file, fsynced and renamed, as format 1 did at every save
  (about twice per tool call, on the UI loop); computed once at each end (10 and 10,000 results).

Run: .venv/bin/python bench/bench_session.py  (MM_BENCH_EVENTS=N for another count than 10,000;
     --quick: 1,000, unless MM_BENCH_EVENTS says otherwise)
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from window_common import machine, median, verdict  # noqa: E402

if TYPE_CHECKING:
    from mm_tui.core.journal_records import ToolRecord

GOAL = 1.5
EVENTS = int(os.environ.get("MM_BENCH_EVENTS") or (1000 if "--quick" in sys.argv else 10000))
WINDOW = 100  # events timed at each end
OUTPUT = 4096  # characters of a tool result

_LINE = "collecting tests/unit/test_module.py::test_case PASSED                      [ 42%]"


def output(n: int) -> str:
    """A tool result of OUTPUT characters, distinct for each event."""
    head = f"$ pytest -q tests/step_{n}\n"
    body = "\n".join(f"{_LINE} {n}:{i}" for i in range(OUTPUT // len(_LINE) + 1))
    return (head + body)[:OUTPUT]


def call_message(n: int) -> dict[str, Any]:
    arguments = json.dumps({"command": f"pytest -q tests/step_{n}"})
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": "bash", "arguments": arguments},
            }
        ],
    }


def result_message(n: int) -> tuple[dict[str, Any], ToolRecord]:
    from mm_tui.core.journal_records import ToolRecord

    message = {"role": "tool", "tool_call_id": f"call_{n}", "content": output(n)}
    tool = ToolRecord(status="ok", elapsed=0.042, title=f"bash  pytest -q tests/step_{n}")
    return message, tool


class WriterClock:
    """Times the writer thread's writes (wraps `_write` on the journal instance only)."""

    def __init__(self, journal: Any) -> None:
        self.batches = 0
        self.records = 0
        self.seconds = 0.0
        self.cpu = 0.0  # the writer thread's own CPU time (the rest is waiting for the GIL)
        self.metas = 0  # batches that also replaced the metadata file
        original = journal._write

        def write(records: Any, meta: Any) -> None:
            t = time.perf_counter()
            c = time.thread_time()
            original(records, meta)
            self.cpu += time.thread_time() - c
            self.seconds += time.perf_counter() - t
            self.batches += 1
            self.records += len(records)
            self.metas += meta is not None

        journal._write = write

    def reset(self) -> None:
        self.batches = self.records = self.metas = 0
        self.seconds = self.cpu = 0.0


class Side:
    """One session and what was measured on it."""

    def __init__(self, folder: Path, name: str) -> None:
        from mm_tui.engine.journal import flush_all
        from mm_tui.engine.session import Session

        self.session = Session.new(
            folder / name,
            cwd=str(folder),
            model="bench-model",
            provider="bench",
            base_url="http://127.0.0.1:1/v1",
        )
        messages = self.session.messages
        messages.append({"role": "system", "content": "You are mm, a coding agent."})
        messages.append({"role": "user", "content": "run every step of the test suite"})
        self.session.save()  # the turn's first save: the journal is created, synced, renamed
        flush_all()
        self.clock = WriterClock(self.session._journal)
        self.events = 0
        self.results: list[float] = []
        self.calls: list[float] = []
        self.walls: list[float] = []

    def event(self, settle: bool = False) -> None:
        """One tool call as the engine records it, the two saves timed on this thread.
        `settle`: wait (untimed, but in the wall time) for the writer after each save, as the
        tool's run and the next model answer give it the time to finish in mm."""
        from mm_tui.engine.journal import flush_all

        self.events += 1
        session, n = self.session, self.events
        call = call_message(n)
        result, tool = result_message(n)
        t0 = time.perf_counter()
        session.messages.append(call)
        session.save()
        t1 = time.perf_counter()
        if settle:
            flush_all()
        t2 = time.perf_counter()
        session.add_message(result, tool=tool)
        session.save()
        t3 = time.perf_counter()
        if settle:
            flush_all()
            self.calls.append(t1 - t0)
            self.results.append(t3 - t2)
            self.walls.append(time.perf_counter() - t0)

    def figures(self) -> dict[str, float]:
        clock = self.clock
        return {
            "result": median(self.results),
            "result_max": max(self.results),
            "call": median(self.calls),
            "writer": clock.seconds / len(self.results),
            "writer_cpu": clock.cpu / len(self.results),
            "batches": clock.batches,
            "metas": clock.metas,
            "wall": sum(self.walls) / len(self.walls),
            "size": os.path.getsize(self.session.path),
        }


def timed_write(fd: int, data: bytes) -> float:
    t = time.perf_counter()
    os.write(fd, data)
    return time.perf_counter() - t


def old_save(session: Any, folder: Path, messages: int) -> float:
    """Format 1's save of a history of `messages` messages: one JSON document, indent=1,
    written to a temporary file, fsynced, renamed over the session file, the folder fsynced."""
    from mm_tui.core.redact import Redactor
    from mm_tui.engine.journal_files import fsync_folder

    data = session.to_dict()
    data["messages"] = data["messages"][:messages]
    path = folder / "old-format.json"
    temp = folder / ".old-format.json.tmp"
    t = time.perf_counter()
    payload = json.dumps(data, ensure_ascii=False, indent=1).encode()
    Redactor().in_json(payload)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "wb") as out:
        out.write(payload)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    fsync_folder(folder)
    elapsed = time.perf_counter() - t
    path.unlink()
    return elapsed


def main() -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    from mm_tui.core.redact import Redactor
    from mm_tui.engine.journal import encode_record, flush_all

    if EVENTS <= WINDOW:
        raise SystemExit(f"MM_BENCH_EVENTS must be above {WINDOW}")
    folder = Path(tempfile.mkdtemp(prefix="mm-bench-session-"))
    started = time.perf_counter()
    try:
        small, large = Side(folder, "small"), Side(folder, "large")
        t = time.perf_counter()
        while large.events < EVENTS - WINDOW:
            large.event()
        flush_all(timeout=600)
        fill = time.perf_counter() - t
        small.clock.reset()
        large.clock.reset()
        # The floor's bytes: the journal line of a result, appended to a file as big as each
        # journal (the big one sparse).
        record = {"type": "message", "message": result_message(5)[0], "tool": {}}
        line = encode_record(record, Redactor())
        fds = []
        for side in (small, large):
            path = folder / f"floor-{len(fds)}.bin"
            path.write_bytes(b"")
            os.truncate(path, os.path.getsize(side.session.path))
            fds.append(os.open(path, os.O_WRONLY | os.O_APPEND))
        floors: tuple[list[float], list[float]] = ([], [])
        # The two ends interleaved, one tool call each in turn, so that the machine's load
        # weighs on both alike.
        for k in range(WINDOW):
            for side in (small, large) if k % 2 == 0 else (large, small):
                side.event(settle=True)
            for fd, times in zip(fds, floors, strict=True):
                times.append(timed_write(fd, line))
        for fd in fds:
            os.close(fd)
        flush_all(timeout=60)
        lo, hi = small.figures(), large.figures()
        floor_small, floor_large = median(floors[0]), median(floors[1])
        gc.collect()
        # history as format 1 held it: system, user, then two messages per tool call
        old_small = old_save(small.session, folder, 2 + 2 * 10)
        old_large = old_save(large.session, folder, 2 + 2 * EVENTS)
        for side in (small, large):
            with contextlib.suppress(Exception):
                side.session.close().result(30)  # type: ignore[union-attr]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    total = time.perf_counter() - started
    small, large = lo, hi  # type: ignore[assignment]

    ms = 1000.0
    us = 1e6
    print(f"session saves: {EVENTS:,} tool calls with results of {OUTPUT:,} characters")
    print(f"machine: {machine()}")
    print(
        f"{'':34}{'events 1-100':>16}{f'events {EVENTS - WINDOW + 1:,}-{EVENTS:,}':>22}{'ratio':>9}"
    )

    def row(label: str, a: float, b: float, unit: float = us, suffix: str = "µs") -> None:
        ratio = b / a if a else float("inf")
        print(f"  {label:32}{a * unit:12.1f} {suffix:3}{b * unit:18.1f} {suffix:3}{ratio:8.2f}x")

    row("caller: result add + save", small["result"], large["result"])
    row(f"  (the slowest of {WINDOW})", small["result_max"], large["result_max"])
    row("caller: model's call save", small["call"], large["call"])
    row("floor: bare os.write of the line", floor_small, floor_large)
    row("writer thread, per tool call", small["writer"], large["writer"])
    row("  (its CPU time)", small["writer_cpu"], large["writer_cpu"])
    row("wall, caller + writer, per call", small["wall"], large["wall"])
    print(f"  {'journal size':32}{small['size'] / 1e6:12.2f} MB {large['size'] / 1e6:18.2f} MB")
    for label, w in (("first", small), ("last", large)):
        print(
            f"  the {label} {WINDOW} tool calls: {w['batches']} writer batches, of which "
            f"{w['metas']} replaced the metadata file"
        )
    ratio = large["result"] / small["result"]
    print(
        f"caller's save of a result at event {EVENTS:,} / event 10: {ratio:.2f}x "
        f"(goal <= {GOAL}x) -> {verdict(ratio <= GOAL)}"
    )
    print(
        f"  against the floor: {small['result'] / floor_small:.2f}x a bare write at event 10, "
        f"{large['result'] / floor_large:.2f}x at event {EVENTS:,} (the write itself is the "
        "writer thread's)"
    )
    print(
        f"format 1 for the record (the whole history, indent=1, fsync, rename; about twice per "
        f"tool call, on the UI loop): {old_small * ms:.1f} ms at 10 results, "
        f"{old_large * ms:.0f} ms at {EVENTS:,} ({old_large / large['result']:,.0f}x the "
        "journal's save)"
    )
    print(
        f"filling the big session with {EVENTS - WINDOW:,} calls back to back took {fill:.1f} s "
        f"({fill / (EVENTS - WINDOW) * us:.0f} µs each, writer included); whole run "
        f"{total:.1f} s"
    )


if __name__ == "__main__":
    main()
