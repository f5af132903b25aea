"""mm beside peer agents: the same scripted server, the same tmux terminal, the same figures.

A figure of mm's alone says little about whether it is light or heavy for what it does; the
same figures, taken in one run from other agents a person might use instead and from a minimal
client (the floor under any of them), do. Every agent runs as its real program in a tmux
terminal of 100x30 on a private socket (`tmux -L`), with a HOME and working folder of its own
in a temporary folder, and talks to a model server written here: asyncio streams on 127.0.0.1,
in a process of its own, real SSE, each event written and drained on its own, as in
bench_round_trip.py (whose TOKEN pacing it keeps for tool calls). The server picks its answer
by a word in the last user message, so that the same prompts drive every agent; a request
without tools from an agent that declares tools (a title, a summary) gets a short answer. It
speaks chat completions, and the Responses API for Codex, which no longer speaks the former.

The agents: mm (`python -m mm_tui.cli --base-url ... --yolo`, window mode), the minimal client
of bench_round_trip.py behind a line prompt (httpx streaming, each delta written to the
terminal, bash through a subprocess), and the peers that install from PyPI or npm and can be
pointed at a local server: mistral-vibe and aider from PyPI, OpenCode and Codex from npm, each
configured through its own config file in its HOME (or flags) and run with its flag to ask
nothing before a command. Peers are installed into ~/.cache/mm-bench/peers (under
$XDG_CACHE_HOME when that is set; a venv each for PyPI, with a Python new enough for it, found
on PATH or in pyenv; one npm prefix) when missing there or when `--install` asks (then
upgraded); one that does not install or run is skipped with the reason, and a figure an
agent cannot give is "-" with the reason under the table.

Per agent, three launches, each with a server of its own: one not timed (the file cache warmed,
the agent's first-run set-up done), then:

1. start-up: from the agent's start in tmux to its prompt on screen (capture-pane polled every
   20 ms: the figure is up to 20 ms late, alike for all); idle: the CPU (user + system, from
   /proc) of the pane's process tree over a few seconds, a few seconds after start-up, and its
   RSS then; an answer at 200 tokens/s of 4 characters: the tree's CPU as a share of one core,
   from the request's arrival at the server to the answer's last words on screen; a 60,000
   character answer sent as fast as the server writes it: from the request's arrival to its
   last words on screen (an agent still drawing it after FAST_TIMEOUT gets "> N").
2. start-up again; a turn of CALLS tool calls, one shell call per reply (`true N`, in the shape
   the agent declares its shell tool): the turn's wall time on the server (its first request
   to the one carrying the last result), the tree's CPU per call, the round trip's median
   (server side, as in bench_round_trip: a tool-call reply's last byte to the next request's
   first byte), the tree's RSS after the turn.

mm's ratio to each of the others is printed per figure (below 1: mm takes less). The run exits
non-zero when mm's own runs fail (an answer not on screen, a call missing); a peer failing is
printed. A full run with every peer takes about 9 minutes on two cores.

Run: .venv/bin/python bench/bench_peers.py [--install] [--only vibe,aider,opencode,codex]
     [--calls N, 500 by default]  (mm and the minimal client always run; --quick: only they,
     at small sizes; no peer is installed or run)
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_round_trip import TOKEN, _event  # noqa: E402
from private_home import bench_cache  # noqa: E402
from window_common import ROOT, ServerProcess, answer_markdown, machine, pieces  # noqa: E402

QUICK = "--quick" in sys.argv
MODEL = "bench-model"
CALLS = int(sys.argv[sys.argv.index("--calls") + 1]) if "--calls" in sys.argv else 500
CALLS = 20 if QUICK else CALLS
FAST_CHARS = 6_000 if QUICK else 60_000
RATE = 200  # tokens a second in the paced answer
PACED_SECONDS = 0.5 if QUICK else 10.0
IDLE_SECONDS = 1.0 if QUICK else 5.0
FAST_TIMEOUT = 30.0 if QUICK else 90.0  # seconds for the fast answer to show: beyond, "> N"
SETTLE = 0.5 if QUICK else 3.0  # seconds after start-up before the first figure
POLL = 0.02  # seconds between two looks at the screen while timing
COLUMNS, ROWS = 100, 30
HZ = os.sysconf("SC_CLK_TCK")
CACHE = bench_cache() / "peers"

# The word in a prompt that picks the server's answer, and the word the answer ends with.
SCENARIOS = {"benchfast": "fast", "benchpaced": "paced", "benchcalls": "calls"}
ENDS = {"fast": "fastanswerend", "paced": "pacedanswerend", "calls": "allcallsmade"}
PROMPTS = {
    "fast": "Write the long answer now, benchfast",
    "paced": "Write the paced answer now, benchpaced",
    "calls": "Run the shell command I give you each time until I say stop, benchcalls",
}
SHELL_TOOLS = ("bash", "shell", "exec_command", "run_shell_command", "shell_command", "terminal")


# -- the server ------------------------------------------------------------------------------


def _text(content: Any) -> str:
    """A message's text, whether a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Chat messages, or a Responses request's input items, as role/content dicts."""
    if isinstance(body.get("messages"), list):
        return body["messages"]
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def scenario_of(body: dict[str, Any]) -> str | None:
    """The scenario the last user message with a bench word asks for (None: a side request)."""
    for message in reversed(_messages(body)):
        if message.get("role") != "user":
            continue
        text = _text(message.get("content"))
        for word, scenario in SCENARIOS.items():
            if word in text:
                return scenario
    return None


def results_in(body: dict[str, Any]) -> int:
    """How many tool results the request carries."""
    return sum(
        1
        for m in _messages(body)
        if m.get("role") == "tool" or m.get("type") == "function_call_output"
    )


def shell_call(tools: list[Any], n: int) -> tuple[str, str] | None:
    """The call of the agent's shell tool that runs `true n`: its name and its arguments (JSON),
    filled in from the tool's own schema (a string or an argv list; required fields given)."""
    declared: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if isinstance(tool, dict):
            fn: dict[str, Any] = (
                tool["function"] if isinstance(tool.get("function"), dict) else tool
            )
            if isinstance(fn.get("name"), str):
                declared[fn["name"]] = fn.get("parameters") or {}
    name = next((n for n in SHELL_TOOLS if n in declared), None)
    if name is None:
        return None
    schema = declared[name]
    props: dict[str, Any] = schema.get("properties") or {}
    key = next((k for k in ("command", "cmd") if k in props), "command")
    command = f"true {n}"
    args: dict[str, Any] = {
        key: ["bash", "-lc", command] if props.get(key, {}).get("type") == "array" else command
    }
    fill = {"string": "bench step", "integer": 30, "number": 30, "boolean": False}
    for required in schema.get("required") or []:
        if required not in args:
            kind = props.get(required, {}).get("type")
            args[required] = fill.get(kind, [] if kind == "array" else "bench step")
    return name, json.dumps(args)


