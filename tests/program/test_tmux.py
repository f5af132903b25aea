"""The real `mm --demo` in a real terminal (tmux, 100×30): type a request, wait for the ✓ and
the recap, read them back with capture-pane."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.terminal import mm_in_tmux, screen_of, session_exists, tmux, until_screen

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_demo_in_a_real_terminal(tmp_path: Path) -> None:
    with mm_in_tmux(tmp_path, "test", "--demo", env={"TERM": "xterm-256color"}) as session:
        assert "mm [mm] · demo @ demo" in screen_of(session)
        tmux("send-keys", "-t", session, "-l", "list the files")
        # the text typed on its own, then Enter on its own (the burst is the next test)
        until_screen(session, "│ list the files", "the request in the prompt")
        tmux("send-keys", "-t", session, "Enter")
        screen = until_screen(session, "command(s)")
        assert "‣ bash  ls -la" in screen
        line = next(line for line in screen.splitlines() if "‣ bash  ls -la" in line)
        assert "✓" in line
        assert "── ⚙ 1 command(s) · " in screen
        tmux("send-keys", "-t", session, "C-c")
        until_screen(session, "Ctrl+C again", "the first Ctrl+C's toast")
        tmux("send-keys", "-t", session, "C-c")
        until_screen(session, lambda _: not session_exists(session), "mm quitting", 10)


def test_text_and_enter_in_one_burst_are_sent(tmp_path: Path) -> None:
    """A paste, SSH's batching or `tmux send-keys "text" Enter`: the Enter arrives in the same
    read as the text, and must send it (it was dropped: the text stayed in the prompt)."""
    with mm_in_tmux(tmp_path, "burst", "--demo", env={"TERM": "xterm-256color"}) as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")
        screen = until_screen(session, "command(s)", timeout=15)
        assert "› list the files" in screen
        assert "‣ bash  ls -la" in screen


@pytest.mark.parametrize(
    ("key", "sequence"),
    [("Shift+Enter", "\x1b[27;2;13~"), ("Alt+Enter", "\x1b[27;3;13~")],
)
def test_xterm_modify_other_keys_enter_adds_a_line(tmp_path: Path, key: str, sequence: str) -> None:
    """xterm with `modifyOtherKeys: 2`, and tmux with `extended-keys` on, send Shift+Enter as
    `ESC [ 27 ; 2 ; 13 ~`: it adds a line, as the kitty form does (it was swallowed), and the
    Enter after it sends both lines."""
    with mm_in_tmux(tmp_path, f"modify-{key}", "--demo", env={"TERM": "xterm-256color"}) as session:
        tmux("send-keys", "-t", session, "-l", "list")
        until_screen(session, "│ list ", "the first line in the prompt")
        tmux("send-keys", "-t", session, "-l", sequence)
        tmux("send-keys", "-t", session, "-l", "the files")
        screen = until_screen(session, "│ the files ", "the second line in the prompt")
        assert "│ list " in screen
        tmux("send-keys", "-t", session, "Enter")
        screen = until_screen(session, " tokens ──", "the turn's end", timeout=15)
        lines = [line.strip() for line in screen.splitlines()]
        assert lines[lines.index("› list") + 1] == "the files"  # the request, both its lines


@pytest.mark.parametrize(
    ("colorterm", "panel", "other"),
    [
        ("", "48;5;236", "48;2;"),  # 256 colours: mm-dark's panel #303030 is xterm colour 236
        ("truecolor", "48;2;48;48;48", "48;5;"),
    ],
)
def test_colours_in_256_colours_and_in_true_colour(
    tmp_path: Path, colorterm: str, panel: str, other: str
) -> None:
    """Over SSH a terminal often says only xterm-256color: the window then draws with the
    256-colour palette alone, and with 24-bit colours when COLORTERM says so."""
    env = {"TERM": "xterm-256color", "COLORTERM": colorterm}
    with mm_in_tmux(tmp_path, f"colours-{colorterm or '256'}", "--demo", env=env) as session:
        screen = screen_of(session, escapes=True)
        assert panel in screen  # the header's background
        assert other not in screen and ("38;2;" in screen) == bool(colorterm)


def test_a_terminal_without_utf_8_gets_ascii(tmp_path: Path) -> None:
    """`LC_ALL=C` with `PYTHONUTF8=0`: the window draws its boxes and marks in ASCII, in the
    same cells (it used to paint `\\u256d\\u2500`)."""
    env = {"TERM": "xterm-256color", "LC_ALL": "C", "PYTHONUTF8": "0"}
    with mm_in_tmux(tmp_path, "ascii", "--demo", env=env) as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")

        def drawn(screen: str) -> bool:  # the recap, the tool line's mark and time, the prompt
            lines = [line.rstrip() for line in screen.splitlines() if "> bash  ls -la" in line]
            # the mark in ASCII, then the time (the first command also starts mm's launcher
            # process: on a loaded machine that takes a tenth of a second or more)
            mark = bool(lines) and re.search(r" v \d+\.\ds$", lines[0]) is not None
            done = mark and "command(s)" in screen
            return done and "+- > Enter to send * Shift+Enter new line * /help ---" in screen

        screen = until_screen(session, drawn, "the finished turn, in ASCII", timeout=15)
        assert "\\u" not in screen, screen


def test_a_run_never_touches_the_default_tmux_server(tmp_path: Path) -> None:
    """The default tmux server is the person's, where their sessions live: a run of the tests
    creates no session there (its tmux runs on a server of its own, which is gone at the end).
    A shared server also failed tests: one test's last session closing it under another's
    `new-session` (`server exited unexpectedly`)."""
    sockets = tmp_path / "sockets"  # where tmux puts its sockets, the default one among them
    sockets.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}  # $TMUX would name another
    env["TMUX_TMPDIR"] = str(sockets)
    person = ["tmux", "-f", os.devnull]
    started = subprocess.run([*person, "new-session", "-d", "-s", "mine", "sleep 600"], env=env)
    assert started.returncode == 0
    try:
        here = Path(__file__)
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-k",
                "burst",
                str(here),
            ],
            env=env,
            cwd=here.parents[2],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr
        listed = subprocess.run(
            [*person, "list-sessions", "-F", "#{session_name}"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert listed.stdout.split() == ["mine"]  # the person's session, and no other
        left = sorted(p.name for p in (sockets / f"tmux-{os.getuid()}").iterdir())
        assert left == ["default"], left  # the run's own server went with it
    finally:
        subprocess.run([*person, "kill-server"], env=env, capture_output=True)
