"""The real `mm` program in a subprocess: -p, line mode, start-up errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.program import mm
from support.scripted_server import Reply, ScriptedServer, closed_port_url


def on(server: ScriptedServer) -> list[str]:
    return ["--base-url", server.base_url, "--model", "m"]


def test_print_on_the_demo_model_lists_the_files(tmp_path: Path) -> None:
    result = mm("--demo", "-p", "list the files", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "🛠️  bash: ls -la" in out
    assert "greet.py" in out  # the preview and the answer
    assert "Here are the files of the working folder:" in out
    assert "⚙ 1 command(s)" in out.splitlines()[-1]


def test_print_in_a_terminal_without_utf_8_writes_ascii(tmp_path: Path) -> None:
    """`LC_ALL=C PYTHONUTF8=0`: no UnicodeEncodeError at the first tool line, ASCII instead."""
    env = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "", "LANG": "C"}
    result = mm("--demo", "-p", "list the files", cwd=tmp_path, env=env, text=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode("ascii")  # nothing but ASCII
    assert "$>  bash: ls -la" in out
    assert out.splitlines()[-1].startswith("* 1 command(s) * ")
    assert b"Traceback" not in result.stderr


def test_print_rejects_calls_that_would_ask(tmp_path: Path) -> None:
    result = mm("--demo", "--no-yolo", "-p", "list the files", cwd=tmp_path)
    assert "🛠️  bash: ls -la" in result.stdout
    assert "[command rejected by the user]" in result.stdout


def test_version(tmp_path: Path) -> None:
    result = mm("--version", cwd=tmp_path)
    assert result.stdout.strip() == "mm 0.1.0"


def test_broken_config_stops_with_one_line(tmp_path: Path) -> None:
    (tmp_path / ".mm").mkdir()
    (tmp_path / ".mm" / "config.yaml").write_text("maxOutput: [1, 2\n")
    result = mm("-p", "hi", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "config.yaml" in lines[0]


def test_unknown_key_names_it(tmp_path: Path) -> None:
    (tmp_path / ".mm").mkdir()
    (tmp_path / ".mm" / "config.yaml").write_text("maxOuptut: 5\n")
    result = mm("-p", "hi", cwd=tmp_path)
    assert result.returncode == 2
    assert "maxOuptut" in result.stderr and "config.yaml" in result.stderr


def test_line_mode_answers_and_quits(tmp_path: Path) -> None:
    result = mm("--demo", "--line", cwd=tmp_path, stdin="list the files\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "mm [mm] · demo @ demo" in result.stdout
    assert "🛠️  bash: ls -la" in result.stdout
    assert "⚙ 1 command(s)" in result.stdout


def test_line_mode_permission_prompt(tmp_path: Path) -> None:
    result = mm("--demo", "--line", "--no-yolo", cwd=tmp_path, stdin="list the files\nr\n/quit\n")
    assert "🔐 allow bash  ls -la?" in result.stdout
    assert "[command rejected by the user]" in result.stdout


def test_end_of_input_quits(tmp_path: Path) -> None:
    result = mm("--demo", "--line", cwd=tmp_path, stdin="")
    assert result.returncode == 0


def test_window_mode_without_a_terminal_says_so_and_ends(tmp_path: Path) -> None:
    """`echo x | mm`, or `ssh host mm` without -t: window mode would wait for keys that never
    come (and outlive the connection): it says why it cannot run, and what can, and ends."""
    for args in ([], ["--demo"]):
        result = mm(*args, cwd=tmp_path, stdin="x\n", timeout=30)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("mm: window mode needs a terminal, and stdin is not one")
        assert 'mm -p "…"' in result.stderr and "mm --line" in result.stderr
        assert result.stdout == ""
    leader, follower = os.openpty()  # a terminal for stdin, a pipe for stdout
    try:
        result = mm(cwd=tmp_path, stdin=None, stdin_fd=follower, timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    assert result.returncode == 2
    assert "and stdout is not one" in result.stderr


def test_print_adds_what_is_piped_in(tmp_path: Path) -> None:
    """`git diff | mm -p "review this"`: the request is the prompt, then the piped text;
    `mm -p -` sends the piped text alone, and says so when none came; nothing piped (a
    terminal, /dev/null) leaves the prompt as it is."""
    piped = "line one\nline two €\n"
    cases = [
        (["-p", "summarize this"], piped, f"summarize this\n\n{piped}"),
        (["-p", "-"], piped, piped),
        (["-p", "just this"], None, "just this"),
    ]
    for args, stdin, sent in cases:
        with ScriptedServer(Reply("done")) as server:
            result = mm(*args, *on(server), cwd=tmp_path, stdin=stdin)
            assert result.returncode == 0, result.stderr
            assert server.requests[0].messages[-1]["content"] == sent
    with ScriptedServer(Reply("done")) as server:
        result = mm("-p", "-", *on(server), cwd=tmp_path, stdin="")
        assert result.returncode == 2
        assert result.stderr.strip() == "mm: -p -: no text came on stdin"
        assert server.requests == []


def test_line_mode_commands_never_reach_the_model(tmp_path: Path) -> None:
    """The window's commands, and a mistyped one, are line mode's too, or say why not: none is
    sent to the model as a request."""
    typed = "/help\n/theme\n/abort\n/bogus thing\n/sessions\n/quit\n"
    with ScriptedServer() as server:
        result = mm("--line", *on(server), cwd=tmp_path, stdin=typed)
        assert result.returncode == 0, result.stderr
        assert server.requests == []
    out = result.stdout
    assert "/compact      summarise the conversation" in out  # /help
    assert "themes are the window's" in out
    assert "no turn is running: Ctrl-C cancels one while it runs" in out
    assert "unknown command /bogus — /help lists them" in out
    assert "no sessions yet" in out


def test_line_mode_lists_and_reopens_sessions(tmp_path: Path) -> None:
    """/sessions lists this project's sessions; /sessions ID reopens one in place: the next
    request carries its history."""
    with ScriptedServer(Reply("first answer"), Reply("second answer")) as server:
        first = mm("--line", *on(server), cwd=tmp_path, stdin="remember the word zebra\n/quit\n")
        assert first.returncode == 0, first.stderr
        listed = mm("--line", *on(server), cwd=tmp_path, stdin="/sessions\n/quit\n")
        line = next(x for x in listed.stdout.splitlines() if "remember the word zebra" in x)
        assert " 3 messages " in line, line  # the system prompt, the request, the answer
        session = line.split()[0]
        typed = f"/sessions {session}\nwhat was the word?\n/quit\n"
        again = mm("--line", *on(server), cwd=tmp_path, stdin=typed)
        assert f"resumed session {session}" in again.stdout, again.stdout
        sent = [m["content"] for m in server.requests[-1].messages if m["role"] == "user"]
        assert sent[-2:] == ["remember the word zebra", "what was the word?"]


def test_print_with_no_model_server_runs_the_demo_in_a_playground(
    work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`mm -p` where no server answers: the demo model, in a throw-away playground as the
    window's and line mode's, never in the person's own folder (it edits files and runs tests)."""
    from mm_tui import cli
    from mm_tui.engine import servers

    (work / "mine.txt").write_text("my own file\n")
    monkeypatch.setattr(servers, "PRESETS", (servers.Preset("Ollama", closed_port_url()),))
    monkeypatch.chdir(work)
    assert cli.main(["-p", "fix the typo in greet.py"]) == 0
    out, err = capsys.readouterr()
    assert "the demo works in a throw-away playground: " in err
    playground = Path(err.split("the demo works in a throw-away playground: ")[1].split()[0])
    assert playground != work and (playground / "greet.py").read_text().count("Hello") == 1
    assert sorted(p.name for p in work.iterdir()) == ["mine.txt"]  # nothing written here