class Chat:
    """The events of one streamed chat completion."""

    def __init__(self, n: int, body: dict[str, Any]) -> None:
        self.base = {"id": f"r{n}", "object": "chat.completion.chunk", "created": 0}
        self.base["model"] = body.get("model") or MODEL
        self.usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _event({**self.base, "choices": [choice]})

    def end(self, finish: str) -> list[bytes]:
        out = [self.chunk({}, finish)]
        if self.usage:
            usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
            out.append(_event({**self.base, "choices": [], "usage": usage}))
        return [*out, _event("[DONE]"), b"0\r\n\r\n"]


def answer(scenario: str, fast_chars: int, paced_seconds: float) -> str:
    """The long answers: realistic Markdown ending with the scenario's last word."""
    if scenario == "fast":
        text = answer_markdown(fast_chars)
    else:
        text = answer_markdown(int(RATE * paced_seconds * 4), start=7)
    return f"{text}\nThat is all: {ENDS[scenario]}\n"


def summary(body: dict[str, Any], scenario: str | None, n: int) -> str:
    """One log line for a request: what it asked for, for progress and for a failure's report."""
    system = next(
        (m.get("content") for m in _messages(body) if m.get("role") in ("system", "developer")),
        body.get("instructions") or "",
    )
    tools = [(t.get("function") or t).get("name") for t in body.get("tools") or []]
    line = {"scenario": scenario, "results": n, "tools": tools, "stream": body.get("stream")}
    return json.dumps({**line, "system": _text(system)[:120]}) + "\n"


def chat_events(
    n: int, body: dict[str, Any], text: str, call: tuple[str, str] | None
) -> tuple[list[bytes], list[bytes]]:
    """A streamed chat completion: its tokens' events, and its end (sent at once)."""
    chat = Chat(n, body)
    if call is None:
        parts = [chat.chunk({"role": "assistant", "content": ""})]
        parts += [chat.chunk({"content": piece}) for piece in pieces(text)]
        return parts, chat.end("stop")
    name, arguments = call
    bits = pieces(arguments)
    head = {"index": 0, "id": f"call_{n}", "type": "function"}
    head["function"] = {"name": name, "arguments": bits[0]}
    parts = [chat.chunk({"role": "assistant", "content": None})]
    parts.append(chat.chunk({"tool_calls": [head]}))
    parts += [
        chat.chunk({"tool_calls": [{"index": 0, "function": {"arguments": bit}}]})
        for bit in bits[1:]
    ]
    return parts, chat.end("tool_calls")


def responses_events(
    n: int, body: dict[str, Any], text: str, call: tuple[str, str] | None
) -> tuple[list[bytes], list[bytes]]:
    """The same reply as the Responses API streams it (Codex speaks only that)."""
    seq = iter(range(1_000_000))

    def event(kind: str, data: dict[str, Any]) -> bytes:
        data = {"type": kind, "sequence_number": next(seq), **data}
        payload = f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()
        return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"

    response = {"id": f"resp_{n}_{time.monotonic_ns()}", "object": "response"}
    response["model"] = body.get("model") or MODEL
    parts = [event("response.created", {"response": {**response, "status": "in_progress"}})]
    if call is None:
        item: dict[str, Any] = {"id": f"msg_{n}", "type": "message", "role": "assistant"}
        item["content"] = []
        parts.append(event("response.output_item.added", {"output_index": 0, "item": item}))
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        parts += [
            event("response.output_text.delta", {**where, "delta": piece}) for piece in pieces(text)
        ]
        done = {**item, "status": "completed"}
        done["content"] = [{"type": "output_text", "text": text, "annotations": []}]
    else:
        name, arguments = call
        item = {"id": f"fc_{n}", "type": "function_call", "call_id": f"call_{n}", "name": name}
        item["arguments"] = ""
        parts.append(event("response.output_item.added", {"output_index": 0, "item": item}))
        where = {"item_id": item["id"], "output_index": 0}
        parts += [
            event("response.function_call_arguments.delta", {**where, "delta": bit})
            for bit in pieces(arguments)
        ]
        done = {**item, "arguments": arguments, "status": "completed"}
    usage: dict[str, Any] = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
    usage["input_tokens_details"] = {"cached_tokens": 0}
    usage["output_tokens_details"] = {"reasoning_tokens": 0}
    completed = {**response, "status": "completed", "output": [done], "usage": usage}
    end = [
        event("response.output_item.done", {"output_index": 0, "item": done}),
        event("response.completed", {"response": completed}),
        b"0\r\n\r\n",
    ]
    return parts, end


