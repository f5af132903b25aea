"""A tool call's round trip: from the model server's last byte of a reply that asks for one bash
call to the first byte of the next request, in mm (its engine, its HTTP client, its session and
its bash tool, as `mm -p` runs them) and in a minimal client, against one server, in one run.

The server is a small HTTP/1.1 server written here (asyncio streams, in a process of its own so
that it takes no time from the client measured). Every reply is a streamed chat completion, each
SSE event written and drained on its own, as a local server sends them: a role chunk, then the
tool call's pieces (its name, then its arguments four characters at a time), a TOKEN apart as a
model makes them, then at once the finish chunk, the usage, `[DONE]` and the chunked terminator.
It asks for `bash` with the command `true N` (N new each time: mm's loop guard stays out), until
the request that carries the last result, which gets a short text answer. The server notes when
it wrote a reply's last byte and when the next request's first byte came; the round trip is the
gap, and holds the client's reading of the reply, its running of the command and its writing of
the next request.

Only the turn's requests are timed (their first message is the turn's question): mm's model
probe asks first (engine/ask_style.py), and a person's turn finds it done.

- mm: `mm_tui.startup.start` with the server's base URL (yolo, a fresh session in a temporary
  folder), one turn, as `mm -p` runs it (what a first call loads, it loads in the turn).
- window: the same turn in window mode: the real MMApp, headless, 100x30, started as `mm`
  starts it (`cli.window_boot`, the settings in a config file), the request sent once what
  ready starts loading for the first exchange has loaded, as it has when a person has typed.
- floor: a minimal client: httpx streaming, the SSE lines parsed as they come, the command run
  with `asyncio.create_subprocess_exec("bash", "-c", ...)`, the next request posted with the
  growing history.

Rounds alternate the three, each against a fresh server. Goals:
- the round trip: mm's median, as `mm -p` and in window mode, at most 1.2x the floor's plus
  10 ms;
- the whole turn (the server's, from the turn's first request to its answer's last byte): no
  slower than the floor's plus mm's tool work, the time its bash calls took from their start
  to their result (`ToolCallFinished.elapsed`: the launcher, the sandbox, the command itself).
  Printed beside it, a call's share: what mm's turn takes beyond the floor's, and what its
  tool takes beyond the floor's own run of the command.

Run: .venv/bin/python bench/bench_round_trip.py [calls, 500 by default] [rounds, 3 by default]
     (--quick: 20 calls, 1 round)
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from window_common import ServerProcess  # this folder: the script's own, first on sys.path

GOAL_RATIO = 1.2
GOAL_PLUS = 0.010  # seconds
TOKEN = 0.004  # seconds between two tokens: a fast local model, 250 tokens/s
MODEL = "round-trip-model"
COMMAND = "true"
QUESTION = "run true, once a call, until I say stop"
# `true N`: a new command each call, so that mm's loop guard never steps in


# -- the server ------------------------------------------------------------------------------


def _event(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    payload = f"data: {text}\n\n".encode()
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


def _reply(n: int, calls: int) -> tuple[list[bytes], list[bytes]]:
    """The reply to a request that carries `n` results: its tokens' events (each made a TOKEN
    after the one before, as a model makes them), and its end (the finish chunk, the usage,
    `[DONE]`, the chunked terminator), which a server sends at once after the last token."""
    base = {"id": f"r{n}", "object": "chat.completion.chunk", "created": 0, "model": MODEL}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _event({**base, "choices": [choice]})

    if n >= calls:
        body = [chunk({"role": "assistant", "content": ""}), chunk({"content": "stopped"})]
        finish = "stop"
    else:
        arguments = json.dumps({"command": f"{COMMAND} {n}"})
        pieces = [arguments[i : i + 4] for i in range(0, len(arguments), 4)]
        call = {"index": 0, "id": f"call_{n}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": pieces[0]}
        body = [chunk({"role": "assistant", "content": None}), chunk({"tool_calls": [call]})]
        body += [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces[1:]
        ]
        finish = "tool_calls"
    usage = {"prompt_tokens": 100 + n, "completion_tokens": 10, "total_tokens": 110 + n}
    end = [
        chunk({}, finish),
        _event({**base, "choices": [], "usage": usage}),
        _event("[DONE]"),
        b"0\r\n\r\n",
    ]
    return body, end


def serve(calls: int) -> None:
    """Child: serve until stdin closes; print the base URL first, then what it timed (JSON).

    Only the turn's requests are timed, those whose first message is QUESTION: mm's model probe
    asks first (engine/ask_style.py), and a person's turn finds it done."""
    ended: list[float] = []  # when each tool-call reply of the turn wrote its last byte
    began: list[float] = []  # when each request of the turn sent its first byte
    last: list[float] = []  # when the turn's last reply (the text answer) wrote its last byte

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                first = await reader.read(1)
                if not first:
                    return
                arrived = time.monotonic()
                head = first + await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                if b"/models" in head.split(b"\r\n", 1)[0]:
                    data = json.dumps({"data": [{"id": MODEL}]}).encode()
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(data)}\r\n\r\n".encode()
                        + data
                    )
                    await writer.drain()
                    continue
                messages = body.get("messages") or []
                asked = [m.get("content") for m in messages if m.get("role") == "user"]
                turn = asked[:1] == [QUESTION]
                if turn:
                    began.append(arrived)
                n = sum(1 for m in messages if m.get("role") == "tool")
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n"
                )
                await writer.drain()
                tokens, end = _reply(n, calls)
                for i, piece in enumerate(tokens):
                    if i:
                        await asyncio.sleep(TOKEN)  # the model makes the next token
                    writer.write(piece)
                    await writer.drain()
                for piece in end:
                    writer.write(piece)
                    await writer.drain()
                if turn:
                    (ended if n < calls else last).append(time.monotonic())
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}/v1", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        server.close()
        # the request after each tool-call reply: the first request has none before it
        trips = [b - e for e, b in zip(ended, began[1:], strict=False)]
        turn = last[-1] - began[0] if began and last else None
        print(json.dumps({"trips": trips, "requests": len(began), "turn": turn}), flush=True)

    asyncio.run(main())


