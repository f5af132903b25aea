"""One turn of 2,000 bash calls, each with 4 KB of output, in window mode (the real MMApp, its
engine, its session journal and its HTTP client, headless 100x30), against the cost of the
growing request itself, in the same run.

The model is the scripted OpenAI-compatible server of the tests (tests/support/scripted_server/),
run in a process of its own (so that parsing the requests does not take the GIL from the app): it
answers every request with one bash call, `echo step N; yes '<a log line>' | head -c ...`, whose
output is exactly 4,096 bytes (a new N each time, so the loop detector never steps in), and the
request that carries the 2,000th result with a short text answer. It keeps no request (the tests'
server keeps every body: 2,000 of them, growing to 9 MB, would not fit in memory) and serves no
context window, so mm knows none: nothing is shortened or compacted, and every request carries
the whole history, as the chat-completions protocol sends it.

1. mm. mm starts as `mm --base-url` does (`mm_tui.startup.start`: the provider, a new session in a
   temporary folder, the context window looked for and not found), with maxTurns above the
   count and yolo on; the request is submitted as the prompt submits it. The time at which each
   ToolCallFinished leaves the engine (the app's `emit`, wrapped on the instance) is recorded.
   first = from the turn's start to the 400th result; last = from the 1,600th to the 2,000th.
2. floor: the growing request body. A bare loop with httpx posts to the same server the same
   bodies mm sends (model, the same system prompt and tool declarations, tool_choice, stream
   options; the messages grow by an assistant message with the call and a tool message with its
   4,096-byte output per call), reads each streamed answer to its end and parses its events,
   and is timed the same way (it runs no command: the output is made in Python).
   The chat-completions protocol sends the whole history with every request, so the 2,000th
   request is 9 MB: encoding it, sending it and (on the server) parsing it cost far more than
   the 1st. That growth is not mm's to remove; what mm adds to it is. Hence the goal is set
   against the floor's own growth: mm's last-400 / first-400 <= 1.15 x the floor's last-400 /
   first-400 (mm's plain ratio is printed against 1.15 as well, as the issue words it). As mm's
   calls also run bash (milliseconds each, the same at both ends), its ratio is diluted by a
   constant the floor does not have; so the time mm adds per call from the first 400 to the
   last 400, beyond what the floor adds, is printed too: that is where a cost of mm that grows
   with the turn would show. Process CPU per call (this process: UI, engine, writer thread; not
   the server's, not bash's) is printed beside the wall times: it is less shaken by the load
   of a shared machine.
3. keystroke echo. Before the turn (idle, the transcript empty), during it, and after it (idle,
   2,000 tool lines in the transcript), a printable key is sent to the prompt every ~100 ms
   the way Pilot sends keys (a Key event through the driver, as a terminal's input thread does),
   without Pilot's wait for the whole screen to be idle (which would time the turn, not the
   echo); timed until the prompt's text holds it (its TextArea `edit`, wrapped on the instance),
   and until a frame has painted the prompt with it (FrameProbe). A backspace then empties the
   prompt again (untimed). Goals: the mean echo during the turn <= 1.5 x the idle mean + 30 ms,
   and the slowest <= 2 x the idle slowest + 30 ms; the echo during the first and the last 400
   calls is printed apart (the request grows: whatever mm does with it on the UI loop grows too).
4. the garbage collector. What start-up made is frozen once the window is ready, as `mm` does
   (`cli.window_boot`); the collector's passes during the turn are counted by generation, with
   the longest of each: a full pass stops the UI loop for as long as it lasts, and would show
   as the slowest echo (the window keeps them short: window/full_passes.py).
   mm's peak resident memory is printed last.

Run: .venv/bin/python bench/bench_window_turn.py   (MM_BENCH_CALLS=N for another count; the
first and last fifth of the calls are compared, 400 of 2,000; --quick: 100 calls, unless
MM_BENCH_CALLS says otherwise, and 10 idle keys instead of 30)
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from window_common import (  # noqa: E402
    ROOT,
    SIZE,
    FrameProbe,
    ServerProcess,
    machine,
    settle_waiters,
    verdict,
)

# --quick reaches the children too (run_child passes it on): they read the same sizes.
QUICK = "--quick" in sys.argv
CALLS = int(os.environ.get("MM_BENCH_CALLS") or (100 if QUICK else 2000))
EDGE = max(1, CALLS // 5)  # 400 of 2,000
OUTPUT = 4096  # bytes of each command's output
GOAL_GROWTH = 1.15  # mm's last/first against the floor's last/first
GOAL_ECHO_RATIO = 1.5
GOAL_ECHO_MS = 30.0
GOAL_SLOWEST_RATIO = 2.0  # the slowest echo during the turn against the idle slowest
KEY_EVERY = 0.1  # seconds between two keystrokes
IDLE_KEYS = 10 if QUICK else 30
PROGRESS = 500  # a line on stderr every so many calls
MODEL = "scripted-model"
LOG_LINE = "tests/unit/test_module.py::test_case PASSED; building step output for the log"
QUESTION = f"run the {CALLS} steps of the build, one bash call each"


def command(n: int) -> str:
    """A bash command whose output is exactly OUTPUT bytes, different for each n."""
    head = f"step {n}\n"
    return f"echo step {n}; yes '{LOG_LINE}' | head -c {OUTPUT - len(head)}"


def command_output(n: int) -> str:
    """What `command(n)` prints (the floor makes it without running anything)."""
    head = f"step {n}\n"
    return head + ((LOG_LINE + "\n") * (OUTPUT // len(LOG_LINE) + 1))[: OUTPUT - len(head)]


# -- the model: the scripted server in a process of its own ------------------------------------


def serve(calls: int) -> None:
    """Child: serve the scripted conversation until stdin closes; print the base URL first."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.scripted_server import Reply, ScriptedServer, call

    class Forgetful(ScriptedServer):
        """Keeps no request: counts them (the count names the tool calls' ids)."""

        def _record(self, req: Any) -> int:
            with self._cond:
                self._seen = getattr(self, "_seen", 0) + 1
                return self._seen - 1

    def answer(req: Any) -> Any:
        messages = req.body.get("messages") or []
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done >= calls:
            return Reply(f"All {done} steps ran.")
        return Reply(tool_calls=[call("bash", {"command": command(done + 1)})])

    with Forgetful(on_empty=answer) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