async def read_request(reader: asyncio.StreamReader) -> tuple[float, bytes, bytes] | None:
    """(the monotonic time of its first byte, its request line, its body), or None at EOF."""
    first = await reader.read(1)
    if not first:
        return None
    arrived = time.monotonic()
    head = first + await reader.readuntil(b"\r\n\r\n")
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"content-length" in headers:
        data = await reader.readexactly(int(headers[b"content-length"]))
    elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            parts.append((await reader.readexactly(size + 2))[:-2])
            if size == 0:
                break
        data = b"".join(parts)
    else:
        data = b""
    if headers.get(b"content-encoding", b"").lower() == b"gzip":
        import gzip

        data = gzip.decompress(data)
    return arrived, head.split(b"\r\n", 1)[0], data


def json_reply(status: str, data: dict[str, Any]) -> bytes:
    payload = json.dumps(data).encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload


async def send(writer: asyncio.StreamWriter, parts: list[bytes], times: list[float]) -> None:
    """Write each part and drain it; part i not before times[i] (monotonic), if times are given."""
    for i, part in enumerate(parts):
        if times:
            delay = times[i] - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        writer.write(part)
        await writer.drain()


class BenchServer:
    """The scripted model of every agent: see the module's docstring."""

    def __init__(
        self, calls: int, log_path: str, fast_chars: int, paced_seconds: float, tools: bool
    ) -> None:
        self.calls, self.fast_chars, self.paced_seconds = calls, fast_chars, paced_seconds
        self.tools = tools  # the agent declares tools: a request without them is a side one
        self.log = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the server's life
        self.began: dict[int, float] = {}  # the first request carrying n results: its first byte
        self.ended: dict[int, float] = {}  # the tool-call reply to it: its last byte
        self.streams: dict[str, dict[str, float]] = {}
        self.counts: dict[str, int] = {}

    def text_for(self, scenario: str | None, n: int, call: Any) -> str:
        if scenario in ("fast", "paced"):
            return answer(scenario, self.fast_chars, self.paced_seconds)
        if scenario == "calls" and n >= self.calls:
            return f"All {self.calls} calls made: {ENDS['calls']}"
        if scenario == "calls" and call is None:
            return "No shell tool was declared."
        return "Bench title"  # a side request: a title, a summary

    async def reply(
        self, writer: asyncio.StreamWriter, arrived: float, body: dict[str, Any], responses: bool
    ) -> None:
        scenario = scenario_of(body) if body.get("tools") or not self.tools else None
        n = results_in(body)
        self.counts[scenario or "side"] = self.counts.get(scenario or "side", 0) + 1
        self.log.write(summary(body, scenario, n))
        call = None
        if scenario == "calls":
            self.began.setdefault(n, arrived)
            if n < self.calls:
                call = shell_call(body.get("tools") or [], n)
        text = self.text_for(scenario, n, call)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n"
        )
        await writer.drain()
        events = responses_events if responses else chat_events
        parts, end = events(n, body, text, call)
        first = time.monotonic()
        step = {"paced": 1 / RATE, "calls": TOKEN}.get(scenario or "")
        await send(writer, parts, [first + i * step for i in range(len(parts))] if step else [])
        await send(writer, end, [])
        last = time.monotonic()
        if scenario in ("fast", "paced") and scenario not in self.streams:
            self.streams[scenario] = {"arrived": arrived, "first": first, "last": last}
        if call is not None:
            self.ended.setdefault(n, last)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while request := await read_request(reader):
                arrived, line, data = request
                path = (line.split(b" ") + [b"", b""])[1].split(b"?")[0]
                if line.startswith(b"POST") and path.endswith(
                    (b"/chat/completions", b"/responses")
                ):
                    body = json.loads(data or b"{}")
                    await self.reply(writer, arrived, body, path.endswith(b"/responses"))
                    continue
                if path.endswith(b"/models"):
                    models = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
                    writer.write(json_reply("200 OK", models))
                else:
                    self.log.write(json.dumps({"other": line.decode(errors="replace")}) + "\n")
                    error = {"error": {"message": "not found", "type": "not_found"}}
                    writer.write(json_reply("404 Not Found", error))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        except asyncio.CancelledError:  # the server closing with the agent still connected
            return
        finally:
            writer.close()

    def report(self) -> dict[str, Any]:
        began, ended = self.began, self.ended
        trips = [began[k + 1] - ended[k] for k in sorted(ended) if k + 1 in began]
        last = max(began) if began else 0
        return {
            "trips": trips,
            "turn": [began[0], began[last]] if began else None,
            "results": last,
            "streams": self.streams,
            "counts": self.counts,
        }