# -- the clients -----------------------------------------------------------------------------


def settings_for(base_url: str, calls: int, folder: Path) -> Any:
    """mm's settings for the turn: the server, yolo, room for every call, sessions in `folder`."""
    from mm_tui.config import Settings

    return Settings(
        baseUrl=base_url,
        model=MODEL,
        yolo=True,
        maxTurns=calls + 10,
        sessionsDir=str(folder / "sessions"),
    )


async def mm_child(base_url: str, calls: int) -> dict[str, Any]:
    from mm_tui.core.events import ToolCallFinished
    from mm_tui.startup import start

    folder = Path(tempfile.mkdtemp(prefix="mm-bench-trip-"))
    try:
        engine = (await start(settings_for(base_url, calls, folder), folder)).engine
        statuses: dict[str, int] = {}
        tools = [0.0]

        def emit(event: Any) -> None:
            if isinstance(event, ToolCallFinished):
                statuses[event.status] = statuses.get(event.status, 0) + 1
                tools[0] += event.elapsed

        began = time.perf_counter()
        ended = await engine.run_turn(QUESTION, emit)
        seconds = time.perf_counter() - began
        await engine.aclose()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "seconds": seconds,
        "statuses": statuses,
        "reason": ended.stop_reason,
        "tools": tools[0],
    }


