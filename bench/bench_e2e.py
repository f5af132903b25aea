"""End to end: mm's window on a real model server, against a bare client of the same server in the
same run. The server is the embedded one of the end-to-end tests: llama-cpp-python's server on
SmolLM2-135M-Instruct (tests/e2e/llama_server.py). This benchmark starts it itself, on a free port,
and stops it at the end, so it can stay in `make bench`'s loop; when the e2e virtual environment is
missing (`make e2e` builds it, about 8 minutes) it says so and skips.

Between the clients and the server runs a TCP relay, in a process of its own, that stamps every
read from the server's socket with the system's monotonic clock (CLOCK_MONOTONIC, which
`time.perf_counter` reads in every process alike) before passing the bytes on. A token "leaves the
server" when the relay's read that completes its SSE event returns: as close to the server's own
write as another process can see it (loopback adds microseconds). The relay is a separate process
so that its stamps never wait for the app's GIL.

Every round sends the same request: mm's own, captured at the relay in the warm-up round and
replayed byte for byte by the bare client. At temperature 0 the server generates the same tokens.

1. Tokens per second. llama.cpp sends one SSE event per token.
   - floor, the server's own rate: a bare httpx streaming client that splits lines and parses each
     event; (tokens - 1) / (last token - first token), stamped at the relay.
   - mm received: the same over the times the engine emitted each TextDelta (`MMApp.emit`).
   - mm shows: the same over the times each token was first on screen (below).
   Also printed: the rate the server sent at during mm's rounds (relay stamps). The app and the
   server share two cores, so what mm costs shows there.
2. Latency, from a token leaving the server to its appearing on screen. "On screen": the end of
   the first compositor refresh that painted the transcript view, with the end of the answer in
   its visible rows, after the view had rendered the answer with that token in it (the view's
   `_render_item` of the answer records how many characters it drew; a token is on screen once that
   many characters reach past it). Floor: the bare client's own latency, from
   the relay's read to the client's parse of the same event: what any client pays for transport
   and parsing. mm's engine reads a server that trickles at most every 80 ms
   (`engine/paced_reads.py`), and the window draws what a read brought in the same wake-up of
   its event loop (`window/transcript/view.py`, FRAME_SLACK): a token waits for the next read.
3. CPU, of one core, while the answer streams (from the first token to the last): mm's process
   (the engine, its HTTP client and the window) and the bare client's, and the same per token.
   Also the wake-ups of each one's event loop a second: on a virtual machine each costs a few
   hundred microseconds, which is most of what a trickled answer costs.

Every round's figures are printed: on a shared two-core machine the server's own rate varies
from round to round, and what mm's process uses the server cannot (its two threads take both
cores).

Goals: mm at most 5% of a core while the answer streams; the tokens per second on
screen at least 0.95x the bare client's. Token to screen (an earlier goal): median at most 50 ms
and 95th percentile at most 100 ms; the paced reads trade some of it for CPU (a token waits up
to 80 ms for its read, about 40 ms on average). The answer is long: SmolLM2 at
temperature 0 writes a numbered list of about 500 tokens for PROMPT.

Set MM_BENCH_CODE to a folder holding another copy of the mm_tui package to measure that copy
(to compare a change with the code before it, alternating).

Run: .venv/bin/python bench/bench_e2e.py [rounds, 3 by default]  (--quick: 1 round, after the
     warm-up one; skipped as above without the e2e environment)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
if os.environ.get("MM_BENCH_CODE"):  # a folder holding another copy of mm_tui, to compare
    sys.path.insert(0, os.environ["MM_BENCH_CODE"])

from support.loop_sleeps import Sleeps  # noqa: E402
from window_common import SIZE, machine, median, verdict  # noqa: E402

try:
    from mm_tui.engine.probe_findings import PROBE_HEADER
except ImportError:  # an older mm, compared through MM_BENCH_CODE, sends no probe
    PROBE_HEADER = "X-MM-Probe"

PROMPT = "Explain in detail how a web browser loads a page, step by step, in about 600 words."
GOAL_RATE_RATIO = 0.95
GOAL_CPU = 0.05
GOAL_MEDIAN = 0.050
GOAL_P95 = 0.100
ROUNDS = 3

# --------------------------------------------------------------------------- the relay process


def relay_main(listen_port: int, upstream_port: int, log_dir: str) -> None:
    """Accept connections on 127.0.0.1:listen_port and pass them on to upstream_port. For each
    connection, `<n>.up` holds what the client sent and `<n>.down` every read from the server as
    (perf_counter: double, length: uint32, bytes)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", listen_port))
    listener.listen(16)
    print("ready", flush=True)
    count = 0

    def pump(src: socket.socket, dst: socket.socket, log_path: str, stamped: bool) -> None:
        with open(log_path, "wb", buffering=0) as log:
            try:
                while True:
                    data = src.recv(65536)
                    now = time.perf_counter()
                    if not data:
                        break
                    # Logged before it is passed on, so that the log is whole once the client
                    # has its answer (a write to a file costs microseconds).
                    log.write(struct.pack("<dI", now, len(data)) + data if stamped else data)
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

    while True:
        client, _ = listener.accept()
        upstream = socket.create_connection(("127.0.0.1", upstream_port))
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        base = os.path.join(log_dir, str(count))
        count += 1
        threading.Thread(
            target=pump, args=(client, upstream, base + ".up", False), daemon=True
        ).start()
        threading.Thread(
            target=pump, args=(upstream, client, base + ".down", True), daemon=True
        ).start()