def serve(argv: list[str]) -> None:
    """Child: serve until stdin closes; print the base URL first, then what it saw (JSON). Each
    request is logged as one line in the log file, which the parent watches for progress."""
    calls, log_path, fast_chars, paced_seconds, tools = argv
    bench = BenchServer(int(calls), log_path, int(fast_chars), float(paced_seconds), tools == "1")

    async def main() -> None:
        server = await asyncio.start_server(bench.handle, "127.0.0.1", 0, limit=1 << 20)
        port = server.sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}/v1", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        server.close()
        print(json.dumps(bench.report()), flush=True)

    asyncio.run(main())


# -- the minimal client, as a line REPL --------------------------------------------------------


def minimal(base_url: str) -> None:
    """Child: bench_round_trip's minimal client behind a prompt, each delta written out."""
    import httpx
    from bench_round_trip import minimal_turn

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    async def main() -> None:
        messages: list[dict[str, Any]] = []
        async with httpx.AsyncClient(timeout=httpx.Timeout(120.0), trust_env=False) as client:
            while True:
                line = await asyncio.to_thread(input, "minimal> ")
                messages.append({"role": "user", "content": line})
                await minimal_turn(client, base_url, messages, write, MODEL)
                write("\n")

    asyncio.run(main())


# -- the terminal ------------------------------------------------------------------------------


TAG = "BENCH_PEERS_TAG"  # in each agent's environment, so in any process it starts, detached too


def scan() -> dict[int, tuple[int, str]]:
    """Every process: its pid -> (its parent's pid, its start time), from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(entry)] = (int(fields[1]), fields[19])
    return table


def carries(pid: int, tag: bytes) -> bool:
    """Whether the process's environment holds `tag` (a NAME=value entry)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return tag in environ.read().split(b"\0")
    except OSError:
        return False


def cpu_of(pids: list[int]) -> float:
    """User + system seconds of these processes and of their reaped children."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / HZ


def rss_of(pids: list[int]) -> float:
    """Resident memory of these processes together, in MB."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


class NotSeen(RuntimeError):
    """What was waited for did not show on screen in time."""


class Pane:
    """One agent in a tmux terminal of its own (a private server, `-L`), started at `t0`."""

    count = 0

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        Pane.count += 1
        self.server = f"mm-bench-peers-{os.getpid()}-{Pane.count}-{name}"
        self.tag = f"{TAG}={self.server}".encode()
        self.known: dict[int, tuple[str, bool]] = {}  # pid -> (start time, carries the tag)
        self.pid, self.started = 0, ""
        env = {**env, TAG: self.server}
        command = "exec env -i " + " ".join(
            [shlex.quote(f"{k}={v}") for k, v in env.items()] + [shlex.quote(a) for a in argv]
        )
        self.t0 = time.monotonic()
        # the session's first command is a placeholder (no shell, no rc file), replaced by the
        # agent once the tmux server runs, so that its start is not in the agent's start-up
        started = self.tmux(
            "new-session", "-d", "-s", "bench", "-x", str(COLUMNS), "-y", str(ROWS), "cat"
        )
        if started.returncode == 0:
            started = self.tmux("respawn-pane", "-k", "-t", "bench", "-c", str(cwd), command)
        self.t0 = time.monotonic() if started.returncode == 0 else self.t0
        if started.returncode != 0:
            self.close()
            raise RuntimeError(f"tmux: {started.stderr.strip()}")
        self.pid = int(self.tmux("display", "-p", "-t", "bench", "#{pane_pid}").stdout.strip())
        self.started = scan().get(self.pid, (0, ""))[1]

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = ["tmux", "-L", self.server, "-f", os.devnull, *args]
        return subprocess.run(command, capture_output=True, text=True)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "bench").stdout

    def tree(self) -> list[int]:
        """The agent's processes: the pane's, its descendants, and those that carry the tag of
        this launch with theirs (a server the agent started detached, as Codex's app server,
        is no descendant of the pane, and outlives it)."""
        table = scan()
        children: dict[int, list[int]] = {}
        roots = [self.pid] if table.get(self.pid, (0, ""))[1] == self.started else []
        for pid, (ppid, started) in table.items():
            children.setdefault(ppid, []).append(pid)
            known = self.known.get(pid)
            if known is None or known[0] != started:
                known = self.known[pid] = (started, carries(pid, self.tag))
            if known[1]:
                roots.append(pid)
        found: set[int] = set()
        while roots:
            pid = roots.pop()
            if pid not in found:
                found.add(pid)
                roots += children.get(pid, [])
        return sorted(found)

    def cpu(self) -> float:
        return cpu_of(self.tree())

    def rss(self) -> float:
        return rss_of(self.tree())

    def wait(
        self,
        text: str,
        timeout: float,
        interval: float = POLL,
        samples: list[tuple[float, float]] | None = None,
        progress: Path | None = None,
    ) -> float:
        """The monotonic time `text` was first seen on screen; CPU samples on the way when a
        list is given. Fails after `timeout`, or after 30 s without a new line in `progress`."""
        deadline = time.monotonic() + timeout
        moved, size = time.monotonic(), -1
        while True:
            now = time.monotonic()
            if samples is not None:
                samples.append((now, self.cpu()))
            screen = self.screen()
            if text in screen:
                return now
            if progress is not None and progress.exists():
                grown = progress.stat().st_size
                if grown != size:
                    moved, size = now, grown
                elif now - moved > 30:
                    raise RuntimeError(f"no new request for 30 s\n{screen.rstrip()}")
            if now > deadline:
                raise NotSeen(f"{text!r} not on screen after {timeout:.0f} s\n{screen.rstrip()}")
            time.sleep(interval)

    def send(self, text: str) -> None:
        """Type `text`, then Enter apart (a burst ending in Enter may be taken as a paste)."""
        self.tmux("send-keys", "-t", "bench", "-l", text)
        time.sleep(0.3)
        self.tmux("send-keys", "-t", "bench", "Enter")

    def close(self) -> None:
        self.tmux("kill-server")
        folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (folder / self.server).unlink(missing_ok=True)
        time.sleep(0.2)
        for pid in self.tree() if self.started else []:  # what the hang-up left running
            try:
                os.kill(pid, 9)
            except OSError:
                pass


