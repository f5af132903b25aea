"""Long sessions: 20, 2,000 and 10,000 tool lines (finished, folded) in window mode, the last
two with 200 answers interleaved, each size in a fresh process, headless (App.run_test, 100x30).

For each size:
- load: the items are built in the store (`app.main.transcript`) and handed to the view
  (`update_items`), timed until the view has painted the end of the transcript;
- append: one more tool line through the app, as the engine sends it (ToolCallStarted then
  ToolCallFinished posted as EngineEvents), timed until a frame has painted it; wall time and
  the process time spent meanwhile, medians of 15;
- top / end: `action_scroll_home` then `action_scroll_end` (the Home and End keys), each timed
  until a frame has painted the view there, medians of 7 (the view is also asked to repaint,
  so that a transcript too short to scroll still costs its frame);
- memory: resident memory (VmRSS) once loaded, appended to and scrolled, minus the figure
  before the items were built (the store's own share is shown apart).
Every figure at 10,000 lines is set against the same figure at 20 lines. Goal: the
times to append a line, to jump to the end and to the top, each at 10,000 within 1.5x of 20
lines, and at most 30 MB more memory. Load, which the issue does not list, grows with the
session: the design pays it once per session (and again on each resize, shown below the table,
with Ctrl+O); it is shown without a goal.

Run: .venv/bin/python bench/bench_window_long.py [sizes..., 20 2000 10000 by default]
     (--quick: 20 200 1000)
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from window_common import (  # noqa: E402
    SIZE,
    FrameProbe,
    answer_markdown,
    machine,
    median,
    mm_app,
    rss_mb,
    verdict,
)

GOAL_RATIO = 1.5
GOAL_MB = 30.0
ANSWERS = 200

TOOLS = [
    ("bash", "execute", "pytest -q tests/test_{n}.py"),
    ("read_file", "read", "src/module_{n}.py"),
    ("bash", "execute", "grep -rn 'def handler_{n}' src/"),
    ("edit_file", "edit", "src/module_{n}.py"),
    ("write_file", "edit", "notes/step_{n}.md"),
]


def tool_item(n: int):  # noqa: ANN201
    from mm_tui.window.transcript.store import ToolItem

    tool, kind, title = TOOLS[n % len(TOOLS)]
    title = title.format(n=n)
    status = "error" if n % 17 == 0 else "ok"
    diff = None
    if tool == "bash":
        lines = [f"tests/test_{n}.py::test_case_{i} PASSED" for i in range(3 + n % 9)]
        output = "\n".join(lines) + f"\n{len(lines)} passed in 0.{n % 10}s"
    elif tool == "read_file":
        output = "\n".join(f"{i + 1:4}  value_{i} = compute({i}, {n})" for i in range(12 + n % 8))
    else:
        output = f"{'edited' if tool == 'edit_file' else 'wrote'} {title}"
        diff = (
            f"--- a/{title}\n+++ b/{title}\n@@ -{n % 50 + 1},3 +{n % 50 + 1},3 @@\n"
            f" def step_{n}():\n-    return {n}\n+    return {n + 1}\n"
        )
    return ToolItem(
        call_id=f"c{n}",
        tool=tool,
        title=f"{tool}  {title}",
        kind=kind,
        arguments={"path": title} if tool != "bash" else {"command": title},
        status=status,
        output=output,
        diff=diff,
        started=0.0,
        elapsed=0.05 + (n % 40) / 10,
        folded=True,
    )


def build(app, tools: int, answers: int) -> None:  # noqa: ANN001
    from mm_tui.window.transcript.store import AnswerItem

    every = tools // answers if answers else 0
    texts = [answer_markdown(700 + (k % 5) * 300, start=k) for k in range(10)]
    for n in range(tools):
        app.main.transcript.add(tool_item(n))
        if every and n % every == every - 1:
            k = n // every
            app.main.transcript.add(AnswerItem(pieces=[texts[k % len(texts)]], done=True))


async def child(tools: int) -> dict[str, float]:
    from mm_tui.core.events import ToolCallFinished, ToolCallStarted
    from mm_tui.window.screens.main import EngineEvent
    from mm_tui.window.transcript.store import ToolItem

    answers = ANSWERS if tools > 20 else 0
    app = mm_app()
    out: dict[str, float] = {"tools": tools, "answers": answers}
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.main.view
        items = app.main.transcript.items
        probe = FrameProbe(app.screen, view)

        def current() -> bool:
            # Every item on screen shows its latest version (items off screen are not rendered
            # at all: their heights are estimated until they come into view).
            on_screen = view.items_on_screen()
            return (
                len(on_screen) > 0
                and on_screen[-1] is items[-1]
                and all(view.drawn_version(item) == item.version for item in on_screen)
            )

        def at_end() -> bool:
            return current() and view.scroll_y >= view.max_scroll_y

        gc.collect()
        rss0 = rss_mb()
        t0 = time.perf_counter()
        build(app, tools, answers)
        t1 = time.perf_counter()
        out["rss_data"] = rss_mb() - rss0  # the store alone
        t0 += time.perf_counter() - t1
        view.update_items(items)
        await probe.painted(at_end)
        out["load"] = time.perf_counter() - t0
        out["items"] = len(items)
        out["lines"] = view.virtual_size.height

        walls, cpus = [], []
        for j in range(15):
            call_id = f"extra{j}"
            started = ToolCallStarted(
                call_id=call_id,
                tool="bash",
                title="bash  ls -la",
                kind="execute",
                arguments={"command": "ls -la"},
            )
            finished = ToolCallFinished(
                call_id=call_id, tool="bash", status="ok", output="a\nb\nc", elapsed=0.01
            )

            def appended(call_id: str = call_id) -> bool:
                last = items[-1]
                return (
                    isinstance(last, ToolItem)
                    and last.call_id == call_id
                    and not last.running
                    and at_end()
                )

            t = time.perf_counter()
            c = time.process_time()
            app.main.post_message(EngineEvent(started))
            app.main.post_message(EngineEvent(finished))
            done = await probe.painted(appended)
            walls.append(done - t)
            cpus.append(time.process_time() - c)
            await asyncio.sleep(0.02)
        out["append"] = median(walls)
        out["append_cpu"] = median(cpus)

        tops, ends = [], []
        for _ in range(7):
            t = time.perf_counter()
            view.action_scroll_home()
            view.refresh()
            tops.append(await probe.painted(lambda: view.scroll_y == 0) - t)
            await asyncio.sleep(0.02)
            t = time.perf_counter()
            view.action_scroll_end()
            view.refresh()
            ends.append(await probe.painted(lambda: view.scroll_y >= view.max_scroll_y) - t)
            await asyncio.sleep(0.02)
        out["top"] = median(tops)
        out["end"] = median(ends)

        gc.collect()
        out["rss"] = rss_mb() - rss0

        # informational: a resize re-renders every item at the new width; Ctrl+O opens them all
        width = view.line_width
        resized = asyncio.ensure_future(
            probe.painted(lambda: view.line_width != width and at_end())
        )
        t = time.perf_counter()
        await pilot.resize_terminal(SIZE[0] + 20, SIZE[1])
        out["resize"] = await resized - t
        t = time.perf_counter()
        app.action_fold_all()
        out["open_all"] = await probe.painted(lambda: not items[-1].folded and at_end()) - t
        gc.collect()
        out["rss_open"] = rss_mb() - rss0
    return out


def run_child(tools: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", str(tools)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{tools} tool lines: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(sizes: list[int]) -> None:
    runs = [run_child(n) for n in sizes]
    base = runs[0]
    print(f"long sessions, headless {SIZE[0]}x{SIZE[1]}, each size in a fresh process")
    print(f"machine: {machine()}")
    header = (
        f"{'tool lines':>10}{'answers':>8}{'rows':>8}{'load':>10}{'append':>10}"
        f"{'(cpu)':>9}{'to top':>9}{'to end':>9}{'memory':>10}"
    )
    print(header)
    for r in runs:
        print(
            f"{r['tools']:>10,.0f}{r['answers']:>8.0f}{r['lines']:>8,.0f}"
            f"{r['load'] * 1000:>8.1f}ms{r['append'] * 1000:>8.1f}ms{r['append_cpu'] * 1000:>7.1f}ms"
            f"{r['top'] * 1000:>7.1f}ms{r['end'] * 1000:>7.1f}ms{r['rss']:>7.1f} MB"
            f"  (store {r['rss_data']:.1f} MB)"
        )
    print(f"ratios against {base['tools']:.0f} tool lines:")
    figures = [
        ("load", "load"),
        ("append", "append (to frame)"),
        ("append_cpu", "append (process time)"),
        ("top", "jump to top"),
        ("end", "jump to end"),
    ]
    for r in runs[1:]:
        print(f"  {r['tools']:,.0f} tool lines, {r['answers']:.0f} answers:")
        for key, label in figures:
            ratio = r[key] / base[key] if base[key] else float("inf")
            if key == "load":  # not among the figures: it grows with the session
                print(f"    {label:24}{ratio:8.2f}x  (no goal: paid once per session, on --resume)")
                continue
            print(
                f"    {label:24}{ratio:8.2f}x  (goal <= {GOAL_RATIO}x) -> "
                f"{verdict(ratio <= GOAL_RATIO)}"
            )
        more = r["rss"] - base["rss"]
        print(
            f"    {'memory':24}{more:+8.1f} MB  (goal <= +{GOAL_MB:.0f} MB) -> "
            f"{verdict(more <= GOAL_MB)}"
        )
    print("not in the goal: a resize by 20 columns, Ctrl+O opening every tool output:")
    for r in runs:
        print(
            f"  {r['tools']:>7,.0f} tool lines: resize {r['resize'] * 1000:8.1f} ms; "
            f"Ctrl+O {r['open_all'] * 1000:8.1f} ms, memory then {r['rss_open']:6.1f} MB"
        )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(asyncio.run(child(int(sys.argv[2])))))
    elif "--quick" in sys.argv:
        main([20, 200, 1000])
    else:
        main([int(a) for a in sys.argv[1:]] or [20, 2000, 10000])
