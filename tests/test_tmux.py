"""The real `mm --demo` in a real terminal (tmux, 100×30): type a request, wait for the ✓ and
the recap, read them back with capture-pane."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_for(session: str, needle: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-t", session, "-p")
        if needle in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the screen was:\n{screen}")


@contextlib.contextmanager
def demo_in_tmux(tmp_path: Path, name: str, env: str = "TERM=xterm-256color") -> Iterator[str]:
    """`mm --demo` in a 100x30 tmux session with `env`, up to its first prompt; yields the
    session's name and kills it at the end."""
    session = f"mm-{name}-{os.getpid()}"
    mm = Path(sys.executable).parent / "mm"
    command = f"cd {tmp_path} && HOME={tmp_path} {env} {mm} --demo"
    tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command)
    try:
        wait_for(session, "Type a request")
        yield session
    finally:
        tmux("kill-session", "-t", session)


def test_demo_in_a_real_terminal(tmp_path: Path) -> None:
    session = f"mm-test-{os.getpid()}"
    mm = Path(sys.executable).parent / "mm"
    command = f"cd {tmp_path} && HOME={tmp_path} TERM=xterm-256color {mm} --demo"
    tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command)
    try:
        wait_for(session, "mm [mm] · demo @ demo")
        wait_for(session, "Type a request")
        tmux("send-keys", "-t", session, "-l", "list the files")
        time.sleep(0.3)
        tmux("send-keys", "-t", session, "Enter")
        screen = wait_for(session, "command(s)")
        assert "‣ bash  ls -la" in screen
        line = next(line for line in screen.splitlines() if "‣ bash  ls -la" in line)
        assert "✓" in line
        assert "── ⚙ 1 command(s) · " in screen
        tmux("send-keys", "-t", session, "C-c")
        time.sleep(0.2)
        tmux("send-keys", "-t", session, "C-c")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and session in tmux("list-sessions"):
            time.sleep(0.2)
        assert session not in tmux("list-sessions"), "mm did not quit on Ctrl+C twice"
    finally:
        tmux("kill-session", "-t", session)


def test_text_and_enter_in_one_burst_are_sent(tmp_path: Path) -> None:
    """A paste, SSH's batching or `tmux send-keys "text" Enter`: the Enter arrives in the same
    read as the text, and must send it (it was dropped: the text stayed in the prompt)."""
    with demo_in_tmux(tmp_path, "burst") as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")
        screen = wait_for(session, "command(s)", timeout=15)
        assert "› list the files" in screen
        assert "‣ bash  ls -la" in screen


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
    env = f"TERM=xterm-256color COLORTERM={colorterm}"
    with demo_in_tmux(tmp_path, f"colours-{colorterm or '256'}", env) as session:
        screen = tmux("capture-pane", "-t", session, "-p", "-e")
        assert panel in screen  # the header's background
        assert other not in screen and ("38;2;" in screen) == bool(colorterm)


def test_a_terminal_without_utf_8_gets_ascii(tmp_path: Path) -> None:
    """`LC_ALL=C` with `PYTHONUTF8=0`: the window draws its boxes and marks in ASCII, in the
    same cells (it used to paint `\\u256d\\u2500`)."""
    with demo_in_tmux(tmp_path, "ascii", "LC_ALL=C PYTHONUTF8=0") as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")
        wait_for(session, "command(s)", timeout=15)
        time.sleep(0.5)  # the frame after the recap's: everything drawn
        screen = tmux("capture-pane", "-t", session, "-p")
        assert "\\u" not in screen, screen
        assert "+- > Enter to send * Shift+Enter new line * /help ---" in screen
        line = next(line for line in screen.splitlines() if "> bash  ls -la" in line)
        assert line.rstrip().endswith(" v 0.0s"), screen