# -- the agents --------------------------------------------------------------------------------


@dataclass
class Launch:
    base_url: str
    home: Path
    work: Path


@dataclass
class Agent:
    key: str
    label: str
    argv: Callable[[Launch], list[str]]
    ready: str  # on screen once the prompt takes input
    setup: Callable[[Launch], dict[str, str]] = lambda launch: {}  # files written; more env
    turn: str | None = None  # why it cannot make the turn's calls, if it cannot
    install: Callable[[bool], str | None] = lambda again: None  # why it is not installed
    peer: bool = True
    tools: bool = True  # its requests declare tools: one that declares none is a side request


BASE_ENV = {"TERM": "xterm-256color", "LANG": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin"}


def mm_setup(launch: Launch) -> dict[str, str]:
    config = launch.home / ".config" / "mm"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"maxTurns: {CALLS + 20}\n")
    return {"PYTHONPATH": str(ROOT)}


MM = Agent(
    "mm",
    "mm",
    lambda launch: [
        sys.executable,
        "-m",
        "mm_tui.cli",
        "--base-url",
        launch.base_url,
        "--model",
        MODEL,
        "--yolo",
    ],
    "Type a request",
    mm_setup,
    peer=False,
)
MINIMAL = Agent(
    "minimal",
    "minimal client (floor)",
    lambda launch: [sys.executable, os.path.abspath(__file__), "--minimal", launch.base_url],
    "minimal>",
    lambda launch: {"PYTHONPATH": str(Path(__file__).resolve().parent)},
    peer=False,
)


# -- a run -------------------------------------------------------------------------------------


@dataclass
class Result:
    figures: dict[str, float] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)  # figure (or "all") -> why it is missing
    lower: set[str] = field(default_factory=set)  # figures that are lower bounds
    failed: list[str] = field(default_factory=list)


def cpu_between(samples: list[tuple[float, float]], start: float, end: float) -> float:
    """CPU seconds between two monotonic times, from the first samples at or after each."""
    after = [s for s in samples if s[0] >= start] or samples[-1:]
    a = after[0]
    b = next((s for s in samples if s[0] >= end), samples[-1])
    return b[1] - a[1] if b[0] > a[0] else 0.0


def launch_agent(agent: Agent, tmp: Path, name: str) -> tuple[Pane, ServerProcess, Launch, Path]:
    """The agent started in tmux, with a server of its own; one HOME and working folder for all
    of an agent's launches (its configuration is written again for each server)."""
    folder = tmp / agent.key
    (folder / "home").mkdir(parents=True, exist_ok=True)
    (folder / "work").mkdir(exist_ok=True)
    log = folder / f"{name}.log"
    log.touch()
    sizes = [str(FAST_CHARS), str(PACED_SECONDS), str(int(agent.tools))]
    server = ServerProcess(__file__, CALLS, str(log), *sizes)
    launch = Launch(server.base_url, folder / "home", folder / "work")
    try:
        env = {**BASE_ENV, "HOME": str(launch.home), **agent.setup(launch)}
        pane = Pane(agent.key, agent.argv(launch), env, launch.work)
    except Exception:
        server.close()
        raise
    return pane, server, launch, log


def report_of(server: ServerProcess) -> dict[str, Any]:
    said = server.close().strip().splitlines()
    return json.loads(said[-1]) if said else {}


