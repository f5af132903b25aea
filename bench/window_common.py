"""Helpers shared by the window-mode benchmarks (bench_window_*.py); nothing to run here.

- `mm_app()`: MMApp with a boot that never returns, so the window stays as it is after its first
  frame and only what a benchmark feeds it reaches the transcript.
- `FrameProbe`: notices the frames in which a widget was painted, so that a benchmark can time
  "until it is on screen" rather than "until the data changed". It wraps, on the instances only,
  the screen's compositor refresh and the widget's `render_line` (or `render_lines`).
- `answer_markdown()`: a deterministic, realistic Markdown answer (headings, paragraphs, bullet
  and numbered lists, code blocks, quotes, inline code and emphasis).
- `rss_mb()`, `median()`, `verdict()`, `machine()`.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZE = (100, 30)  # the terminal of every headless run


def rss_mb() -> float:
    """Resident memory of this process, in MB (VmRSS)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class ServerProcess:
    """A bench's model server in a process of its own, `script --serve calls`, so that serving
    takes no time from the client measured: it prints its base URL first, serves until its stdin
    closes, then may print what it measured, which `close` returns. `more` follows the count on
    the child's command line."""

    def __init__(self, script: str, calls: int, *more: str) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(script), "--serve", str(calls), *more],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError(f"{script}: the model server did not start")

    def close(self) -> str:
        import subprocess

        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        said = self.proc.stdout.read()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return said


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def verdict(ok: bool) -> str:
    return "goal met" if ok else "goal NOT met"


def machine() -> str:
    """The machine's load, printed with the figures: this is a shared machine."""
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {one:.2f} (1 min), {five:.2f} (5 min)"


async def never() -> Any:
    """A boot that never returns: the app stays in its first state."""
    await asyncio.Event().wait()


def mm_app() -> Any:
    from mm_tui.window.app import MMApp

    return MMApp(never)


def settle_waiters(
    waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]], now: float
) -> list[tuple[Callable[[], bool], asyncio.Future[float]]]:
    """Resolve, with `now`, the waiters whose predicate holds; the others wait on."""
    keep = []
    for predicate, future in waiters:
        if future.done():
            continue
        if predicate():
            future.set_result(now)
        else:
            keep.append((predicate, future))
    return keep


class FrameProbe:
    """Times the frames in which `widget` was painted.

    `await probe.painted(predicate)` returns the perf_counter time at the end of the first
    compositor refresh that painted at least one line of the widget while `predicate()` held
    (the predicate is checked right after that refresh, before anything else can run)."""

    def __init__(self, screen: Any, widget: Any, method: str = "render_line") -> None:
        self.frames = 0  # compositor refreshes
        self.widget_frames = 0  # of which painted the widget
        self.widget_lines = 0
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]] = []
        original_refresh = screen._compositor_refresh
        original_paint = getattr(widget, method)

        def paint(*args: Any, **kwargs: Any) -> Any:
            self.widget_lines += 1
            return original_paint(*args, **kwargs)

        def refresh() -> None:
            before = self.widget_lines
            original_refresh()
            self.frames += 1
            if self.widget_lines == before:
                return
            self.widget_frames += 1
            self._waiters = settle_waiters(self._waiters, time.perf_counter())

        setattr(widget, method, paint)
        screen._compositor_refresh = refresh

    async def painted(self, predicate: Callable[[], bool] = lambda: True, timeout: float = 60.0):
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        return await asyncio.wait_for(future, timeout)


# -- a realistic answer --------------------------------------------------------------------------

_WORDS = (
    "the engine streams events to the window which renders each item once per width and keeps "
    "its lines in a cache so that scrolling back costs only the visible lines while a tool call "
    "runs its spinner turns and the elapsed time grows at the right of its line until the result "
    "arrives and folds beneath it"
).split()

_CODE = [
    "def render(item, width):",
    '    """Lines of one item at a width."""',
    "    lines = cache.get((item.id, item.version, width))",
    "    if lines is None:",
    "        lines = cache[item.id, item.version, width] = draw(item, width)",
    "    return lines",
    "",
    "for index, item in enumerate(items):",
    "    offsets.append(total)",
    "    total += len(render(item, width))",
]


def _sentence(n: int, k: int) -> str:
    words = [_WORDS[(n * 7 + i * 3) % len(_WORDS)] for i in range(k)]
    if n % 3 == 0:
        words[2] = f"`{words[2]}()`"
    if n % 4 == 1:
        words[4] = f"**{words[4]}**"
    if n % 5 == 2:
        words[1] = f"*{words[1]}*"
    return " ".join(words).capitalize() + "."


def _section(n: int) -> str:
    parts = [f"## Step {n + 1}: {_WORDS[n % len(_WORDS)]} {_WORDS[(n + 5) % len(_WORDS)]}"]
    parts.append(" ".join(_sentence(n * 5 + i, 12 + i % 5) for i in range(4)))
    parts.append("\n".join(f"- {_sentence(n * 3 + i, 6 + i % 4)}" for i in range(4)))
    code = _CODE[n % 3 :] + [f"print({n})"]
    lang = "python" if n % 2 == 0 else "text"
    parts.append(f"```{lang}\n" + "\n".join(code) + "\n```")
    parts.append(" ".join(_sentence(n * 11 + i, 10 + i % 7) for i in range(3)))
    if n % 2:
        parts.append("\n".join(f"{i + 1}. {_sentence(n + i, 5 + i)}" for i in range(3)))
    if n % 3 == 2:
        parts.append("> " + _sentence(n * 13, 14))
    return "\n\n".join(parts)


def answer_markdown(chars: int, start: int = 0) -> str:
    """About `chars` characters of Markdown, cut at the end of a section."""
    out: list[str] = []
    size = 0
    n = start
    while size < chars:
        section = _section(n)
        out.append(section)
        size += len(section) + 2
        n += 1
    return "\n\n".join(out) + "\n"


def pieces(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


if __name__ == "__main__":
    print("helpers for bench/bench_window_*.py; run those")