# -- mm ------------------------------------------------------------------------------------------


def settings_for(base_url: str, folder: Path) -> Any:
    from mm_tui.config import Settings

    return Settings(
        baseUrl=base_url,
        model=MODEL,
        yolo=True,
        maxTurns=CALLS + 10,
        sessionsDir=str(folder / "sessions"),
    )


class Echo:
    """Times keystrokes in the prompt: until its text holds the key, and until a frame shows it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.prompt = prompt = app.main.prompt
        self.probe = FrameProbe(app.screen, prompt)
        self._waiters: list[tuple[Any, asyncio.Future[float]]] = []
        original = prompt.edit

        def edit(change: Any) -> Any:
            result = original(change)
            self._waiters = settle_waiters(self._waiters, time.perf_counter())
            return result

        prompt.edit = edit

    def _key(self, key: str, char: str | None) -> None:
        from textual import events

        event = events.Key(key, char)
        event.set_sender(self.app)
        self.app._driver.send_message(event)  # as Pilot does, and a terminal's input thread

    async def _edited(self, predicate: Any) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        return future

    async def once(self, char: str = "k") -> tuple[float, float]:
        prompt = self.prompt

        def shown() -> bool:
            return char in prompt.text

        typed = await self._edited(shown)
        painted = asyncio.ensure_future(self.probe.painted(shown, timeout=60))
        await asyncio.sleep(0)  # the frame waiter is registered
        t0 = time.perf_counter()
        self._key(char, char)
        text_at = await asyncio.wait_for(typed, 60)
        frame_at = await painted
        cleared = await self._edited(lambda: prompt.text == "")
        self._key("backspace", None)
        await asyncio.wait_for(cleared, 60)
        return text_at - t0, frame_at - t0

    async def series(
        self,
        count: int | None = None,
        until: asyncio.Event | None = None,
        progress: Any = lambda: 0,
    ) -> tuple[list[float], list[float], list[int]]:
        """Keystrokes until `count` or `until`: the times to the text and to the screen, and
        `progress()` (the calls finished) when each key was sent."""
        texts, frames, marks = [], [], []
        while (count is None or len(texts) < count) and not (until and until.is_set()):
            marks.append(progress())
            text, frame = await self.once()
            texts.append(text)
            frames.append(frame)
            await asyncio.sleep(KEY_EVERY)
        return texts, frames, marks


class Collections:
    """The garbage collector's passes during the turn: how many of each generation, and the
    longest of each (a full pass over a large heap stops the UI loop as long as it lasts)."""

    def __init__(self) -> None:
        self.longest: dict[int, list[float]] = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
        self._began = 0.0

    def note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        entry = self.longest[info["generation"]]
        entry[0] += 1
        entry[1] = max(entry[1], time.perf_counter() - self._began)


async def mm_child(base_url: str) -> dict[str, Any]:
    from mm_tui.core.events import ToolCallFinished, TurnEnded, TurnStarted
    from mm_tui.startup import start
    from mm_tui.window.app import MMApp

    folder = Path(tempfile.mkdtemp(prefix="mm-bench-turn-"))
    out: dict[str, Any] = {}
    try:
        settings = settings_for(base_url, folder)

        async def boot() -> Any:
            return await start(settings, folder)

        app = MMApp(boot)
        async with app.run_test(size=SIZE) as pilot:
            while app.engine is None or not app.prompt_in_place:
                await pilot.pause(0.05)
            gc.freeze()  # as `mm` does once ready (cli.window_boot): start-up's objects kept
            await pilot.pause(0.2)
            engine = app.engine
            out["window"] = None if engine.meter.window is None else engine.meter.window.tokens
            app.main.prompt.focus()
            await pilot.pause(0.1)
            echo = Echo(app)
            idle = await echo.series(IDLE_KEYS)

            finished: list[tuple[float, float]] = []  # (wall, process time)
            statuses: dict[str, int] = {}
            turn: dict[str, Any] = {}
            ended = asyncio.Event()
            original = app.main.emit
            t_start = time.perf_counter()

            def emit(event: Any) -> None:
                if isinstance(event, ToolCallFinished):
                    finished.append((time.perf_counter(), time.process_time()))
                    statuses[event.status] = statuses.get(event.status, 0) + 1
                    if len(finished) % PROGRESS == 0:
                        elapsed = finished[-1][0] - t_start
                        print(
                            f"  mm: {len(finished):,} calls in {elapsed:.0f} s",
                            file=sys.stderr,
                            flush=True,
                        )
                elif isinstance(event, TurnStarted):
                    turn["start"] = (time.perf_counter(), time.process_time())
                elif isinstance(event, TurnEnded):
                    turn["reason"] = event.stop_reason
                    turn["error"] = event.error
                    ended.set()
                original(event)

            app.main.emit = emit  # type: ignore[method-assign]
            passes = Collections()
            gc.callbacks.append(passes.note)
            t_start = time.perf_counter()
            app.main.submit(QUESTION)
            busy = await echo.series(until=ended, progress=lambda: len(finished))
            await ended.wait()
            gc.callbacks.remove(passes.note)
            turn["end"] = time.perf_counter()
            await pilot.pause(0.5)
            after = await echo.series(IDLE_KEYS)
            out.update(
                start=turn["start"],
                finished=finished,
                statuses=statuses,
                reason=turn.get("reason"),
                error=turn.get("error"),
                seconds=turn["end"] - turn["start"][0],
                idle=idle,
                busy=busy,
                after=after,
                items=len(app.main.transcript.items),
                collections=passes.longest,
                peak_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                session_messages=len(engine.session.messages),
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


# -- the floor: the growing request body, with httpx ---------------------------------------------


async def floor_child(base_url: str) -> dict[str, Any]:
    import httpx

    from mm_tui.engine.turn import DEFAULT_SYSTEM_PROMPT
    from mm_tui.tools.registry import ToolRegistry

    folder = Path(tempfile.mkdtemp(prefix="mm-bench-floor-"))
    try:
        settings = settings_for(base_url, folder)
        tools = ToolRegistry.from_settings(settings, folder).declarations()
        system = DEFAULT_SYSTEM_PROMPT.format(cwd=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": QUESTION},
    ]
    url = base_url + "/chat/completions"
    headers = {"Accept": "text/event-stream"}
    finished: list[tuple[float, float]] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0), trust_env=False) as client:
        start = (time.perf_counter(), time.process_time())
        while True:
            body = {
                "model": MODEL,
                "messages": messages,
                "stream": True,
                "stream_options": {"include_usage": True},
                "tools": tools,
                "tool_choice": "auto",
            }
            calls: dict[int, list[str]] = {}
            text: list[str] = []
            async with client.stream("POST", url, json=body, headers=headers) as resp:
                resp.raise_for_status()
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    chunk = json.loads(data)
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        if delta.get("content"):
                            text.append(delta["content"])
                        for piece in delta.get("tool_calls") or []:
                            slot = calls.setdefault(piece["index"], ["", "", ""])
                            slot[0] = piece.get("id") or slot[0]
                            function = piece.get("function") or {}
                            slot[1] = function.get("name") or slot[1]
                            slot[2] += function.get("arguments") or ""
            if not calls:
                break
            call_id, name, arguments = calls[0]
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                }
            )
            n = len(finished) + 1
            messages.append({"role": "tool", "tool_call_id": call_id, "content": command_output(n)})
            finished.append((time.perf_counter(), time.process_time()))
            if n % PROGRESS == 0:
                print(
                    f"  floor: {n:,} calls in {finished[-1][0] - start[0]:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    size = len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
    return {
        "start": start,
        "finished": finished,
        "answer": "".join(text),
        "last_body": size,
        "seconds": time.perf_counter() - start[0],
    }


# -- the parent ----------------------------------------------------------------------------------


def run_child(kind: str, base_url: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", kind, base_url]
        + (["--quick"] if QUICK else []),
        stdout=subprocess.PIPE,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{kind}: exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def edges(run: dict[str, Any]) -> dict[str, float]:
    """Wall and process time of the first EDGE calls and of the last EDGE calls."""
    marks = [tuple(run["start"]), *[tuple(m) for m in run["finished"]]]
    n = len(marks) - 1
    first = [marks[EDGE][i] - marks[0][i] for i in (0, 1)]
    last = [marks[n][i] - marks[n - EDGE][i] for i in (0, 1)]
    return {
        "first": first[0],
        "last": last[0],
        "ratio": last[0] / first[0],
        "cpu_first": first[1],
        "cpu_last": last[1],
        "cpu_ratio": last[1] / first[1] if first[1] else float("inf"),
    }


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main() -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    started = time.perf_counter()
    print(
        f"one turn of {CALLS:,} bash calls with {OUTPUT:,}-byte outputs, window mode, headless "
        f"{SIZE[0]}x{SIZE[1]}; the scripted server in its own process",
        flush=True,
    )
    print(f"machine: {machine()}", flush=True)
    server = ServerProcess(__file__, CALLS)
    try:
        mm = run_child("mm", server.base_url)
        floor = run_child("floor", server.base_url)
    finally:
        server.close()
    total = time.perf_counter() - started

    done = len(mm["finished"])
    ok = mm["statuses"].get("ok", 0)
    window = "unknown" if mm["window"] is None else f"{mm['window']:,} tokens"
    print(
        f"mm: {done:,} tool calls ({ok:,} ok), stop reason {mm['reason']}, in {mm['seconds']:.1f} s; "
        f"context window {window}; {mm['items']:,} transcript items, "
        f"{mm['session_messages']:,} messages in the history"
    )
    if mm["error"]:
        print(f"  error: {mm['error']}")
    print(
        f"floor: {len(floor['finished']):,} requests in {floor['seconds']:.1f} s; the last request "
        f"{floor['last_body'] / 1e6:.1f} MB; answer {floor['answer']!r}"
    )
    if done != CALLS or len(floor["finished"]) != CALLS:
        print("the runs did not make every call: no figures")
        raise SystemExit(1)

    m, f = edges(mm), edges(floor)
    print(f"calls 1-{EDGE:,} against calls {CALLS - EDGE + 1:,}-{CALLS:,}:")
    print(f"{'':24}{'first':>10}{'last':>10}{'ratio':>9}   {'per call':>17}")
    for name, e in (("mm", m), ("floor (request body)", f)):
        print(
            f"  {name:22}{e['first']:9.1f}s{e['last']:9.1f}s{e['ratio']:8.2f}x   "
            f"{e['first'] / EDGE * 1000:6.1f} -> {e['last'] / EDGE * 1000:6.1f} ms"
        )
    for name, e in (("mm, process CPU", m), ("floor, process CPU", f)):
        print(
            f"  {name:22}{e['cpu_first']:9.1f}s{e['cpu_last']:9.1f}s{e['cpu_ratio']:8.2f}x   "
            f"{e['cpu_first'] / EDGE * 1000:6.1f} -> {e['cpu_last'] / EDGE * 1000:6.1f} ms"
        )
    against = m["ratio"] / f["ratio"]
    print(
        f"  mm's growth / the floor's growth: {m['ratio']:.2f} / {f['ratio']:.2f} = "
        f"{against:.2f}  (goal <= {GOAL_GROWTH}) -> {verdict(against <= GOAL_GROWTH)}"
    )
    print(
        f"  mm's plain ratio {m['ratio']:.2f}x (the issue's words: <= {GOAL_GROWTH}x) -> "
        f"{verdict(m['ratio'] <= GOAL_GROWTH)}; the protocol's own growth alone is "
        f"{f['ratio']:.2f}x"
    )
    added_mm = (m["last"] - m["first"]) / EDGE * 1000
    added_floor = (f["last"] - f["first"]) / EDGE * 1000
    cpu_mm = (m["cpu_last"] - m["cpu_first"]) / EDGE * 1000
    cpu_floor = (f["cpu_last"] - f["cpu_first"]) / EDGE * 1000
    print(
        f"  added per call from the first to the last {EDGE:,}: mm {added_mm:+.1f} ms, floor "
        f"{added_floor:+.1f} ms, mm beyond the floor {added_mm - added_floor:+.1f} ms "
        f"(process CPU: mm {cpu_mm:+.1f} ms, floor {cpu_floor:+.1f} ms, beyond "
        f"{cpu_mm - cpu_floor:+.1f} ms)"
    )

    print(f"keystroke echo in the prompt, a key every {KEY_EVERY * 1000:.0f} ms:")
    ms = 1000.0
    figures = {}
    texts, frames, marks = mm["busy"]
    early = [i for i, mark in enumerate(marks) if mark < EDGE]
    late = [i for i, mark in enumerate(marks) if mark >= CALLS - EDGE]
    mm["busy_first"] = [[texts[i] for i in early], [frames[i] for i in early]]
    mm["busy_last"] = [[texts[i] for i in late], [frames[i] for i in late]]
    for key, label in (
        ("idle", "idle, before the turn"),
        ("busy", "during the turn"),
        ("busy_first", f"  during calls 1-{EDGE:,}"),
        ("busy_last", f"  during calls {CALLS - EDGE + 1:,}-{CALLS:,}"),
        ("after", f"idle, after ({mm['items']:,} items)"),
    ):
        texts, frames = mm[key][:2]
        if not texts:
            continue
        figures[key] = (mean(texts), max(texts))
        print(
            f"  {label:30}{len(texts):5} keys  text: mean {mean(texts) * ms:6.1f} ms, max "
            f"{max(texts) * ms:6.1f} ms;  on screen: mean {mean(frames) * ms:6.1f} ms, max "
            f"{max(frames) * ms:6.1f} ms"
        )
    idle_mean, idle_max = figures["idle"]
    busy_mean, busy_max = figures["busy"]
    limit = GOAL_ECHO_RATIO * idle_mean + GOAL_ECHO_MS / ms
    print(
        f"  during the turn, mean {busy_mean * ms:.1f} ms against {GOAL_ECHO_RATIO} x idle + "
        f"{GOAL_ECHO_MS:.0f} ms = {limit * ms:.1f} ms -> {verdict(busy_mean <= limit)}"
    )
    limit_max = GOAL_SLOWEST_RATIO * idle_max + GOAL_ECHO_MS / ms
    print(
        f"  the slowest, {busy_max * ms:.1f} ms against {GOAL_SLOWEST_RATIO} x the idle slowest + "
        f"{GOAL_ECHO_MS:.0f} ms = {limit_max * ms:.1f} ms -> {verdict(busy_max <= limit_max)}"
    )
    passes = mm["collections"]
    print(
        "the garbage collector's passes during the turn (count, longest): "
        + ", ".join(
            f"generation {g}: {n:,}, {longest * ms:.1f} ms"
            for g, (n, longest) in sorted(passes.items(), key=lambda kv: int(kv[0]))
        )
    )
    print(f"mm's peak memory (resident): {mm['peak_rss'] / 1024:.0f} MB")
    print(f"whole run {total:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) > 3 and sys.argv[1] == "--child":
        child = mm_child if sys.argv[2] == "mm" else floor_child
        print(json.dumps(asyncio.run(child(sys.argv[3]))))
    else:
        main()