def run_agent(agent: Agent, tmp: Path) -> Result:
    """Both launches of one agent; what failed is in `failed`, what could not be taken in `why`."""
    result = Result()
    starts: list[float] = []
    if not QUICK:  # a launch not timed: the file cache warmed, first-run set-up done
        pane, server, _, log = launch_agent(agent, tmp, "warm-up")
        try:
            pane.wait(agent.ready, 120)
            time.sleep(SETTLE)
        except Exception as error:
            result.failed.append(f"start-up: {first_line(error)}")
            result.why["all"] = first_line(error)
            detail(error, log)
            return result
        finally:
            pane.close()
            report_of(server)
    # 1. start-up, idle, the paced answer, then the fast one (which may keep an agent busy long
    # after its time is up)
    pane, server, _, log = launch_agent(agent, tmp, f"{agent.key}-streams")
    report: dict[str, Any] = {}
    seen: dict[str, float] = {}
    paced: list[tuple[float, float]] = []
    try:
        starts.append(pane.wait(agent.ready, 90) - pane.t0)
        time.sleep(SETTLE)  # what start-up left to do after the prompt showed
        result.figures["rss_start"] = pane.rss()
        before, t = pane.cpu(), time.monotonic()
        time.sleep(IDLE_SECONDS)
        result.figures["idle"] = (pane.cpu() - before) / (time.monotonic() - t)
        pane.send(PROMPTS["paced"])
        seen["paced"] = pane.wait(ENDS["paced"], PACED_SECONDS + 60, interval=0.1, samples=paced)
        time.sleep(SETTLE / 2)
        pane.send(PROMPTS["fast"])
        try:
            seen["fast"] = pane.wait(ENDS["fast"], FAST_TIMEOUT)
        except NotSeen:  # still drawing it: the time so far is a lower bound
            seen["fast"] = time.monotonic()
            result.lower.add("fast")
            if not agent.peer:
                result.failed.append(f"the fast answer not on screen after {FAST_TIMEOUT:.0f} s")
    except Exception as error:
        result.failed.append(f"streams: {first_line(error)}")
        result.why.setdefault("all", first_line(error))
        detail(error, log)
    finally:
        pane.close()
        report = report_of(server)
    streams = report.get("streams") or {}
    if "fast" in seen and "fast" in streams:
        result.figures["fast"] = seen["fast"] - streams["fast"]["arrived"]
        result.figures["fast_server"] = streams["fast"]["last"] - streams["fast"]["first"]
    if "paced" in seen and "paced" in streams:
        start = streams["paced"]["arrived"]
        result.figures["paced"] = cpu_between(paced, start, seen["paced"]) / (seen["paced"] - start)
    # 2. start-up again, the turn
    if agent.turn:
        result.why["turn"] = agent.turn
    elif starts:
        pane, server, _, log = launch_agent(agent, tmp, f"{agent.key}-turn")
        samples: list[tuple[float, float]] = []
        done = 0.0
        try:
            starts.append(pane.wait(agent.ready, 90) - pane.t0)
            time.sleep(SETTLE / 2)
            pane.send(PROMPTS["calls"])
            done = pane.wait(
                ENDS["calls"], 60 + CALLS * 2, interval=0.25, samples=samples, progress=log
            )
            time.sleep(SETTLE / 4)
            result.figures["rss_after"] = pane.rss()
        except Exception as error:
            result.failed.append(f"turn: {first_line(error)}")
            result.why["turn"] = first_line(error)
            detail(error, log)
        finally:
            pane.close()
            report = report_of(server)
        if done and report.get("results") != CALLS:
            result.failed.append(
                f"turn: {report.get('results')} results of {CALLS} reached the server"
            )
        elif done and report.get("turn"):
            first, last = report["turn"]
            result.figures["turn"] = last - first
            result.figures["per_call"] = cpu_between(samples, first, last) / CALLS
            if report["trips"]:
                result.figures["trip"] = statistics.median(report["trips"])
    if starts:
        result.figures["start"] = statistics.median(starts)
    return result


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def detail(error: BaseException, log: Path) -> None:
    """A failure's screen and the server's last requests, for whoever runs the bench."""
    said = str(error).rstrip().splitlines()
    print(f"    {said[0] if said else error!r}; the end of its screen:", file=sys.stderr)
    for line in said[1:][-12:]:
        print(f"    | {line}", file=sys.stderr)
    lines = log.read_text().splitlines() if log.exists() else []
    for line in lines[-3:]:
        print(f"    request: {line[:300]}", file=sys.stderr)


# -- the table ---------------------------------------------------------------------------------

COLUMNS_OUT = [
    # key, heading, unit, scale, format
    ("start", "start-up", "ms", 1000, "{:.0f}"),
    ("idle", "idle CPU", "% core", 100, "{:.2f}"),
    ("fast", f"{FAST_CHARS // 1000}k chars", "s", 1, "{:.2f}"),
    ("paced", f"{RATE} tok/s", "% core", 100, "{:.1f}"),
    ("turn", f"{CALLS} calls", "s", 1, "{:.1f}"),
    ("per_call", "CPU/call", "ms", 1000, "{:.1f}"),
    ("trip", "round trip", "ms", 1000, "{:.1f}"),
    ("rss_start", "RSS start", "MB", 1, "{:.0f}"),
    ("rss_after", "RSS after", "MB", 1, "{:.0f}"),
]
FIGURE_WHY = {
    "fast": "streams",
    "paced": "streams",
    "idle": "streams",
    "rss_start": "streams",
    "turn": "turn",
    "per_call": "turn",
    "trip": "turn",
    "rss_after": "turn",
}


