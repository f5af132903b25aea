"""`/undo` in line mode: the real `mm --line` in tmux on the scripted server; a turn's command
changes files, /undo prints the plan and asks, n keeps the files, y puts them back, and the
model is told with the next request."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.scripted_server import Reply, ScriptedServer, call
from support.terminal import mm_in_tmux, tmux, until_screen

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

SCRIPT = "cd sub && echo changed >> notes.txt && rm keep.txt && echo x > made.txt"


@needs_tmux
def test_undo_shows_the_plan_asks_and_restores(tmp_path: Path) -> None:
    sub = tmp_path / "sub"  # the working folder is HOME too, whose own files are guarded
    sub.mkdir()
    (sub / "notes.txt").write_text("first\n")
    (sub / "keep.txt").write_text("keep me\n")
    with ScriptedServer() as server:
        server.script(
            Reply(tool_calls=[call("bash", {"command": SCRIPT})]),
            Reply("changed them"),
            Reply("ok"),
        )
        env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
        flags = ("--line", "--yolo", "--base-url", server.base_url)
        with mm_in_tmux(tmp_path, "line-undo", *flags, env=env) as session:
            tmux("send-keys", "-t", session, "change the files", "Enter")
            screen = until_screen(session, "changed them")
            assert not (sub / "keep.txt").exists(), screen
            tmux("send-keys", "-t", session, "/undo", "Enter")
            screen = until_screen(session, "change the files? [y/N]")
            assert "/undo the last turn: the files as they were before turn 1" in screen
            assert "  bring back sub/keep.txt" in screen
            assert "  delete     sub/made.txt" in screen
            assert "  restore    sub/notes.txt" in screen
            tmux("send-keys", "-t", session, "n", "Enter")
            until_screen(session, "/undo: the files are kept as they are")
            assert (sub / "made.txt").exists()
            tmux("send-keys", "-t", session, "/undo", "Enter")
            until_screen(session, "change the files? [y/N]")
            tmux("send-keys", "-t", session, "y", "Enter")
            until_screen(session, "undo: undone (1 turn): 1 restored, 1 brought back, 1 deleted")
            assert (sub / "keep.txt").read_text() == "keep me\n"
            assert (sub / "notes.txt").read_text() == "first\n"
            assert not (sub / "made.txt").exists()
            tmux("send-keys", "-t", session, "/undo 7", "Enter")
            until_screen(session, "/undo: no turn to undo")
            tmux("send-keys", "-t", session, "and now?", "Enter")
            until_screen(session, "ok")
            server.wait_for_requests(3, timeout=30)  # "ok" is on the screen before ("tokens")
    user = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert user[-1].startswith("[mm: the person ran /undo")
    assert user[-1].endswith("\n\nand now?")