class Relay:
    def __init__(self, upstream_port: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="mm-bench-relay-"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--relay",
                str(self.port),
                str(upstream_port),
                str(self.dir),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"
        self.seen = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def completions(self) -> list[tuple[bytes, list[tuple[float, str]]]]:
        """The chat-completion exchanges since the last call: (request body, [(time, token)]).
        The model probe's requests (mm's first use of the model: engine/model_probe.py, marked
        with its header) are not the person's: left out, or the bare client would replay one."""
        out = []
        while (self.dir / f"{self.seen}.up").exists():
            up = (self.dir / f"{self.seen}.up").read_bytes()
            down = (self.dir / f"{self.seen}.down").read_bytes()
            self.seen += 1
            head, _, body = up.partition(b"\r\n\r\n")
            if b"/chat/completions" not in head.split(b"\r\n", 1)[0]:
                continue
            if PROBE_MARK in head.lower():
                continue
            out.append((body, tokens_of(down)))
        return out

    def close(self) -> None:
        """The relay stops, and its folder of exchanges goes with it."""
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


EVENT = re.compile(rb"data: (\{[^\r\n]*\})\r?\n")
PROBE_MARK = b"\r\n" + PROBE_HEADER.lower().encode() + b":"  # a header line of the probe's


def tokens_of(down: bytes) -> list[tuple[float, str]]:
    """(relay time, text) of each SSE event with content, from a stamped log of reads."""
    stamps: list[tuple[int, float]] = []  # (end offset of the read, its time)
    data = bytearray()
    at = 0
    while at < len(down):
        when, size = struct.unpack_from("<dI", down, at)
        at += 12
        data += down[at : at + size]
        at += size
        stamps.append((len(data), when))
    out = []
    read = 0
    for match in EVENT.finditer(bytes(data)):
        while stamps[read][0] < match.end():
            read += 1
        event = json.loads(match.group(1))
        choices = event.get("choices") or [{}]
        text = (choices[0].get("delta") or {}).get("content")
        if text:
            out.append((stamps[read][1], text))
    return out


# --------------------------------------------------------------------------- the bare client


async def bare_round(base_url: str, body: bytes) -> tuple[list[float], float, float]:
    """Send `body` as it is; return the time each content event was parsed, the share of a
    core this process used from the first to the last of them, and its wake-ups a second."""
    import httpx

    parsed: list[float] = []
    cpu: list[tuple[float, float]] = []
    sleeps = Sleeps()
    counts: list[int] = []
    async with httpx.AsyncClient(timeout=None, trust_env=False) as client:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        async with client.stream(
            "POST", base_url + "/chat/completions", content=body, headers=headers
        ) as resp:
            async for line in resp.aiter_lines():
                if line.startswith("data: {"):
                    event = json.loads(line[6:])
                    choices = event.get("choices") or [{}]
                    if (choices[0].get("delta") or {}).get("content"):
                        now = time.perf_counter()
                        parsed.append(now)
                        cpu.append((now, time.process_time()))
                        counts.append(sleeps.count)
    sleeps.close()
    return parsed, stream_share(cpu), wakeups(parsed, counts)


def wakeups(times: list[float], counts: list[int]) -> float:
    """Wake-ups a second between the first and the last of `times` (`counts` taken then)."""
    return (counts[-1] - counts[0]) / (times[-1] - times[0]) if len(times) > 1 else float("nan")


def stream_share(stamps: list[tuple[float, float]]) -> float:
    """The share of a core used between the first and the last (wall time, process time)."""
    if len(stamps) < 2:
        return float("nan")
    (wall0, cpu0), (wall1, cpu1) = stamps[0], stamps[-1]
    return (cpu1 - cpu0) / (wall1 - wall0)


# --------------------------------------------------------------------------- mm's window


async def mm_round(
    base_url: str, model: str, folder: Path
) -> tuple[list[float], list[Any], float, float, str]:
    """One turn of the real app on the real server. Returns the time the engine emitted each
    TextDelta (one may hold several tokens: those of one read), (time, characters of the answer
    on screen) after each compositor refresh that painted the answer's end, the share of a core
    this process used and its wake-ups a second (first delta to last), and the answer."""
    from mm_tui.config import Settings
    from mm_tui.core.events import TextDelta, TurnEnded
    from mm_tui.startup import start
    from mm_tui.window.app import MMApp
    from mm_tui.window.transcript.store import AnswerItem

    settings = Settings(
        baseUrl=base_url,
        model=model,
        temperature=0,
        bashTool=False,
        editTools=False,
        sessionsDir=str(folder / "sessions"),
    )

    async def boot() -> Any:
        return await start(settings, folder)

    app = MMApp(boot)
    cpu: list[tuple[float, float]] = []  # (wall time, process time) at each TextDelta applied
    received: list[float] = []
    counts: list[int] = []
    answer: list[str] = []
    paints: list[tuple[float, int]] = []
    drawn = 0  # characters of the answer in the view's last rendering
    painted = 0  # calls of the view's render_line

    async with app.run_test(size=SIZE) as pilot:
        while app.engine is None:
            await pilot.pause(0.05)
        transcript, view, screen = app.main.transcript, app.main.view, app.screen
        emit, apply = app.main.emit, transcript.apply
        render, render_line = view._render_item, view.render_line
        refresh = screen._compositor_refresh

        sleeps = Sleeps()

        def emitted(event: Any) -> None:
            if isinstance(event, TextDelta) and event.text:
                now = time.perf_counter()
                received.append(now)
                answer.append(event.text)
                cpu.append((now, time.process_time()))
                counts.append(sleeps.count)
            emit(event)

        def rendered(index: int) -> Any:
            nonlocal drawn
            lines = render(index)
            item = transcript.items[index]
            if isinstance(item, AnswerItem):
                drawn = len(item.text)
            return lines

        def paint_line(y: int) -> Any:
            nonlocal painted
            painted += 1
            return render_line(y)

        def bottom_in_view() -> bool:
            """The end of the answer is within the view's visible rows (the view follows the
            bottom one refresh after the answer grows: until then the new lines are below)."""
            answers = [i for i, it in enumerate(transcript.items) if isinstance(it, AnswerItem)]
            rows = view.item_rows(transcript.items[answers[-1]]) if answers else range(0)
            if not rows:
                return False
            return int(view.scroll_y) + view.scrollable_content_region.height >= rows.stop

        def compositor_refresh() -> None:
            before = painted
            refresh()
            if painted != before and (not paints or drawn > paints[-1][1]) and bottom_in_view():
                paints.append((time.perf_counter(), drawn))

        view._render_item = rendered  # type: ignore[method-assign]
        view.render_line = paint_line  # type: ignore[method-assign]
        screen._compositor_refresh = compositor_refresh  # type: ignore[method-assign]
        ended = asyncio.Event()

        def applied(event: Any) -> Any:
            changed = apply(event)
            if isinstance(event, TurnEnded):
                ended.set()
            return changed

        app.main.emit = emitted  # type: ignore[method-assign]
        transcript.apply = applied  # type: ignore[method-assign]
        app.main.submit(PROMPT)
        # An event, not a polling loop: Pilot.pause forces a screen update at every call, which
        # would paint frames the app would not paint by itself (and cost CPU).
        await ended.wait()
        await asyncio.sleep(0.3)  # the last frames
        sleeps.close()
    return received, paints, stream_share(cpu), wakeups(received, counts), "".join(answer)


def on_screen(tokens: list[tuple[float, str]], paints: list[tuple[float, int]]) -> list[float]:
    """The time each token was first on screen: the first paint showing as many characters as
    the answer had once that token was in it."""
    out = []
    chars = 0
    at = 0
    for _, text in tokens:
        chars += len(text)
        while at < len(paints) and paints[at][1] < chars:
            at += 1
        if at == len(paints):
            raise AssertionError(f"a token never reached the screen ({chars} characters)")
        out.append(paints[at][0])
    return out


# --------------------------------------------------------------------------- figures


def rate(times: list[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else float("nan")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def run(rounds: int) -> int:
    from llama_server import LlamaServer, ServerUnavailable

    # A folder whose name never changes: it is in mm's system prompt, so in what the model
    # answers (and so in the number of tokens a round streams).
    folder = Path(tempfile.gettempdir()) / "mm-bench-e2e"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    server = LlamaServer(log=folder / "llama-server.log")
    try:
        server.start()
    except ServerUnavailable as exc:
        print(f"skipped: {exc}")
        return 0
    assert server.port is not None  # started
    relay = Relay(server.port)
    try:
        print(
            f"llama.cpp server (SmolLM2-135M-Instruct Q4_1, 2 threads) ready in "
            f"{server.ready_seconds:.1f}s; {machine()}"
        )
        await mm_round(relay.base_url, server.model_id, folder)  # warm-up: mm's request
        (body, warm), *_ = relay.completions()
        bare: dict[str, list[Any]] = {
            "server": [],
            "client": [],
            "latency": [],
            "tokens": [],
            "cpu": [],
            "wakeups": [],
        }
        mm: dict[str, list[Any]] = {
            "server": [],
            "received": [],
            "shown": [],
            "latency": [],
            "cpu": [],
            "tokens": [],
            "wakeups": [],
        }
        for _ in range(rounds):
            parsed, share, woke = await bare_round(relay.base_url, body)
            ((_, sent),) = relay.completions()
            assert len(parsed) == len(sent), (len(parsed), len(sent))
            bare["server"].append(rate([t for t, _ in sent]))
            bare["client"].append(rate(parsed))
            bare["latency"] += [p - t for p, (t, _) in zip(parsed, sent, strict=True)]
            bare["tokens"].append(len(sent))
            bare["cpu"].append(share)
            bare["wakeups"].append(woke)

            received, paints, share, woke, text = await mm_round(
                relay.base_url, server.model_id, folder
            )
            ((_, sent),) = relay.completions()
            assert text == "".join(token for _, token in sent), "mm lost or changed tokens"
            times = [t for t, _ in sent]
            shown = on_screen(sent, paints)
            mm["cpu"].append(share)
            mm["wakeups"].append(woke)
            mm["tokens"].append(len(sent))
            mm["server"].append(rate(times))
            # a delta may hold a read's tokens: the tokens over the time from the first to the last
            mm["received"].append((len(sent) - 1) / (received[-1] - received[0]))
            mm["shown"].append(rate(shown))
            mm["latency"] += [s - t for s, t in zip(shown, times, strict=True)]
    finally:
        relay.close()
        server.stop()
    report(rounds, bare, mm)
    return 0


def report(rounds: int, bare: dict[str, list[Any]], mm: dict[str, list[Any]]) -> None:
    client = median(bare["client"])
    shown = median(mm["shown"])
    ratio = shown / client
    tokens = sorted(set(bare["tokens"] + mm["tokens"]))
    cpu, bare_cpu = median(mm["cpu"]), median(bare["cpu"])
    print(
        f"\n1. mm against a bare client of the same server ({rounds} rounds of "
        f"{'/'.join(map(str, tokens))} tokens, the same request each time; medians)"
    )
    print(
        f"   CPU while the answer streams (first token to last, share of one core): "
        f"mm {cpu:.1%}, the bare client {bare_cpu:.1%}"
    )
    print(f"   goal mm ≤ {GOAL_CPU:.0%} of a core: {verdict(cpu <= GOAL_CPU)}")
    per_token = median([c / r * 1000 for c, r in zip(mm["cpu"], mm["received"], strict=True)])
    bare_per_token = median(
        [c / r * 1000 for c, r in zip(bare["cpu"], bare["client"], strict=True)]
    )
    print(
        f"   CPU per token (steadier than the share on a shared machine, where the server's rate "
        f"varies): mm {per_token:.2f} ms, the bare client {bare_per_token:.2f} ms"
    )
    print(
        f"   event-loop wake-ups a second while it streams: mm {median(mm['wakeups']):.1f}, "
        f"the bare client {median(bare['wakeups']):.1f}"
    )
    print(
        f"   tokens per second: bare client {client:.1f}, mm on screen {shown:.1f}: "
        f"{ratio:.3f}x (goal ≥ {GOAL_RATE_RATIO}x): {verdict(ratio >= GOAL_RATE_RATIO)}"
    )
    print("   round by round (bare client | mm):")
    for i in range(rounds):
        print(
            f"     {i + 1}: CPU {bare['cpu'][i]:5.1%} | {mm['cpu'][i]:5.1%}   "
            f"tokens/s parsed {bare['client'][i]:6.1f} | on screen {mm['shown'][i]:6.1f} "
            f"({mm['shown'][i] / bare['client'][i]:.3f}x)   server sent at "
            f"{bare['server'][i]:6.1f} | {mm['server'][i]:6.1f}"
        )
    print(
        f"   mm received (TextDelta emitted by the engine) {median(mm['received']):.1f} tokens/s; "
        f"the server runs 2 threads on {os.cpu_count()} cores, so the CPU mm uses slows the "
        f"server itself"
    )
    same = median([a / b for a, b in zip(mm["shown"], mm["server"], strict=True)])
    print(
        f"   ratio shown / the server's rate in the same rounds: {same:.3f} (what mm loses "
        f"between its socket and the screen, apart from the CPU it takes from the server)"
    )
    lat, floor = mm["latency"], bare["latency"]
    print(f"\n2. token leaving the server → on screen ({len(lat)} tokens)")
    print(f"   floor, bare client's parse: median {ms(median(floor))}, p95 {ms(p95(floor))}")
    print(
        f"   mm's window, on screen:     median {ms(median(lat))}, p95 {ms(p95(lat))}, "
        f"max {ms(max(lat))}"
    )
    print(f"   ratio of medians: {median(lat) / median(floor):.0f}x the transport floor")
    ok = median(lat) <= GOAL_MEDIAN and p95(lat) <= GOAL_P95
    print(f"   goal median ≤ {ms(GOAL_MEDIAN)}, p95 ≤ {ms(GOAL_P95)}: {verdict(ok)}")


def main() -> int:
    from private_home import private_home

    if sys.argv[1:2] == ["--relay"]:
        relay_main(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
        return 0
    private_home()  # a home of its own: none of the person's is read or written
    if "--quick" in sys.argv:
        rounds = 1
    else:
        rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    if os.environ.get("MM_BENCH_CODE"):
        import mm_tui

        print(f"mm_tui from {Path(mm_tui.__file__).parent}")
    return asyncio.run(run(rounds))


if __name__ == "__main__":
    sys.exit(main())