def table(agents: list[Agent], results: dict[str, Result]) -> None:
    width = 11
    print(f"{'':24}" + "".join(f"{h:>{width}}" for _, h, _, _, _ in COLUMNS_OUT))
    print(f"{'':24}" + "".join(f"{u:>{width}}" for _, _, u, _, _ in COLUMNS_OUT))
    for agent in agents:
        figures = results[agent.key].figures
        lower = results[agent.key].lower
        cells = [
            (">" if key in lower else "") + fmt.format(figures[key] * scale)
            if key in figures
            else "-"
            for key, _, _, scale, fmt in COLUMNS_OUT
        ]
        print(f"{agent.label:24}" + "".join(f"{c:>{width}}" for c in cells))
    ours = results["mm"].figures
    print("mm's ratio to each (mm / the other; below 1: mm takes less):")
    for agent in agents:
        if agent.key == "mm":
            continue
        figures = results[agent.key].figures
        cells = []
        for key, *_ in COLUMNS_OUT:
            if key in ours and key in figures and figures[key] > 0:
                bound = "<" if key in results[agent.key].lower else ""
                cells.append(f"{bound}{ours[key] / figures[key]:.2f}x")
            else:
                cells.append("-")
        print(f"  mm / {agent.label:18}" + "".join(f"{c:>{width}}" for c in cells))


def main() -> int:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    args = sys.argv[1:]
    only = None
    if "--only" in args:
        only = set(args[args.index("--only") + 1].split(","))
    agents = [MM, MINIMAL]
    skipped: dict[str, str] = {}
    if QUICK:
        print("peers skipped in quick mode (nothing is installed or fetched)")
    else:
        agents += PEERS
    if only:
        agents = [a for a in agents if a.key in only or not a.peer]
    run: list[Agent] = []
    for agent in agents:
        why = agent.install("--install" in args) if agent.peer else None
        if why:
            skipped[agent.label] = why
        else:
            run.append(agent)
    results: dict[str, Result] = {}
    tmp = Path(tempfile.mkdtemp(prefix="mm-bench-peers-"))
    try:
        for agent in run:
            print(f"  running {agent.label} ...", file=sys.stderr, flush=True)
            results[agent.key] = run_agent(agent, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shown = [a for a in run if results[a.key].figures]
    print(
        f"mm beside peer agents: tmux {COLUMNS}x{ROWS}, one scripted server on 127.0.0.1; "
        f"{FAST_CHARS:,}-char answer, {RATE} tok/s for {PACED_SECONDS:g} s, {CALLS} calls"
    )
    print(f"machine: {machine()}")
    table(shown, results)
    notes = [
        "start-up: tmux new-session to the prompt on screen (polled every 20 ms), median of the",
        f"2 launches (1 without the turn); idle: the process tree's CPU over {IDLE_SECONDS:.0f} s",
        f"from {SETTLE:g} s after start-up; RSS start: the tree's then, RSS after: after the turn;",
        "chars: request's arrival at the server to the answer's last words on screen;",
        "tok/s: the tree's CPU during that answer; turn: the server's first request to the one",
        "carrying the last result; CPU/call: the tree's CPU over the turn / calls; round trip:",
        "median, last byte of a tool-call reply to the next request's first byte.",
    ]
    for line in notes:
        print(f"  {line}")
    for agent in run:
        result = results[agent.key]
        if "fast_server" in result.figures and agent.key == "mm":
            print(f"  the server wrote the fast answer in {result.figures['fast_server']:.2f} s")
        for what, why in result.why.items():
            print(f"  {agent.label}: no {what if what != 'all' else 'figures'}: {why}")
    for label, why in skipped.items():
        print(f"  {label}: skipped: {why}")
    mm = results.get("mm")
    if mm is None or mm.failed:
        print(f"mm FAILED: {'; '.join(mm.failed) if mm else 'not run'}")
        return 1
    for agent in run:
        if agent.key != "mm" and results[agent.key].failed:
            print(f"  {agent.label} failed: {'; '.join(results[agent.key].failed)}")
    return 0


# -- the peers ---------------------------------------------------------------------------------


def _first_error(output: str) -> str:
    """The line of an installer's output that says what went wrong."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("ERROR", "npm error", "npm ERR", "error:")):
            return line
    return lines[-1] if lines else "no output"


def _python_at_least(version: tuple[int, int]) -> str | None:
    """A Python interpreter of at least `version`: this one, one on PATH, or one of pyenv's."""
    if sys.version_info[:2] >= version:
        return sys.executable
    names = [f"python3.{minor}" for minor in range(version[1], 20)]
    candidates = [p for p in (shutil.which(n) for n in names) if p]
    pyenv = Path.home() / ".pyenv" / "versions"
    if pyenv.is_dir():
        candidates += sorted(str(p / "bin" / "python3") for p in pyenv.iterdir())
    for candidate in candidates:
        try:
            said = subprocess.run(
                [candidate, "-c", "import sys; print(*sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout.split()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if len(said) == 2 and (int(said[0]), int(said[1])) >= version:
            return candidate
    return None


def _run_installer(command: list[str], what: str) -> str | None:
    print(f"  installing {what} ...", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{what} did not install: {first_line(error)}"
    if done.returncode != 0:
        return f"{what} did not install: {_first_error(done.stderr + done.stdout)}"
    return None


def _runs(exe: Path, what: str) -> str | None:
    """Why `exe --version` fails (a package installed without its binary), or None."""
    try:
        done = subprocess.run(
            [str(exe), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**BASE_ENV, "HOME": tempfile.gettempdir()},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{what} does not run: {first_line(error)}"
    if done.returncode != 0:
        return f"{what} does not run: {_first_error(done.stderr + done.stdout)}"
    return None


def pypi(package: str, folder: str, exe: str, python: tuple[int, int] = (3, 10)) -> Any:
    """An installer for a PyPI peer: a venv of its own under CACHE (made when missing, or
    upgraded when asked), with a Python of at least `python`; returns why it cannot run."""

    def install(again: bool) -> str | None:
        venv = CACHE / folder
        binary = venv / "bin" / exe
        if again or not binary.exists():
            interpreter = _python_at_least(python)
            if interpreter is None:
                return f"{package} needs Python {python[0]}.{python[1]} or newer; none found"
            if not (venv / "bin" / "python").exists():
                why = _run_installer(
                    [interpreter, "-m", "venv", str(venv)], f"a venv for {package}"
                )
                if why:
                    return why
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-U", package]
            why = _run_installer(pip, package)
            if why:
                return why
        return _runs(binary, package)

    return install


def npm(package: str, exe: str) -> Any:
    """An installer for an npm peer, into one prefix under CACHE; returns why it cannot run."""

    def install(again: bool) -> str | None:
        prefix = CACHE / "npm"
        binary = prefix / "node_modules" / ".bin" / exe
        if again or not binary.exists():
            if shutil.which("npm") is None:
                return f"{package} needs npm, which is not on PATH"
            command = ["npm", "install", "--prefix", str(prefix), "--no-fund", "--no-audit"]
            why = _run_installer([*command, f"{package}@latest"], package)
            if why:
                return why
        return _runs(binary, package)

    return install


def vibe_setup(launch: Launch) -> dict[str, str]:
    """mistral-vibe's config.toml (in ~/.vibe): the server as a provider, no update checks,
    no telemetry."""
    folder = launch.home / ".vibe"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(
        'active_model = "bench"\n'
        "enable_update_checks = false\nenable_auto_update = false\nenable_telemetry = false\n"
        "disable_welcome_banner_animation = true\n\n"
        f'[[providers]]\nname = "bench"\napi_base = "{launch.base_url}"\napi_key_env_var = ""\n\n'
        f'[[models]]\nname = "{MODEL}"\nprovider = "bench"\nalias = "bench"\n'
    )
    return {}


def opencode_setup(launch: Launch) -> dict[str, str]:
    """OpenCode's opencode.json: the server as an openai-compatible provider, every tool allowed;
    no fetch of the models.dev list (which waits on the network at every start), no updates."""
    folder = launch.home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Bench",
        "options": {"baseURL": launch.base_url, "apiKey": "bench"},
        "models": {MODEL: {"name": "Bench model"}},
    }
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"bench": provider},
        "model": f"bench/{MODEL}",
        "small_model": f"bench/{MODEL}",
        "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
        "autoupdate": False,
        "share": "disabled",
    }
    (folder / "opencode.json").write_text(json.dumps(config, indent=2))
    return {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}


def codex_setup(launch: Launch) -> dict[str, str]:
    """Codex's config.toml: the server as a provider on the Responses API (Codex has dropped
    chat completions: the server speaks both), the working folder trusted, no update check."""
    folder = launch.home / ".codex"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "bench"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.bench]\nname = "Bench"\nbase_url = "{launch.base_url}"\n'
        'wire_api = "responses"\n\n'
        f'[projects."{launch.work}"]\ntrust_level = "trusted"\n'
    )
    return {}


