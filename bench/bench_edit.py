"""What edit_file costs against the least any implementation must do.

A 100,000-line Go-like file (tab-indented) takes one call of 50 edits, spread through it,
three times: each time every `old` is written so that one pass finds it — exact (verbatim),
edges (a single line with the model's four spaces and a trailing newline around it), indent
(a three-line block retyped with four spaces). The floor is a bare `str.replace(old, new, 1)`
loop on the same text with the exact strings: no uniqueness check, no re-indentation, no diff.

Two figures per pass: `plan` (read, match, apply, diff: a dry run) and `write` (the whole call:
the same plus the atomic write with fsync). Then the not-found path on the same file: one edit
whose old lines almost line up, so the closest region is searched and offered.

Run: .venv/bin/python bench/bench_edit.py [repeats, 5 by default]  (--quick: 1 repeat)
Prints figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mm_tui.config import Settings  # noqa: E402
from mm_tui.tools.args import Edit, EditFileArgs  # noqa: E402
from mm_tui.tools.base import ToolContext  # noqa: E402
from mm_tui.tools.edit_file import EditFileTool  # noqa: E402

LINES = 100_000
EDITS = 50


def make_file() -> tuple[str, list[int]]:
    """Functions of five lines; the edited ones are EDITS of them, evenly spread."""
    out = ["package main\n", "\n"]
    functions = (LINES - 2) // 5
    for i in range(functions):
        out += [
            f"func step{i}(n int) int {{\n",
            f"\tcount{i} := n * {i % 97}\n",
            f"\treturn count{i} + {i % 13}\n",
            "}\n",
            "\n",
        ]
    out += ["\n"] * (LINES - len(out))
    return "".join(out), [k * (functions // EDITS) for k in range(EDITS)]


def edits_for(
    pass_name: str, targets: list[int]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(edits for the tool, the same edits written exactly, for the str.replace floor)."""
    tool: list[tuple[str, str]] = []
    exact: list[tuple[str, str]] = []
    for i in targets:
        block = f"\tcount{i} := n * {i % 97}\n\treturn count{i} + {i % 13}\n"
        changed = f"\tcount{i} := n * {i % 97} + 1\n\treturn count{i} + {i % 13}\n"
        exact.append((block, changed))
        if pass_name == "exact":
            tool.append((block, changed))
        elif pass_name == "edges":
            line = f"count{i} := n * {i % 97}"
            tool.append((f"    {line}\n", f"    {line} + 1\n"))
        else:
            tool.append((block.replace("\t", "    "), changed.replace("\t", "    ")))
    return tool, exact


def replace_loop(text: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        text = text.replace(old, new, 1)
    return text


async def timed(tool: EditFileTool, args: EditFileArgs, ctx: ToolContext) -> tuple[float, str]:
    started = time.perf_counter()
    result = await tool.run(args, ctx)
    return time.perf_counter() - started, result.output


async def main(repeats: int) -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    text, targets = make_file()
    tool = EditFileTool()
    with tempfile.TemporaryDirectory() as folder:
        ctx = ToolContext(cwd=Path(folder), settings=Settings())
        target = Path(folder) / "main.go"
        print(f"file: {LINES:,} lines, {len(text.encode()) / 1e6:.1f} MB; {EDITS} edits per call")
        print(f"{'pass':<8}{'replace':>11}{'plan':>11}{'write':>11}{'plan/replace':>15}  result")
        for pass_name in ("exact", "edges", "indent"):
            edits, exact = edits_for(pass_name, targets)
            floor, plans, writes = [], [], []
            headline, same = "", False
            for _ in range(repeats):
                started = time.perf_counter()
                expected = replace_loop(text, exact)
                floor.append(time.perf_counter() - started)
                pairs = [Edit(old=o, new=n) for o, n in edits]
                target.write_text(text)
                elapsed, _ = await timed(
                    tool, EditFileArgs(path="main.go", edits=pairs, dry_run=True), ctx
                )
                plans.append(elapsed)
                elapsed, output = await timed(tool, EditFileArgs(path="main.go", edits=pairs), ctx)
                writes.append(elapsed)
                headline = output.split("\n", 1)[0]
                same = target.read_text() == expected
            f, p, w = (statistics.median(x) for x in (floor, plans, writes))
            print(
                f"{pass_name:<8}{f * 1000:>9.1f}ms{p * 1000:>9.1f}ms{w * 1000:>9.1f}ms"
                f"{p / f:>14.1f}x  {'same text as str.replace' if same else 'DIFFERENT'}"
            )
            print(f"        {headline}")
            if not same:  # a figure of a wrong edit measures nothing
                raise SystemExit(f"{pass_name}: edit_file wrote another text than str.replace")

        target.write_text(text)
        i = targets[EDITS // 2]
        old = f"func step{i}(n int) int {{\n    count{i} := n * 1000\n    return count{i} + {i % 13}\n}}"
        times = []
        output = ""
        for _ in range(repeats):
            elapsed, output = await timed(
                tool, EditFileArgs(path="main.go", edits=[Edit(old=old, new="x")]), ctx
            )
            times.append(elapsed)
        offered = "offered" if "the closest the file comes to it" in output else "not offered"
        print(f"not found, closest region {offered}: {statistics.median(times) * 1000:.1f}ms")
        print("        " + output.replace("\n", "\n        "))


if __name__ == "__main__":
    if "--quick" in sys.argv:
        asyncio.run(main(1))
    else:
        asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
