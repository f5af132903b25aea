"""Line mode's line editing: Up/Down recall the requests of this run and of earlier ones (readline,
a history file in mm's state folder), and a damaged history file costs the persisting, never
line mode. The end-to-end tests drive the real `mm --demo --line` in tmux."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.terminal import mm_in_tmux, screen_of, session_exists, tmux, until_screen
from support.waiting import await_until, wait_until

from mm_tui.core.redact import MARK, Redactor
from mm_tui.line.history import LineHistory, history_path, read_history, readline_prompt
from mm_tui.line.repl import KeyboardReader

readline = pytest.importorskip("readline")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def history(path: Path | None, limit: int = 1000) -> tuple[LineHistory, list[str]]:
    warnings: list[str] = []
    return LineHistory(readline, path, limit=limit, warn=warnings.append), warnings


# --------------------------------------------------------------------------- the history file


def test_requests_are_kept_across_runs_without_blanks_or_repeats(tmp_path: Path) -> None:
    path = tmp_path / "state" / "mm" / "line_history"
    first, warnings = history(path)
    for line in ["list the files", "", "   ", "list the files", "fix the typo", "/quit"]:
        first.add(line)
    assert first.entries() == ["list the files", "fix the typo"]
    assert path.read_text() == "list the files\nfix the typo\n"
    assert path.stat().st_mode & 0o777 == 0o600
    second, _ = history(path)  # the next run
    assert second.entries() == ["list the files", "fix the typo"]
    second.add("list the files")  # not a repeat of the last one: kept
    assert history(path)[0].entries() == ["list the files", "fix the typo", "list the files"]
    assert warnings == []


def test_a_newline_and_a_backslash_survive_the_file(tmp_path: Path) -> None:
    path = tmp_path / "line_history"
    history(path)[0].add("grep 'a\\nb' x.py\nand then\\")
    assert path.read_text() == "grep 'a\\\\nb' x.py\\nand then\\\\\n"
    assert history(path)[0].entries() == ["grep 'a\\nb' x.py\nand then\\"]


def test_the_history_is_capped_and_the_file_cut_back(tmp_path: Path) -> None:
    path = tmp_path / "line_history"
    h, _ = history(path, limit=3)
    for n in range(5):
        h.add(f"request {n}")
    assert h.entries() == ["request 2", "request 3", "request 4"]
    assert len(path.read_text().splitlines()) == 5  # appended to, cut back at the next start
    assert history(path, limit=3)[0].entries() == ["request 2", "request 3", "request 4"]
    assert path.read_text() == "request 2\nrequest 3\nrequest 4\n"


def test_garbage_in_the_history_file_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "line_history"
    path.write_bytes(b"\xff\xfe\x00\x01binary\nlist the files\n\x80\x81\x82\nnul\x00here\n\n")
    h, warnings = history(path)
    assert h.entries() == ["list the files"]
    h.add("fix the typo")
    assert read_history(path)[0] == ["list the files", "fix the typo"]
    assert warnings == []


def test_a_history_file_that_cannot_be_read_or_written_costs_only_the_persisting(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "line_history"
    folder.mkdir()  # a folder where the file should be: neither readable nor writable as one
    h, warnings = history(folder)
    assert len(warnings) == 1 and str(folder) in warnings[0]
    h.add("list the files")
    h.add("fix the typo")
    assert h.entries() == ["list the files", "fix the typo"]  # this run still recalls
    assert len(warnings) == 1

    later = tmp_path / "later" / "line_history"
    h, warnings = history(later)  # no file yet: nothing to say
    assert warnings == []
    later.mkdir(parents=True)  # then a folder takes its place
    h.add("list the files")
    h.add("fix the typo")
    assert h.entries() == ["list the files", "fix the typo"]
    assert len(warnings) == 1 and str(later) in warnings[0]

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    h, warnings = history(blocked / "mm" / "line_history")  # under a file: no such folder
    h.add("list the files")
    assert h.entries() == ["list the files"]
    assert len(warnings) == 1


def test_a_history_path_that_is_no_regular_file_is_not_read(tmp_path: Path) -> None:
    """A FIFO would block the start for ever, /dev/zero never end."""
    fifo = tmp_path / "line_history"
    os.mkfifo(fifo)
    h, warnings = history(fifo)
    assert h.entries() == [] and len(warnings) == 1
    h, warnings = history(Path("/dev/zero"))
    assert h.entries() == [] and len(warnings) == 1


# --------------------------------------------------------------------------- the file as a target

KEY = "sk-pasted-0123456789abcdef"
BASHRC = b"# the person's own shell start-up\nalias ll='ls -l'\n"


def test_a_pasted_key_is_kept_redacted(tmp_path: Path) -> None:
    path = tmp_path / "line_history"
    warnings: list[str] = []
    redact = Redactor([KEY], environ={}).text
    h = LineHistory(readline, path, warn=warnings.append, redact=redact)
    h.add(f"use the key {KEY} to call the API")
    assert path.read_bytes() == f"use the key {MARK} to call the API\n".encode()
    assert KEY.encode() not in path.read_bytes() and warnings == []


def planted_link(tmp_path: Path) -> tuple[Path, Path]:
    """The history's path made a link to a file of the person's (`bashrc` in the test's home),
    as a command the model ran could make it."""
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_bytes(BASHRC)
    path = tmp_path / "state" / "mm" / "line_history"
    path.parent.mkdir(parents=True)
    path.symlink_to(bashrc)
    return path, bashrc


def test_a_link_planted_at_the_history_is_never_followed(tmp_path: Path) -> None:
    path, bashrc = planted_link(tmp_path)
    h, warnings = history(path)
    assert h.entries() == []  # the target is not read either
    h.add("echo pwned")
    h.add("and again")
    assert bashrc.read_bytes() == BASHRC
    assert path.is_symlink()
    assert len(warnings) == 1 and "symbolic link" in warnings[0], warnings


def test_a_link_planted_during_the_run_is_never_followed(tmp_path: Path) -> None:
    path = tmp_path / "line_history"
    h, warnings = history(path)
    h.add("list the files")
    bashrc = tmp_path / ".bashrc"
    bashrc.write_bytes(BASHRC)
    path.unlink()
    path.symlink_to(bashrc)  # between two requests
    h.add("echo pwned")
    h.add("and again")
    assert bashrc.read_bytes() == BASHRC
    assert len(warnings) == 1 and "symbolic link" in warnings[0], warnings
    assert h.entries() == ["list the files", "echo pwned", "and again"]  # the run still recalls


def test_a_hard_link_to_another_file_is_refused(tmp_path: Path) -> None:
    bashrc = tmp_path / ".bashrc"
    bashrc.write_bytes(BASHRC)
    path = tmp_path / "line_history"
    os.link(bashrc, path)
    h, warnings = history(path)
    h.add("echo pwned")
    assert bashrc.read_bytes() == BASHRC and h.entries() == ["echo pwned"]
    assert len(warnings) == 1 and "other names" in warnings[0], warnings


def test_a_fifo_put_in_place_during_the_run_neither_blocks_nor_is_written(tmp_path: Path) -> None:
    """A FIFO with a reader at its other end opens for writing: only a look at what was opened
    refuses it."""
    path = tmp_path / "line_history"
    h, warnings = history(path)
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        h.add("echo pwned")
        with contextlib.suppress(BlockingIOError):
            assert os.read(reader, 100) == b""
    finally:
        os.close(reader)
    assert len(warnings) == 1 and "not a regular file" in warnings[0], warnings
    h.add("nothing more")  # the history is off: nothing is opened again
    assert len(warnings) == 1


def test_the_history_lives_in_the_xdg_state_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "/somewhere/state")
    assert history_path() == Path("/somewhere/state/mm/line_history")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert history_path() == Path("/home/someone/.local/state/mm/line_history")


def test_escape_codes_of_a_prompt_take_no_room_for_readline() -> None:
    assert readline_prompt("› ") == "› "
    assert readline_prompt("\x1b[1;36m›\x1b[0m ") == "\x01\x1b[1;36m\x02›\x01\x1b[0m\x02 "


# --------------------------------------------------------------------------- the real program


def until(session: str, condition: Callable[[str], bool], what: str, timeout: float = 30) -> str:
    """The whole pane once `condition` holds, scrollback included: two turns of `ls -la` fill
    more than one screen."""
    return until_screen(session, condition, what, timeout, scrollback=True)


def prompt_line(screen: str) -> str:
    return screen.rstrip("\n").splitlines()[-1]


@contextlib.contextmanager
def line_mode(tmp_path: Path, name: str, *flags: str) -> Iterator[str]:
    """`mm --demo --line` in a 100x30 tmux session, its state folder in `tmp_path`, up to its
    first prompt; yields the session's name and kills it at the end."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
    with mm_in_tmux(tmp_path, f"line-{name}", "--demo", "--line", *flags, env=env) as session:
        yield session


@needs_tmux
def test_up_recalls_earlier_requests_in_this_run_and_the_next(tmp_path: Path) -> None:
    history_file = tmp_path / "state" / "mm" / "line_history"
    with line_mode(tmp_path, "recall", "--no-yolo") as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")
        until_screen(session, "🔐 allow bash  ls -la?")
        tmux("send-keys", "-t", session, "s", "Enter")  # a permission answer: not a request
        until(session, lambda s: "command(s)" in s and prompt_line(s) == "›", "the first turn")
        tmux("send-keys", "-t", session, "Up")
        until(session, lambda s: prompt_line(s) == "› list the files", "Up recalling it")
        tmux("send-keys", "-t", session, "Enter")  # sent again
        until(session, lambda s: s.count("command(s)") == 2, "the second turn")
        assert history_file.read_text() == "list the files\n"
        tmux("send-keys", "-t", session, "/quit", "Enter")
        until(session, lambda s: not session_exists(session), "mm quitting", 10)

    with line_mode(tmp_path, "recall-again") as session:  # a new process, the same state folder
        tmux("send-keys", "-t", session, "Up")
        until(session, lambda s: prompt_line(s) == "› list the files", "Up recalling it")
        tmux("send-keys", "-t", session, "Enter")
        until(session, lambda s: "command(s)" in s, "the recalled request running")


@needs_tmux
def test_a_broken_history_file_does_not_stop_line_mode(tmp_path: Path) -> None:
    (tmp_path / "state" / "mm" / "line_history").mkdir(parents=True)  # a folder in the way
    with line_mode(tmp_path, "broken") as session:
        screen = until_screen(session, "history not kept")
        assert "Traceback" not in screen
        tmux("send-keys", "-t", session, "list the files", "Enter")
        until(session, lambda s: "command(s)" in s, "the turn")
        tmux("send-keys", "-t", session, "Up")
        until(session, lambda s: prompt_line(s) == "› list the files", "Up recalling it")


@needs_tmux
def test_line_mode_keeps_a_pasted_key_out_of_its_history(tmp_path: Path) -> None:
    history_file = tmp_path / "state" / "mm" / "line_history"
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color", "MM_API_KEY": KEY}
    with mm_in_tmux(tmp_path, "line-key", "--demo", "--line", env=env) as session:
        tmux("send-keys", "-t", session, "-l", f"my key is {KEY}")
        tmux("send-keys", "-t", session, "Enter")
        assert wait_until(history_file.exists, 30), screen_of(session)
        until(session, lambda s: prompt_line(s) == "›", "the turn's end")
    assert history_file.read_bytes() == f"my key is {MARK}\n".encode()


@needs_tmux
@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_line_mode_never_follows_what_is_planted_at_its_history(
    tmp_path: Path, planted: str
) -> None:
    """A link to a file of the person's (`bashrc` in the test's home) or a FIFO at the history's
    path: line mode starts, says the history is off, runs requests, and the target's bytes are
    what they were."""
    path, bashrc = planted_link(tmp_path)
    if planted == "fifo":
        path.unlink()
        os.mkfifo(path)
    with line_mode(tmp_path, f"planted-{planted}") as session:
        screen = until_screen(session, "history not kept")
        assert "Traceback" not in screen
        tmux("send-keys", "-t", session, "list the files", "Enter")
        until(session, lambda s: "command(s)" in s and prompt_line(s) == "›", "the turn")
        tmux("send-keys", "-t", session, "Up")
        until(session, lambda s: prompt_line(s) == "› list the files", "Up recalling it")
    assert bashrc.read_bytes() == BASHRC
    assert path.is_symlink() if planted == "link" else stat.S_ISFIFO(path.lstat().st_mode)


@needs_tmux
def test_the_diff_of_an_edit_is_coloured_in_a_terminal(tmp_path: Path) -> None:
    with line_mode(tmp_path, "diff", "--no-yolo") as session:
        tmux("send-keys", "-t", session, "fix the typo in greet.py", "Enter")
        until_screen(session, "🔐 allow")
        screen = screen_of(session, escapes=True)
        added = next(line for line in screen.splitlines() if "+    return" in line)
        removed = next(line for line in screen.splitlines() if "-    return" in line)
        assert "\x1b[32m" in added and "\x1b[31m" in removed, screen


@needs_tmux
def test_a_request_typed_after_a_cancelled_question_is_not_lost(tmp_path: Path) -> None:
    """Ctrl-C while a permission question waits cancels the turn; the question's read used to
    stay in input() and swallow the next request typed."""
    with line_mode(tmp_path, "void", "--no-yolo") as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")
        until_screen(session, "🔐 allow bash  ls -la?")
        tmux("send-keys", "-t", session, "C-c")
        until(session, lambda s: prompt_line(s) == "›", "the request prompt after the cancel")
        tmux("send-keys", "-t", session, "fix the typo in greet.py", "Enter")
        until(session, lambda s: "🔐 allow edit_file" in s, "the next request running")


async def test_a_line_typed_at_a_question_that_went_away_goes_to_the_next_reader(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The keyboard through a real pipe: the question's reader is cancelled while its thread
    waits in input(); the next reader gets the line, and knows at which prompt it was typed (an
    answer typed there is no request; a line typed after the next prompt showed is one)."""

    async def shown(prompt: str) -> None:
        """Until the keyboard has written `prompt` (to the captured stdout) since last asked."""
        said = ""

        def last() -> bool:
            nonlocal said
            said += capsys.readouterr().out
            return said.endswith(prompt)

        assert await await_until(last, 5), f"{prompt!r} never shown: {said!r}"

    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read_end, "r"))
    try:
        keyboard = KeyboardReader()
        asking = asyncio.create_task(keyboard.read("question? "))
        await shown("question? ")  # the question's thread waits in input()
        asking.cancel()
        os.write(write_end, b"a\n")  # typed as the question went away
        pending = keyboard._read
        assert pending is not None
        await asyncio.wait_for(asyncio.shield(pending), 5)
        assert await asyncio.wait_for(keyboard.read("› "), 5) == "a"
        assert keyboard.prompt_of_last == "question? "
        # the next read shows its own prompt while the old one waits; a line then is its own
        asking = asyncio.create_task(keyboard.read("question? "))
        await shown("question? ")
        asking.cancel()
        reading = asyncio.create_task(keyboard.read("› "))
        await shown("\n› ")  # the next reader said its prompt: what is typed now is for it
        os.write(write_end, b"list the files\n")
        assert await asyncio.wait_for(reading, 5) == "list the files"
        assert keyboard.prompt_of_last == "› "
    finally:
        os.close(write_end)


@needs_tmux
def test_ctrl_c_at_the_prompt_redraws_it_with_what_was_typed(tmp_path: Path) -> None:
    """Ctrl-C at an idle prompt prints how to quit, then the `›` again with the text typed so
    far (readline still holds it): the next key does not land on a line without a prompt."""
    with line_mode(tmp_path, "ctrl-c") as session:
        tmux("send-keys", "-t", session, "-l", "half typed")
        until(session, lambda s: prompt_line(s) == "› half typed", "the text typed")
        tmux("send-keys", "-t", session, "C-c")
        until(session, lambda s: "(press Ctrl-C again or Ctrl-D to quit)" in s, "the hint")
        until(session, lambda s: prompt_line(s) == "› half typed", "the prompt drawn again")
        tmux("send-keys", "-t", session, "C-u")
        until(session, lambda s: prompt_line(s) == "›", "the line cleared")
        tmux("send-keys", "-t", session, "-l", "/quit")
        tmux("send-keys", "-t", session, "Enter")
        until(session, lambda s: not session_exists(session), "mm quitting", 10)


@needs_tmux
def test_keys_typed_while_an_answer_streams_wait_for_the_next_prompt(tmp_path: Path) -> None:
    """Typing while the answer streams: the letters are not echoed into the middle of it;
    they wait, and show at the next prompt, where Enter sends them."""
    from support.scripted_server import SSE, Reply, ScriptedServer, text_chunks

    words = " ".join(f"word{n}" for n in range(60))
    slow = SSE([*text_chunks(words, 6)], delay=0.05)  # about three seconds of streaming
    with ScriptedServer(slow, Reply("second")) as server:
        env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
        args = ("--line", "--base-url", server.base_url, "--model", "m")
        with mm_in_tmux(tmp_path, "line-typeahead", *args, env=env) as session:
            tmux("send-keys", "-t", session, "-l", "go")
            tmux("send-keys", "-t", session, "Enter")
            until(session, lambda s: "word1 " in s, "the answer streaming")
            tmux("send-keys", "-t", session, "-l", "typed ahead")
            until(
                session,
                lambda s: "word59" in s and prompt_line(s) == "› typed ahead",
                "the answer's end, and the text at the next prompt",
            )
            screen = screen_of(session)
            answer = screen[screen.index("word0") : screen.index("word59")]
            assert "typed" not in answer, screen
            tmux("send-keys", "-t", session, "Enter")
            until(session, lambda s: "second" in s, "the typed request sent")
            assert server.requests[-1].messages[-1]["content"] == "typed ahead"


@needs_tmux
def test_p_keeps_a_rule_and_t_gives_the_model_a_reason(tmp_path: Path) -> None:
    with line_mode(tmp_path, "rules", "--no-yolo") as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")
        until_screen(session, '🔐 allow bash  ls -la?  [a] once  [s] this session  [p] rule "ls *"')
        tmux("send-keys", "-t", session, "p", "Enter")
        until_screen(session, "rule to allow in this project [ls *]:")
        tmux("send-keys", "-t", session, "Enter")  # the rule as offered
        saved = 'bash "ls *" is allowed from now on (saved to .mm/config.yaml)'
        until(session, lambda s: saved in s.replace("\n", ""), "the rule saved")
        until(session, lambda s: "command(s)" in s and prompt_line(s) == "›", "the first turn")
        tmux("send-keys", "-t", session, "list the files", "Enter")
        until(session, lambda s: s.count("command(s)") == 2, "the second turn, unasked")
        second = screen_of(session).rsplit("› list the files", 1)[1]
        assert "🛠️  bash: ls -la" in second and "🔐" not in second
        tmux("send-keys", "-t", session, "run the tests", "Enter")
        until(session, lambda s: "[t] say why  [n] never:" in s.replace("\n", ""), "the question")
        tmux("send-keys", "-t", session, "t", "Enter")
        until_screen(session, "why (the model reads it):")
        tmux("send-keys", "-t", session, "not now", "Enter")
        until(session, lambda s: "rejected by the user: not now" in s, "the reason given")
