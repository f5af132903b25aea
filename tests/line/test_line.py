"""Line mode's printing of events: the terminal-display lines of the reference (docs/tools.md)
and the recap."""

from __future__ import annotations

import io
import re

from rich.console import Console
from rich.text import Text
from support.events import text_delta, tool_started
from support.screen import screen

from mm_tui.core.events import (
    ContextUsage,
    Counters,
    HistoryCompacted,
    HistoryShortened,
    ModelProbed,
    PermissionRequested,
    ToolCallFinished,
    TurnEnded,
    Usage,
)
from mm_tui.line.printer import LinePrinter, preview
from mm_tui.tools.bash import TOO_LARGE
from mm_tui.tools.diff import compute_diff


def printer(preview_lines: int = 5) -> tuple[LinePrinter, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, highlight=False)
    return LinePrinter(console, preview_lines, ask=lambda request: None), out


def test_reference_marker_spelling() -> None:
    assert TOO_LARGE == "[... output too large to read back in full ...]"


def test_recap_has_every_counter_that_is_not_zero() -> None:
    end = TurnEnded(
        turn=1,
        counters=Counters(commands=2, file_ops=3, skills=1, lsp_calls=4),
        elapsed=3.25,
        usage=Usage(1000, 234),
        stop_reason="end_turn",
    )
    assert end.recap(token_detail=True) == (
        "⚙ 2 command(s) · 📝 3 file op(s) · 📖 1 skill(s) · 🔎 4 lsp call(s) · 3.2s · "
        "1,234 tokens (1,000 in, 234 out)"
    )
    quiet = TurnEnded(
        turn=1, counters=Counters(lsp_calls=1), elapsed=0.5, usage=Usage(), stop_reason="end_turn"
    )
    assert quiet.recap(token_detail=True) == "🔎 1 lsp call(s) · 0.5s"


def test_preview_lines_and_no_output() -> None:
    assert preview("", 5) == ["(no output)"]
    assert preview("\n", 5) == ["(no output)"]
    assert preview("a\nb\nc\n", 2) == ["a", "b", "… 1 more line"]
    assert preview("a\nb\n", 5) == ["a", "b"]


def test_an_edit_s_preview_shows_its_changed_lines_first() -> None:
    """An edit deep in a file: five lines of preview spent on the headline and the context
    above the change would cut the `-`/`+` lines; they start one line above the change."""
    old = "".join(f"line {n}\n" for n in range(1, 11))
    new = old.replace("line 7\n", "line seven\n")
    diff = compute_diff(old, new)
    output = f"edited f.txt: 1 edit applied, +1 -1 lines\n{diff.numbered()}"
    shown = preview(output, 5, diff=True)
    assert shown[0] == "edited f.txt: 1 edit applied, +1 -1 lines"
    changed = [line for line in shown if "line 7" in line or "line seven" in line]
    assert len(changed) == 2 and "-" in changed[0] and "+" in changed[1], shown
    assert shown[-1].startswith("… ") and shown[-1].endswith("more lines")
    assert len(shown) == 6  # five lines and the count of the rest
    assert preview(output, 5)[1:3] != shown[1:3]  # not the first lines, as any other output


def test_bash_call_prints_the_reference_lines() -> None:
    p, out = printer(preview_lines=2)
    p(tool_started("bash", {"command": "ls"}, "1"))
    p(ToolCallFinished(call_id="1", tool="bash", status="ok", output="a\nb\nc\n", elapsed=0.1))
    p(tool_started("bash", {"command": "true"}, "2"))
    p(ToolCallFinished(call_id="2", tool="bash", status="ok", output="", elapsed=0.1))
    assert out.getvalue().splitlines() == [
        "🛠️  bash: ls",
        "    a",
        "    b",
        "    … 1 more line",
        "🛠️  bash: true",
        "    (no output)",
    ]


def test_a_skill_is_not_echoed() -> None:
    p, out = printer()
    p(tool_started("read_skill", {"name": "style"}, "1"))
    p(
        ToolCallFinished(
            call_id="1", tool="read_skill", status="ok", output="# Secret sauce\n", elapsed=0.0
        )
    )
    assert out.getvalue() == "📖 read_skill: style\n"


def test_text_streams_then_closes_its_line() -> None:
    p, out = printer()
    p(text_delta("Hel"))
    p(text_delta("lo"))
    p(TurnEnded(turn=1, counters=Counters(), elapsed=1.0, usage=Usage(), stop_reason="end_turn"))
    assert out.getvalue() == "Hello\n1.0s\n"