async def window_child(base_url: str, calls: int) -> dict[str, Any]:
    """The same turn in window mode: the real MMApp, headless at 100x30, started as `mm` starts
    it (`cli.window_boot`, the settings in a config file), the request submitted as the prompt
    submits it once what ready starts loading for the first exchange has loaded, as it has by
    the time a person has typed; the engine's events go through the window as they always do."""
    from mm_tui.cli import parse_flags, window_boot
    from mm_tui.core.events import ToolCallFinished, TurnEnded
    from mm_tui.window.app import MMApp

    folder = Path(tempfile.mkdtemp(prefix="mm-bench-trip-window-"))
    statuses: dict[str, int] = {}
    ended: dict[str, Any] = {}
    tools = [0.0]
    try:
        config = folder / "bench.yaml"
        config.write_text(
            f"baseUrl: {base_url}\nmodel: {MODEL}\nyolo: true\nmaxTurns: {calls + 10}\n"
            f"sessionsDir: {folder / 'sessions'}\n"
        )
        app = MMApp(window_boot(parse_flags(["--config", str(config)]), folder))
        async with app.run_test(size=(100, 30)) as pilot:
            await app.engine_ready.wait()
            await pilot.pause(0.05)  # the loading starts in the loop's turn after ready
            await asyncio.to_thread(_loaded_after_ready)
            done = asyncio.Event()
            original = app.main.emit

            def emit(event: Any) -> None:
                if isinstance(event, ToolCallFinished):
                    statuses[event.status] = statuses.get(event.status, 0) + 1
                    tools[0] += event.elapsed
                elif isinstance(event, TurnEnded):
                    ended["reason"] = event.stop_reason
                    done.set()
                original(event)

            app.main.emit = emit  # type: ignore[method-assign]
            began = time.perf_counter()
            app.main.submit(QUESTION)
            await done.wait()
            seconds = time.perf_counter() - began
            await pilot.pause(0.1)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "seconds": seconds,
        "statuses": statuses,
        "reason": ended.get("reason"),
        "tools": tools[0],
    }


def _loaded_after_ready(bound: float = 30.0) -> None:
    """Wait for the loading threads window mode starts once ready: mm's threads that are not
    daemons are those (`core/preload.py`, `engine/tls.py`); the others serve the session."""
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("mm-") and not thread.daemon:
            thread.join(bound)


MINIMAL_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


async def minimal_turn(
    client: Any,
    base_url: str,
    messages: list[dict[str, Any]],
    write: Any = None,
    model: str = MODEL,
    commands: list[float] | None = None,
) -> dict[str, int]:
    """One turn of the minimal client, the floor under any agent: post the history (httpx
    streaming), parse the SSE lines as they come, hand each text delta to `write`, run a bash
    call with `asyncio.create_subprocess_exec`, and post again until a reply asks for nothing.
    `messages` grows by the turn; returns the calls' statuses. `commands` gets the time of each
    command, from its start to its output read."""
    statuses: dict[str, int] = {}
    while True:
        body = {"model": model, "messages": messages, "stream": True, "tools": MINIMAL_TOOLS}
        found: dict[str, str] = {}
        text: list[str] = []
        async with client.stream("POST", base_url + "/chat/completions", json=body) as resp:
            async for line in resp.aiter_lines():
                if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                    continue
                for choice in json.loads(line[5:]).get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        text.append(delta["content"])
                        if write is not None:
                            write(delta["content"])
                    for piece in delta.get("tool_calls") or []:
                        found["id"] = piece.get("id") or found.get("id", "")
                        function = piece.get("function") or {}
                        found["arguments"] = found.get("arguments", "") + (
                            function.get("arguments") or ""
                        )
        if not found:
            messages.append({"role": "assistant", "content": "".join(text)})
            return statuses
        command = json.loads(found["arguments"])["command"]
        began = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        output, _ = await process.communicate()
        if commands is not None:
            commands.append(time.perf_counter() - began)
        statuses["ok"] = statuses.get("ok", 0) + 1
        call = {"id": found["id"], "type": "function"}
        call["function"] = {"name": "bash", "arguments": found["arguments"]}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": found["id"], "content": output.decode()})


async def floor_child(base_url: str, calls: int) -> dict[str, Any]:
    import httpx

    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    commands: list[float] = []
    began = time.perf_counter()
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), trust_env=False) as client:
        statuses = await minimal_turn(client, base_url, messages, commands=commands)
    return {
        "seconds": time.perf_counter() - began,
        "statuses": statuses,
        "reason": "end_turn",
        "tools": sum(commands),
    }


CHILDREN = {"mm": mm_child, "window": window_child, "floor": floor_child}
KINDS = ("floor", "mm", "window")


