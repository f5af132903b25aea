"""The real `mm --demo` in tmux, idle: no thread of it wakes while nothing happens (Textual's
input thread polled ten times a second; `window/quiet_input.py` sleeps until there is input),
and the keys still arrive: typed text, a lone Esc (which waits for the parser's deadline), and
after a suspend and a resume (the input thread stopped through its pipe, and started again)."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from support.terminal import (
    mm_in_tmux,
    mm_script,
    screen_of,
    session_exists,
    tmux,
    tmux_session,
    until_screen,
)
from support.waiting import wait_until

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

ENV = {"TERM": "xterm-256color"}
WINDOW = 1.0  # seconds of a span whose wake-ups are counted
TRIES = 20  # spans: the loading threads of ready end within the first few


def pane_pid(session: str) -> int:
    return int(tmux("display", "-p", "-t", session, "#{pane_pid}").stdout.strip())


def sleeps(pid: int) -> dict[str, int]:
    """Each thread of `pid` and the times it went to sleep and was woken, so far."""
    found = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        found[task] = int(line.split()[1])
        except OSError:  # a thread that ended meanwhile
            pass
    return found


def wake_ups(before: dict[str, int], after: dict[str, int]) -> int:
    """The wake-ups between two counts: of the threads there at the second (a thread that
    ended meanwhile is left out; one that started counts whole)."""
    return sum(count - before.get(task, 0) for task, count in after.items())


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_an_idle_window_does_not_wake(tmp_path: Path) -> None:
    """Once ready and its loading threads done, an idle window sleeps: a span of a second with
    at most a couple of wake-ups comes (with Textual's polling input thread every second had
    ten at least, whatever the machine's load). The collector's check at FIRST_CHECK and the
    threads that load modules after ready may fill the first spans, hence several tries."""
    with mm_in_tmux(tmp_path, "idle", "--demo", env=ENV) as session:
        pid = pane_pid(session)
        counts = []
        for _ in range(TRIES):
            before = sleeps(pid)
            time.sleep(WINDOW)
            counts.append(wake_ups(before, sleeps(pid)))
            if counts[-1] <= 2:
                break
        assert counts[-1] <= 2, f"wake-ups per {WINDOW} s: {counts}"
        # and it still hears the keyboard at once
        tmux("send-keys", "-t", session, "-l", "still here")
        until_screen(session, "│ still here", "the text typed after the quiet")


def test_a_lone_escape_is_a_key(tmp_path: Path) -> None:
    """A lone Esc is a key only once the parser's deadline has passed with nothing after it:
    the input thread, which no longer polls, sleeps until that deadline. Esc closes the help."""
    with mm_in_tmux(tmp_path, "escape", "--demo", env=ENV) as session:
        tmux("send-keys", "-t", session, "-l", "/help")
        until_screen(session, "│ /help", "the command in the prompt")
        tmux("send-keys", "-t", session, "Enter")
        until_screen(session, "close this help", "the help")
        tmux("send-keys", "-t", session, "Escape")
        until_screen(session, lambda s: "close this help" not in s, "the help closed")
        assert "Type a request" in screen_of(session)


def test_keys_arrive_after_a_suspend_and_a_resume(tmp_path: Path) -> None:
    """SIGTSTP stops the window (Textual stops its input thread, which the stop wakes through
    its pipe, closes the driver, then stops the process) and SIGCONT brings it back with a new
    input thread: typing works again, and Ctrl+Q still quits. mm runs under a shell, as a
    person's: exec'd as the pane's first process it was never stopped (neither before)."""
    script = mm_script(tmp_path, "--demo", env=ENV)
    assert "&& exec " in script
    with tmux_session("suspend", script.replace("&& exec ", "&& ")) as session:
        until_screen(session, "Type a request")
        with open(f"/proc/{pane_pid(session)}/task/{pane_pid(session)}/children") as children:
            pid = int(children.read().split()[0])
        os.kill(pid, signal.SIGTSTP)  # what a shell's Ctrl+Z sends (the window reads the key)
        assert wait_until(lambda: state(pid) == "T", timeout=20), "mm not stopped by SIGTSTP"
        os.kill(pid, signal.SIGCONT)
        assert wait_until(lambda: state(pid) != "T", timeout=20), "mm not running again"
        tmux("send-keys", "-t", session, "-l", "after resume")
        until_screen(session, "│ after resume", "the text typed after the resume")
        tmux("send-keys", "-t", session, "C-q")
        until_screen(session, lambda _: not session_exists(session), "mm quitting", 20)


def test_a_byte_that_is_not_utf_8_does_not_end_the_window(tmp_path: Path) -> None:
    """A terminal's 8-bit Meta, or a paste of raw bytes: Textual's input thread raised
    UnicodeDecodeError at such a byte, and the window panicked and closed. It is U+FFFD now,
    and what follows is typed as ever."""
    with mm_in_tmux(tmp_path, "not-utf-8", "--demo", env=ENV) as session:
        tmux("send-keys", "-t", session, "-H", "ff")
        tmux("send-keys", "-t", session, "-l", "typed after")
        until_screen(session, "│ \ufffdtyped after", "the text after the byte")
        assert session_exists(session)