def test_a_cancelled_turn_says_so() -> None:
    end = TurnEnded(
        turn=1,
        counters=Counters(commands=1),
        elapsed=2.0,
        usage=Usage(3, 4),
        stop_reason="cancelled",
    )
    assert end.recap() == "⚙ 1 command(s) · 2.0s · 7 tokens · cancelled"


def test_shortening_and_compaction_are_dim_notices_and_the_context_waits_for_the_recap() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system="standard", highlight=False)
    p = LinePrinter(console, 5, ask=lambda request: None)
    p(text_delta("Working"))
    p(ContextUsage(used=1500, window=2048, source="llama.cpp /props"))
    p(HistoryShortened(outputs=2, chars_cut=5000, message="shortened 2 old tool output(s)"))
    p(HistoryCompacted(summary="all of it", replaced=7, auto=True))
    p(
        TurnEnded(
            turn=1,
            counters=Counters(),
            elapsed=1.0,
            usage=Usage(),
            stop_reason="end_turn",
            context_used=600,
            context_window=2048,
            context_fixed=412,
        )
    )
    lines = out.getvalue().splitlines()
    assert [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines] == [
        "Working",
        "shortened 2 old tool output(s)",
        "compacted 7 messages into a summary automatically, near the context window",
        "1.0s · ctx 600 / 2,048 (29%) · fixed 412",  # the context, once, in the recap
    ]
    assert lines[1].startswith("\x1b[2m") and lines[2].startswith("\x1b[2m")  # dim


# --------------------------------------------------------------------------- coloured diffs

OLD = "def greet():\n    print('Helo')\n-- a comment\n"
NEW = "def greet():\n    print('Hello')\n"
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def diff_events() -> tuple[PermissionRequested, ToolCallFinished]:
    """What an edit_file call sends line mode: its unified diff to ask with, then its result,
    a headline and the numbered diff."""
    diff = compute_diff(OLD, NEW)
    unified = diff.unified("greet.py")
    asked = PermissionRequested(
        call_id="1",
        tool="edit_file",
        title="greet.py",
        details=unified,
    )
    finished = ToolCallFinished(
        call_id="1",
        tool="edit_file",
        status="ok",
        output=f"edited greet.py: 1 edit applied, +1 -2 lines\n{diff.numbered()}",
        elapsed=0.0,
        diff=unified,
    )
    return asked, finished


def print_diff(console: Console) -> str:
    printer = LinePrinter(console, 10, ask=lambda request: None)
    for event in diff_events():
        printer(event)
    return console.file.getvalue()  # type: ignore[attr-defined]


def codes(out: str, text: str) -> set[str]:
    """The SGR parameters in force on the printed line holding `text`."""
    line = next(line for line in out.splitlines() if text in SGR.sub("", line))
    return {p for m in SGR.finditer(line.split(text)[0] + text) for p in m[1].split(";")}


def test_a_diff_is_coloured_on_a_colour_terminal() -> None:
    console = Console(file=io.StringIO(), width=200, force_terminal=True, color_system="truecolor")
    out = print_diff(console)
    # the permission prompt's unified diff
    assert "32" in codes(out, "+    print('Hello')")  # green
    assert "31" in codes(out, "-    print('Helo')")  # red
    assert "31" in codes(out, "--- a comment")  # a removed `-- …` line, not a file header
    assert "36" in codes(out, "@@ -1,3 +1,2 @@")  # cyan
    assert "1" in codes(out, "+++ b/greet.py") and "32" not in codes(out, "+++ b/greet.py")
    assert codes(out, " def greet():") == {"2"}  # context stays dim
    # the result's numbered diff
    assert "32" in codes(out, "2 + │     print('Hello')")
    assert "31" in codes(out, "2 - │     print('Helo')")
    assert codes(out, "edited greet.py") == {"2"}  # the headline stays dim
    # the text itself is unchanged
    assert SGR.sub("", out) == print_diff(Console(file=io.StringIO(), width=200, color_system=None))


def expected_without_colour(console: Console) -> str:
    """The lines as line mode printed them before diffs had colours: all of them dim."""
    asked, finished = diff_events()
    for line in asked.details.rstrip("\n").splitlines():
        console.print(Text("    " + line, style="dim"))
    for line in preview(finished.output, 10):
        console.print(Text("    " + line, style="dim"))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_without_colour_a_diff_prints_as_before() -> None:
    """A pipe (no colour system), NO_COLOR: the same bytes as the uncoloured diff; in a pipe no
    escape code at all."""
    plain = print_diff(Console(file=io.StringIO(), width=200, color_system=None))
    assert plain == expected_without_colour(Console(file=io.StringIO(), width=200))
    assert "\x1b" not in plain
    assert "    +    print('Hello')" in plain.splitlines()

    def no_color() -> Console:
        return Console(
            file=io.StringIO(),
            width=200,
            force_terminal=True,
            color_system="truecolor",
            no_color=True,
        )

    out = print_diff(no_color())
    assert out == expected_without_colour(no_color())
    assert not {"31", "32", "36"} & {p for m in SGR.finditer(out) for p in m[1].split(";")}