def run(kind: str, calls: int) -> dict[str, Any]:
    server = ServerProcess(__file__, calls)
    try:
        done = subprocess.run(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--child",
                kind,
                server.base_url,
                str(calls),
            ],
            stdout=subprocess.PIPE,
            text=True,
            timeout=600,
        )
    finally:
        found = json.loads(server.close())
    if done.returncode != 0:
        raise RuntimeError(f"{kind}: exit {done.returncode}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["statuses"] != {"ok": calls}:
        raise RuntimeError(f"{kind}: the calls ended {result['statuses']}, not {calls} ok")
    return {**result, **found}


def main(calls: int, rounds: int) -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from window_common import machine, verdict

    trips: dict[str, list[float]] = {kind: [] for kind in KINDS}
    turns: dict[str, list[float]] = {kind: [] for kind in KINDS}
    tools: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for r in range(rounds):
        for kind in KINDS if r % 2 == 0 else KINDS[::-1]:
            found = run(kind, calls)
            trips[kind] += found["trips"]
            turns[kind].append(found["turn"])
            tools[kind].append(found["tools"])
    print(f"a tool call's round trip, {calls} calls of bash `{COMMAND}`, {rounds} rounds")
    print(f"machine: {machine()}")

    def p95(values: list[float]) -> float:
        return sorted(values)[int(len(values) * 0.95) - 1] if len(values) >= 20 else max(values)

    labels = {
        "floor": "minimal client (floor)",
        "mm": "mm (engine, as mm -p)",
        "window": "mm (window mode)",
    }
    for kind in KINDS:
        ms = [t * 1000 for t in trips[kind]]
        print(
            f"  {labels[kind]:24} round trip median {statistics.median(ms):7.1f} ms  p95 "
            f"{p95(ms):7.1f} ms  whole turn {statistics.median(turns[kind]):6.2f} s  "
            f"its commands {statistics.median(tools[kind]):5.2f} s"
        )
    print(
        "  (whole turn: the server's, from the turn's first request to its last answer;\n"
        "  its commands: the bash calls from start to result, as mm's ToolCallFinished times\n"
        "  them, and the floor's from its subprocess's start to its output read)"
    )
    floor_median = statistics.median(trips["floor"])
    goal = floor_median * GOAL_RATIO + GOAL_PLUS
    for kind in ("mm", "window"):
        median = statistics.median(trips[kind])
        print(
            f"{labels[kind]:24} median {median * 1000:.1f} ms against the floor's "
            f"{floor_median * 1000:.1f} ms: {median / floor_median:.2f}x (goal: <= {GOAL_RATIO}x "
            f"+ {GOAL_PLUS * 1000:.0f} ms = {goal * 1000:.1f} ms) -> {verdict(median <= goal)}"
        )
    # The whole turn: no slower than the floor's plus mm's tool work (its bash calls' time,
    # which holds their commands' run as the floor's time holds its own). Printed beside it:
    # what mm's turn takes beyond the floor's a call, and what of that its tool adds beyond the
    # floor's run of the command; the rest is mm's own work for a call (the session's records,
    # the events, the next request).
    floor_turn = statistics.median(turns["floor"])
    floor_tools = statistics.median(tools["floor"])
    for kind in ("mm", "window"):
        turn, tool = statistics.median(turns[kind]), statistics.median(tools[kind])
        print(
            f"{labels[kind]:24} whole turn {turn:.2f} s against the floor's {floor_turn:.2f} s "
            f"plus mm's tool work {tool:.2f} s = {floor_turn + tool:.2f} s -> "
            f"{verdict(turn <= floor_turn + tool)}"
        )
        print(
            f"{'':24} a call: {(turn - floor_turn) * 1000 / calls:+.2f} ms beyond the floor's, "
            f"of which the tool beyond the floor's command {(tool - floor_tools) * 1000 / calls:+.2f}"
            " ms"
        )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) > 2 and sys.argv[1] == "--child":
        out = asyncio.run(CHILDREN[sys.argv[2]](sys.argv[3], int(sys.argv[4])))
        print(json.dumps(out))
    elif "--quick" in sys.argv:
        main(20, 1)
    else:
        args = [int(a) for a in sys.argv[1:]]
        main(*(args + [500, 3][len(args) :]))
