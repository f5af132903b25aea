"""Line mode's answer as Markdown: it streams as written, and on a terminal each block is drawn
again rendered once it ends; a pipe gets the Markdown as the model wrote it. The screen is what a
terminal shows after the output (`support.screen`), and the real `mm --line` in tmux."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from support.events import text_delta
from support.screen import screen
from support.scripted_server import Reply, ScriptedServer
from support.terminal import mm_in_tmux, tmux, until_screen

from mm_tui.core.events import Counters, ThoughtDelta, TurnEnded, Usage
from mm_tui.line.printer import LinePrinter

ANSWER = (
    "The plan, in **two** steps:\n\n"
    "- read `greet.py`\n"
    "- fix the *typo*\n\n"
    "```python\n"
    "print('hi')\n"
    "```\n\n"
    "## Done\n"
)
END = TurnEnded(turn=1, counters=Counters(), elapsed=0.5, usage=Usage(), stop_reason="end_turn")
# what line mode itself writes: colours, the cursor up, clearing below
OWN_ESCAPES = re.compile(r"\x1b\[[\d;]*m|\x1b\[\d*A|\x1b\[J")


def printed(
    pieces: list[str], *, terminal: bool = True, width: int = 60, height: int = 25
) -> tuple[LinePrinter, io.StringIO]:
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        height=height,
        force_terminal=terminal,
        color_system="standard" if terminal else None,
    )
    p = LinePrinter(console, 5, ask=lambda request: None)
    for piece in pieces:
        p(text_delta(piece))
    return p, out


def pieces_of(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_each_block_is_drawn_as_markdown_once_it_ends() -> None:
    p, out = printed(pieces_of(ANSWER))
    p(END)
    assert screen(out.getvalue(), 60) == [
        "The plan, in two steps:",
        "",
        " • read greet.py",
        " • fix the typo",
        "",
        " print('hi')",
        "",
        "Done",
        "0.5s",  # the recap under it
        "",
    ]


def test_a_finished_block_is_drawn_while_the_next_streams() -> None:
    _, out = printed(pieces_of("First **block**.\n\nsecond *one"))
    shown = screen(out.getvalue(), 60)
    assert shown[0] == "First block."  # drawn again as soon as the blank line came
    assert shown[-1] == "second"  # still streaming: as written (`*one` held till its end)


def test_a_pipe_gets_the_markdown_as_written() -> None:
    p, out = printed(pieces_of(ANSWER), terminal=False)
    p(END)
    assert out.getvalue() == ANSWER + "\n0.5s\n"


def test_the_reasoning_is_not_drawn_again() -> None:
    out = io.StringIO()
    console = Console(file=out, width=60, height=25, force_terminal=True, color_system=None)
    p = LinePrinter(console, 5, ask=lambda request: None)
    for piece in pieces_of("thinking about **this**\n\nand that"):
        p(ThoughtDelta(text=piece))
    p(END)
    assert screen(out.getvalue(), 60)[:3] == ["thinking about **this**", "", "and that"]


WIDE = "**" + "x" * 70 + "**"  # a word wider than the line: the terminal cuts it
TALL = [f"line **{n}**" for n in range(30)]  # more rows than the screen


@pytest.mark.parametrize(
    ("answer", "rows"),
    [(WIDE, [WIDE[:60], WIDE[60:]]), ("\n".join(TALL), TALL)],
    ids=["wider than the line", "taller than the screen"],
)
def test_a_block_whose_rows_are_unknown_or_out_of_reach_stays_as_written(
    answer: str, rows: list[str]
) -> None:
    p, out = printed(pieces_of(answer + "\n\nend"), width=60, height=25)
    p(END)
    assert screen(out.getvalue(), 60) == [*rows, "", "end", "0.5s", ""]


def test_escapes_in_the_answer_never_reach_the_terminal() -> None:
    p, out = printed(pieces_of("A **title**\x1b]0;owned\x07 and \x1b[2J here\n\nnext\x1b[1A"))
    p(END)
    written = OWN_ESCAPES.sub("", out.getvalue())
    assert "\x1b" not in written and "\x07" not in written
    text = "\n".join(screen(out.getvalue(), 60))
    assert "\\x1b]0;owned\\x07" in text and "\\x1b[2J" in text and "\\x1b[1A" in text


def test_a_resize_while_a_block_streams_leaves_it_as_written() -> None:
    out = io.StringIO()
    console = Console(file=out, width=60, height=25, force_terminal=True, color_system=None)
    p = LinePrinter(console, 5, ask=lambda request: None)
    p(text_delta("some **bold** "))
    console.width = 40  # the terminal got narrower: the rows written are not the rows now
    p(text_delta("text\n\nmore"))
    p(END)
    assert screen(out.getvalue(), 40)[0] == "some **bold** text"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_real_line_mode_draws_the_answer_as_markdown(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.script(Reply(ANSWER))
        env = {"MM_BASE_URL": server.base_url, "MM_MODEL": "m", "TERM": "xterm-256color"}
        with mm_in_tmux(tmp_path, "markdown", "--line", env=env) as session:
            tmux("send-keys", "-t", session, "-l", "plan it")
            tmux("send-keys", "-t", session, "Enter")
            shown = until_screen(session, " tokens (", "the recap")
            lines = [line.rstrip() for line in shown.splitlines()]
            assert "The plan, in two steps:" in lines, shown
            assert " • read greet.py" in lines and " • fix the typo" in lines, shown
            assert "**" not in shown and "```" not in shown and "## Done" not in shown
            # the sentences mm says wrap between words too (the hint was cut inside `commands`)
            hint = "/help lists the commands, /quit leaves. Ctrl-C cancels a turn."
            assert set(hint.split()) <= set(shown.split()), shown