def test_a_command_that_looks_like_a_diff_is_not_coloured() -> None:
    """bash output is never a diff, whatever its lines start with."""
    console = Console(file=io.StringIO(), width=200, force_terminal=True, color_system="truecolor")
    p = LinePrinter(console, 5, ask=lambda request: None)
    p(ToolCallFinished(call_id="1", tool="bash", status="ok", output="@@ x\n+a\n-b\n", elapsed=0))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert {p for m in SGR.finditer(out) for p in m[1].split(";")} <= {"0", "2", ""}


def test_counts_take_their_noun_in_the_right_number() -> None:
    """`1 message`, `1 line`, never `1 messages` (the `(s)` forms docs/tools.md quotes, as in
    the recap's `1 command(s)`, stay as they are)."""
    from mm_tui.core.text import counted

    assert [counted(n, "line") for n in (0, 1, 2, 1234)] == [
        "0 lines",
        "1 line",
        "2 lines",
        "1,234 lines",
    ]
    one = HistoryCompacted(summary="s", replaced=1, auto=False)
    assert one.title.startswith("compacted 1 message into a summary")


def test_a_streamed_answer_wraps_between_words_on_a_terminal() -> None:
    """On a terminal the answer breaks lines between words, never inside one (the terminal
    would cut a word at its edge); the words arrive in pieces and come out whole, the last
    held until the answer ends. A pipe gets the text exactly as it came."""
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    pieces = [words[i : i + 4] for i in range(0, len(words), 4)]

    def streamed(terminal: bool) -> str:
        out = io.StringIO()
        console = Console(file=out, width=20, force_terminal=terminal, color_system=None)
        p = LinePrinter(console, 5, ask=lambda request: None)
        for piece in pieces:
            p(text_delta(piece))
        p(
            TurnEnded(
                turn=1, counters=Counters(), elapsed=0.1, usage=Usage(), stop_reason="end_turn"
            )
        )
        return out.getvalue()

    shown = screen(streamed(True), 20)[:-2]  # then the recap
    assert " ".join(line.strip() for line in shown) == words
    assert all(len(line) <= 20 for line in shown), shown
    assert all(word in words.split() for line in shown for word in line.split())
    assert streamed(False).startswith(words + "\n")


def test_the_task_list_prints_as_a_short_block() -> None:
    from mm_tui.core.events import TodoStep, TodoUpdated

    p, out = printer()
    steps = (
        TodoStep("read greet.py", "done"),
        TodoStep("fix \x1b[2Jthe typo", "in_progress"),
        TodoStep("run the tests", "pending"),
    )
    p(TodoUpdated(steps=steps))
    assert out.getvalue() == (
        "  [x] read greet.py\n  [>] fix \\x1b[2Jthe typo\n  [ ] run the tests\n"
    )


async def test_the_wait_behind_a_cancelled_answer_is_said_on_a_line(tmp_path) -> None:  # noqa: ANN001
    """Line mode has no spinner: while the server finishes a cancelled answer, a line says
    so, and the answer that comes after it prints as any other."""
    import asyncio

    from support.engine import make_engine
    from support.scripted_server import Generating, Reply, ScriptedServer
    from support.waiting import until

    generating = Generating()
    with ScriptedServer(generating, Reply("the next answer")) as server:
        engine = make_engine(tmp_path, server, bashTool=False, editTools=False)
        engine.server.slow_floor = 0.05
        p, out = printer()
        try:
            first = asyncio.create_task(engine.run_turn("long", p))
            await until(lambda: "Once upon" in out.getvalue(), "the first words")
            engine.cancel()
            await first
            second = asyncio.create_task(engine.run_turn("next", p))
            await until(lambda: "finishing" in out.getvalue(), "the line")
            generating.finish()
            await second
        finally:
            generating.finish()
            await engine.aclose()
    lines = out.getvalue().splitlines()
    said = lines.index("the server is still finishing the last answer")
    assert lines[said + 1] == "the next answer" and lines[said - 1].endswith("cancelled")


def test_the_probes_line_is_printed() -> None:
    p, out = printer()
    p(ModelProbed(text="requests with tools go non-streamed: \x1b[2Jgone"))
    assert out.getvalue() == "requests with tools go non-streamed: \\x1b[2Jgone\n"