def aider_argv(launch: Launch) -> list[str]:
    return [
        str(CACHE / "aider" / "bin" / "aider"),
        *("--model", f"openai/{MODEL}", "--openai-api-base", launch.base_url),
        *("--openai-api-key", "bench", "--chat-mode", "ask", "--map-tokens", "0"),
        *("--no-git", "--no-check-update", "--no-show-release-notes", "--analytics-disable"),
        *("--no-show-model-warnings", "--yes-always"),
    ]


PEERS: list[Agent] = [
    Agent(
        "vibe",
        "mistral-vibe",
        lambda launch: [str(CACHE / "vibe" / "bin" / "vibe"), "--trust", "--yolo"],
        "Type /help",
        vibe_setup,
        install=pypi("mistral-vibe", "vibe", "vibe", (3, 12)),
    ),
    Agent(
        "aider",
        "aider",
        aider_argv,
        "ask>",
        lambda launch: {"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        turn="aider declares no tools: it runs no command a model asks for",
        install=pypi("aider-chat", "aider", "aider"),
        tools=False,
    ),
    Agent(
        "opencode",
        "OpenCode",
        lambda launch: [str(CACHE / "npm" / "node_modules" / ".bin" / "opencode")],
        "Ask anything",
        opencode_setup,
        install=npm("opencode-ai", "opencode"),
    ),
    Agent(
        "codex",
        "Codex",
        lambda launch: [
            str(CACHE / "npm" / "node_modules" / ".bin" / "codex"),
            "--dangerously-bypass-approvals-and-sandbox",
        ],
        "for shortcuts",
        codex_setup,
        install=npm("@openai/codex", "codex"),
    ),
]


if __name__ == "__main__":
    if len(sys.argv) > 6 and sys.argv[1] == "--serve":
        serve(sys.argv[2:7])
    elif len(sys.argv) > 2 and sys.argv[1] == "--minimal":
        minimal(sys.argv[2])
    else:
        sys.exit(main())
