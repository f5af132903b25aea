"""`/model` in line mode: the real `mm --line` in tmux on the scripted server (LM Studio's list,
a window per model) lists the models and switches to one, the conversation kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.model_list import model_server
from support.scripted_server import Reply
from support.terminal import mm_in_tmux, tmux, until_screen

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@needs_tmux
def test_model_lists_and_switches_in_line_mode(tmp_path: Path) -> None:
    with model_server(Reply("first answer"), Reply("second answer")) as server:
        env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
        flags = ("--line", "--base-url", server.base_url, "--model", "small-coder")
        with mm_in_tmux(tmp_path, "line-model", *flags, env=env) as session:
            tmux("send-keys", "-t", session, "hello", "Enter")
            until_screen(session, "first answer")
            tmux("send-keys", "-t", session, "/model", "Enter")
            screen = until_screen(session, "other  (context 8,192 tokens)")
            assert "* small-coder  (context 4,096 tokens)" in screen
            assert "  big-coder  (context 32,768 tokens)" in screen
            tmux("send-keys", "-t", session, "/model big-coder", "Enter")
            screen = until_screen(session, "context window: 32,768 tokens")
            assert "model: big-coder (was small-coder)" in screen
            tmux("send-keys", "-t", session, "and now?", "Enter")
            until_screen(session, "second answer")
            tmux("send-keys", "-t", session, "/model nothing", "Enter")
            until_screen(session, "the server offers no model nothing")
    last = server.requests[-1].body
    assert last["model"] == "big-coder"
    assert [m["content"] for m in last["messages"] if m["role"] == "user"] == ["hello", "and now?"]


@needs_tmux
def test_mode_in_line_mode(tmp_path: Path) -> None:
    """`/mode` lists the modes with the current one; `/mode plan` switches, said dimly; leaving
    plan mode says how to go on."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "TERM": "xterm-256color"}
    with mm_in_tmux(tmp_path, "line-mode", "--demo", "--line", "--mode", "ask", env=env) as session:
        tmux("send-keys", "-t", session, "/mode", "Enter")
        screen = until_screen(session, "modes (/mode NAME switches):")
        assert "* ask  a command or a file change asks first" in screen
        tmux("send-keys", "-t", session, "/mode plan", "Enter")
        until_screen(session, "mode: plan — the model looks and plans")
        tmux("send-keys", "-t", session, "/mode auto", "Enter")
        until_screen(session, "the plan stays in the conversation: ask to carry it out")