def test_resume_passes_over_a_session_left_empty(tmp_path: Path) -> None:
    """mm opened and closed without a request leaves an empty session: `--resume` goes on with
    the last one that holds a request, not with that one (quitting once hid the work)."""
    with ScriptedServer(Reply("noted"), Reply("zebra")) as server:
        first = mm("--line", *on(server), cwd=tmp_path, stdin="remember the word zebra\n/quit\n")
        assert first.returncode == 0, first.stderr
        empty = mm("--line", *on(server), cwd=tmp_path, stdin="/quit\n")
        assert empty.returncode == 0, empty.stderr
        again = mm("--line", "--resume", *on(server), cwd=tmp_path, stdin="the word?\n/quit\n")
        assert again.returncode == 0, again.stderr
        sent = [m["content"] for m in server.requests[-1].messages if m["role"] == "user"]
        assert sent == ["remember the word zebra", "the word?"]


def test_a_demo_session_can_be_resumed_by_the_next_demo(tmp_path: Path) -> None:
    """Each demo works in a playground of its own, but their sessions are kept together:
    `mm --demo --resume` goes on with the last demo's conversation."""
    env = {"TMPDIR": str(tmp_path)}
    first = mm("--demo", "--line", cwd=tmp_path, env=env, stdin="list the files\n/quit\n")
    assert first.returncode == 0, first.stderr
    again = mm("--demo", "--line", "--resume", cwd=tmp_path, env=env, stdin="/sessions\n/quit\n")
    assert again.returncode == 0, again.stderr
    assert "resumed session" in again.stdout + again.stderr
    assert "list the files" in again.stdout  # the /sessions listing: the demo's conversation
