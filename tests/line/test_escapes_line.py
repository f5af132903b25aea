"""No escape sequence from a model, a tool, a page or a file reaches the terminal raw in line
mode and `mm -p`: the real `mm` on the scripted server, its output read as bytes, and the spoofed
permission question replayed in a real terminal (tmux)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from support.escapes import OSC52, SOURCES, SPOOF, TITLE
from support.events import text_delta
from support.program import mm
from support.scripted_server import Reply, ScriptedServer, call
from support.terminal import mm_in_tmux, screen_of, tmux, until_screen
from support.waiting import wait_until

from mm_tui.core.events import Counters, PermissionRequested, ThoughtDelta, TurnEnded, Usage
from mm_tui.line.printer import LinePrinter


def visible(text: str) -> str:
    return text.replace("\x1b", "\\x1b").replace("\x07", "\\x07")


def test_mm_p_prints_no_escape_from_any_source(tmp_path: Path) -> None:
    """OSC 52 (clipboard), a window title, a CSI and the 8-bit C1 controls from bash's output,
    a file's text, a command, a file name, the answer and the reasoning: none reaches stdout or
    stderr as bytes a terminal acts on; each shows as `\\x1b]52;c;…\\x07`."""
    p = SOURCES
    name = f"notes{TITLE.format(p['a file name'])}.txt"
    (tmp_path / name).write_text(f"file says {OSC52.format(p['read_file output'])}\x9b2J\n")
    command = (
        f"printf '{OSC52.format(p['bash output'])}'; printf '\\302\\235x\\302\\220y\\n'"
        f" # {TITLE.format(p['a tool argument'])}"
    )
    with ScriptedServer() as server:
        server.script(
            Reply(
                reasoning=f"I think {OSC52.format(p['the reasoning'])}\x9d0;t\x9c",
                tool_calls=[call("bash", {"command": command}), call("read_file", {"path": name})],
            ),
            Reply(f"Done {OSC52.format(p['the answer'])} \x9b31m red"),
        )
        env = {"MM_BASE_URL": server.base_url, "MM_MODEL": "m", "TERM": "xterm-256color"}
        result = mm("-p", "go", cwd=tmp_path, env=env, text=False)
        # the model saw the real output, escapes and all
        results = [m["content"] for m in server.requests[1].messages if m["role"] == "tool"]
    assert result.returncode == 0, result.stderr
    assert OSC52.format(p["bash output"]) in results[0]
    assert OSC52.format(p["read_file output"]) in results[1]
    out = result.stdout + result.stderr
    for byte in (b"\x1b", b"\x07", b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x90", b"\xc2\x9c"):
        assert byte not in out, (byte, out)
    shown = out.decode()  # UTF-8: a C1 control is two bytes (a lone 0x9b is inside `🛠`)
    assert not [char for char in shown if "\x80" <= char <= "\x9f"]
    for source, payload in p.items():
        form = TITLE if source in {"a file name", "a tool argument"} else OSC52
        assert visible(form.format(payload)) in shown, source
    assert "\\x9d0;t\\x9c" in shown and "\\x9b31m red" in shown and "\\x9b2J" in shown


def test_a_long_permission_request_says_what_it_does_not_show() -> None:
    out = io.StringIO()
    printer = LinePrinter(Console(file=out, width=100), 5, lambda request: None)
    script = "".join(f"echo {i}\n" for i in range(43)) + "rm -rf ~\n"  # 40 lines are shown
    printer(
        PermissionRequested(
            call_id="1",
            tool="write_file",
            title="write_file  run.sh",
            details=script,
        )
    )
    lines = out.getvalue().splitlines()
    assert lines[-1] == "    … 4 more lines not shown"
    assert len(lines) == 41


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_spoofed_command_shows_what_it_runs_at_the_line_prompt(tmp_path: Path) -> None:
    """The command erases its own line and the one above and writes `ls -la` over them: the
    question shows it whole, `\\x1b[2K` and all, and `r` keeps the file."""
    (tmp_path / "important.txt").write_text("keep me\n")
    with ScriptedServer() as server:
        server.script(Reply(tool_calls=[call("bash", {"command": SPOOF})]), Reply("ok"))
        env = {"MM_BASE_URL": server.base_url, "MM_MODEL": "m", "TERM": "xterm-256color"}
        with mm_in_tmux(tmp_path, "spoof", "--line", "--no-yolo", env=env) as session:
            tmux("send-keys", "-t", session, "-l", "tidy up")
            tmux("send-keys", "-t", session, "Enter")
            screen = until_screen(session, "[n] never", "the permission question")
            questions = [line for line in screen.splitlines() if line.startswith("🔐")]
            assert questions, screen  # the escapes erased it, and wrote `ls -la` in its place
            assert questions[0].startswith("🔐 allow bash  rm -f important.txt; echo gone #")
            assert "\\x1b[2K\\x1b[1G\\x1b[1A\\x1b[2Kls -la?" in screen.replace("\n", "")
            assert "🛠️  bash: rm -f important.txt" in screen
            tmux("send-keys", "-t", session, "r", "Enter")
            assert wait_until(lambda: len(server.requests) >= 2, 30), "the rejection never sent"
            until_screen(session, "command(s)", "the recap")
            assert "[command rejected by the user]" in str(server.requests[1].messages[-1])
            assert "gone" not in screen_of(session).splitlines()  # echo never ran
    assert (tmp_path / "important.txt").read_text() == "keep me\n"


def test_a_crlf_cut_between_two_deltas_is_a_line_end() -> None:
    """A server may cut `\\r\\n` between two chunks: it is still a line end; a CR that is not
    followed by a newline (in the next delta, or at the end of the stream) shows as `\\r`."""
    out = io.StringIO()
    printer = LinePrinter(Console(file=out, width=100), 5, lambda request: None)
    for piece in ("one\r", "\ntwo\r", "three\r", "\x1b", "[2K"):
        printer(text_delta(piece))
    printer(ThoughtDelta(text="x\r"))
    printer(
        TurnEnded(
            turn=1, counters=Counters(), elapsed=0.0, usage=Usage(0, 0), stop_reason="end_turn"
        )
    )
    assert out.getvalue().splitlines()[:3] == ["one", "two\\rthree\\r\\x1b[2K", "x\\r"]
