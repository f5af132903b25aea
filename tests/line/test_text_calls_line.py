"""A tool call the model wrote in its text, in line mode: the call's line says it was read from
the answer's text, and `mm -p` prints the call as a call, never its text as an answer."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from support.events import tool_started
from support.program import mm
from support.scripted_server import Reply, ScriptedServer

from mm_tui.core.events import FROM_TEXT
from mm_tui.line.printer import LinePrinter


def test_the_line_of_a_call_from_the_text_says_so() -> None:
    out = io.StringIO()
    printer = LinePrinter(Console(file=out, width=100, color_system=None), 5, ask=lambda r: None)
    printer(tool_started("bash", {"command": "ls"}, "1"))
    printer(replace(tool_started("bash", {"command": "pwd"}, "2"), from_text=True))
    assert out.getvalue().splitlines() == ["🛠️  bash: ls", f"🛠️  bash: pwd  · {FROM_TEXT}"]


def test_mm_p_runs_a_mistral_call_written_as_text(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the notes\n")
    with ScriptedServer() as server:
        server.script(
            Reply('Reading it.[TOOL_CALLS]read_file[ARGS]{"path": "notes.txt"}'),
            Reply("It says: the notes."),
        )
        env = {"MM_BASE_URL": server.base_url, "MM_MODEL": "m"}
        result = mm("-p", "read notes.txt", cwd=tmp_path, env=env)
        results = [m["content"] for m in server.requests[1].messages if m["role"] == "tool"]
    assert result.returncode == 0, result.stderr
    assert "the notes" in results[0]
    assert f"read_file: notes.txt  · {FROM_TEXT}" in result.stdout
    assert "[TOOL_CALLS]" not in result.stdout and "[ARGS]" not in result.stdout
    assert "Reading it." in result.stdout and "It says: the notes." in result.stdout
