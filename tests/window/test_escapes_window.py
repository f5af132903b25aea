"""No escape sequence from a model, a tool, a page or a file reaches the terminal raw in window
mode. Run headless, Textual writes nothing; what it would write is the screen's full update,
rendered here by Textual's own code (`render_full_update().render_segments`): that string, with
Textual's own escape sequences in it, is searched for each payload next to its escape."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from support.escapes import OSC52, SOURCES, SPOOF, TITLE
from support.scripted_server import Reply, ScriptedServer, call
from support.terminal import mm_script, screen_of, tmux, tmux_session, until_screen
from support.waiting import until
from support.window_helpers import settle, started_app
from textual import events

from mm_tui.window.app import MMApp
from mm_tui.window.transcript.store import ThoughtItem
from mm_tui.window.widgets.agent_header import AgentHeader
from mm_tui.window.widgets.permission import PermissionBox


def written(app: MMApp) -> str:
    """What Textual would write to the terminal to draw the whole screen now."""
    update = app.screen._compositor.render_full_update()
    return update.render_segments(app.console)


def segment_texts(app: MMApp) -> str:
    """The text of every segment the screen is drawn from (Textual's own style codes aside)."""
    strips = app.screen._compositor.render_strips()
    return "".join(text for strip in strips for text, _, control in strip if not control)


def visible(text: str) -> str:
    return text.replace("\x1b", "\\x1b").replace("\x07", "\\x07")


async def type_and_send(pilot, text: str) -> None:  # noqa: ANN001
    await pilot.press(*text)
    await pilot.press("enter")


def assert_nothing_raw(app: MMApp) -> str:
    """No escape, BEL or C1 control from the content in what is drawn; the screen's text."""
    texts = segment_texts(app)
    bad = [hex(ord(c)) for c in texts if c in "\x1b\x07" or "\x80" <= c <= "\x9f"]
    assert not bad, bad
    out = written(app)
    assert "\x07" not in out
    assert not [c for c in out if "\x80" <= c <= "\x9f"]
    for escape in ("\x1b]52;", "\x1b]0;", "\x1b[2K", "\x1b[1A"):
        assert escape not in out, escape
    return texts


async def test_every_source_is_drawn_escaped(folder: Path) -> None:
    """bash's output, a file's text, a command, a file name, the answer and the reasoning, each
    with its own OSC 52 or title payload and C1 controls: the window, its tool outputs and
    the reasoning open, draws each payload's visible form and none of it raw. The model name
    (a server's word when mm detects it) too, in the header."""
    p = SOURCES
    name = f"notes{TITLE.format(p['a file name'])}.txt"
    (folder / name).write_text(f"file says {OSC52.format(p['read_file output'])}\x9b2J\n")
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
        app = started_app(server.base_url, folder)
        async with app.run_test(size=(200, 60)) as pilot:
            await settle(pilot, app)
            app.query_one(AgentHeader).show(
                title="mm", model="m\x1b]0;MODEL\x07", provider="p\x9b2J", cwd="/x", mode="auto"
            )
            await type_and_send(pilot, "go")
            await settle(pilot, app)
            await pilot.press("tab", "ctrl+o")  # every tool output open
            (thought,) = [i for i in app.main.transcript.items if isinstance(i, ThoughtItem)]
            app.main.transcript.toggle(thought)  # the reasoning open
            app.main.view.update_items([thought])
            await settle(pilot, app)
            texts = assert_nothing_raw(app)
    for source, payload in p.items():
        form = TITLE if source in {"a file name", "a tool argument"} else OSC52
        assert visible(form.format(payload)) in texts, source
    for shown in ("\\x9d0;t\\x9c", "\\x9b31m red", "\\x9b2J", "\\x1b]0;MODEL\\x07", "p\\x9b2J"):
        assert shown in texts, shown


async def test_a_spoofed_command_shows_whole_in_the_permission_box(folder: Path) -> None:
    """The command that erases its own line and writes `ls -la` over it: the box shows
    `rm -f important.txt` and every escape as `\\x1b`, none reaches the terminal, and `r` keeps
    the file."""
    (folder / "important.txt").write_text("keep me\n")
    with ScriptedServer() as server:
        server.script(Reply(tool_calls=[call("bash", {"command": SPOOF})]), Reply("ok"))
        app = started_app(server.base_url, folder, yolo=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await type_and_send(pilot, "tidy up")
            await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
            await settle(pilot, app, idle=False)
            box = app.screen.query_one(PermissionBox)
            details = str(box.query_one("#details-text").render())
            assert (
                details == "rm -f important.txt; echo gone #\\x1b[2K\\x1b[1G\\x1b[1A\\x1b[2Kls -la"
            )
            texts = assert_nothing_raw(app)
            assert "rm -f important.txt; echo gone #\\x1b[2K" in texts
            await pilot.press("r")
            await settle(pilot, app)
    assert (folder / "important.txt").read_text() == "keep me\n"


async def test_a_paste_goes_into_the_prompt_visible(folder: Path) -> None:
    """A paste from a page or a terminal holding escapes: the prompt shows and sends them in
    their visible form, and draws none raw."""
    with ScriptedServer() as server:
        app = started_app(server.base_url, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            app.post_message(events.Paste(f"look {OSC52.format('UEFTVEU=')} x\x9b2J"))
            await until(lambda: "look" in app.main.prompt.text, "the paste", pilot=pilot)
            await settle(pilot, app)
            assert app.main.prompt.text == "look \\x1b]52;c;UEFTVEU=\\x07 x\\x9b2J"
            assert "\\x1b]52;c;UEFTVEU=" in assert_nothing_raw(app)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_window_in_a_real_terminal_keeps_its_title_and_shows_the_spoof(
    tmp_path: Path,
) -> None:
    """The real `mm` in tmux: a command's output that sets the window's title (OSC 0) leaves
    tmux's pane title alone once the output is opened, and the spoofed command shows whole in
    the permission box; `r` keeps the file. (Before, Rich dropped the BEL that ends the OSC and
    tmux took the rest of the frame, `MARK-2` included, for the title.)"""
    (tmp_path / "important.txt").write_text("keep me\n")
    retitle = (
        "printf '\\033]0;OWNED-BY-OUTPUT\\007\\033]2;OWNED-BY-OUTPUT\\007'; echo MARK-$((1+1))"
    )
    with ScriptedServer() as server:
        server.script(
            Reply(tool_calls=[call("bash", {"command": retitle})]),
            Reply("first done"),
        )
        env = {"MM_BASE_URL": server.base_url, "MM_MODEL": "m", "TERM": "xterm-256color"}
        script = mm_script(tmp_path, "--yolo", env=env)
        with tmux_session("escapes-window", script) as session:
            until_screen(session, "Enter to send", "the window")
            tmux("send-keys", "-t", session, "-l", "set the title")
            tmux("send-keys", "-t", session, "Enter")
            until_screen(session, "command(s)", "the first turn's recap")
            tmux("send-keys", "-t", session, "C-o")  # every output open
            until_screen(session, "MARK-2", "the output, open")
            title = tmux("display-message", "-p", "-t", session, "#{pane_title}").stdout
            assert "OWNED" not in title
            assert "\\x1b]0;OWNED-BY-OUTPUT\\x07" in screen_of(session)
    # a second run asks (--no-yolo): the question shows what runs
    with ScriptedServer() as server:
        server.script(Reply(tool_calls=[call("bash", {"command": SPOOF})]), Reply("ok"))
        env = {"MM_BASE_URL": server.base_url, "MM_MODEL": "m", "TERM": "xterm-256color"}
        script = mm_script(tmp_path, "--no-yolo", env=env)
        with tmux_session("escapes-box", script) as session:
            until_screen(session, "Enter to send", "the window")
            tmux("send-keys", "-t", session, "-l", "tidy up")
            tmux("send-keys", "-t", session, "Enter")
            until_screen(session, "allow bash this session", "the permission box")
            shown = "rm -f important.txt; echo gone #\\x1b[2K\\x1b[1G\\x1b[1A\\x1b[2Kls -la"
            until_screen(session, shown, "the whole command in the box")
            # a/s/r/n answer once the box has been up a moment without typing (a key at once
            # would be taken for typing): the person reads it first
            time.sleep(0.6)  # window/widgets/permission.py's ARMED_AFTER, 0.5 s, in the real mm
            tmux("send-keys", "-t", session, "r")
            until_screen(session, "command(s)", "the recap")
    assert (tmp_path / "important.txt").read_text() == "keep me\n"


async def test_notices_headers_the_status_line_and_compactions_are_drawn_escaped(
    folder: Path,
) -> None:
    """A server's error, an asked agent's header (its model and provider are a server's
    words), a retry's reason in the status line, a compaction's summary (the model's) opened,
    a shortening notice, and the person's own request: all drawn with their escapes visible."""
    from mm_tui.core.events import (
        AgentStarted,
        EngineError,
        HistoryCompacted,
        HistoryShortened,
        ModelRetrying,
        TurnStarted,
    )
    from mm_tui.window.transcript.store import CompactionItem

    with ScriptedServer() as server:
        app = started_app(server.base_url, folder)
        async with app.run_test(size=(200, 60)) as pilot:
            await settle(pilot, app)
            for event in (
                TurnStarted(turn=1, text=f"my {TITLE.format('UkVRVUVTVA==')}"),
                EngineError(where="model", message=f"bad {OSC52.format('RVJST1I=')}"),
                AgentStarted(
                    agent="helper",
                    name="helper",
                    title="helper",
                    model=f"x{TITLE.format('Q0hJTEQ=')}",
                    provider="p\x9b2J",
                    asked_by="mm",
                ),
                HistoryShortened(outputs=1, chars_cut=9, message="cut \x9d0;SHORT\x9c"),
                HistoryCompacted(
                    summary=f"sum {OSC52.format('U1VNTUFSWQ==')}", replaced=2, auto=True
                ),
                ModelRetrying(attempt=1, attempts=5, delay=9, reason="busy \x1b]0;RETRY\x07"),
            ):
                app.main.emit(event)
            await until(lambda: "RETRY" in app.main.status.text, "the retry", pilot=pilot)
            (compaction,) = [i for i in app.main.transcript.items if isinstance(i, CompactionItem)]
            app.main.transcript.toggle(compaction)
            app.main.view.update_items([compaction])
            await settle(pilot, app, idle=False)
            texts = assert_nothing_raw(app)
    for shown in (
        visible(TITLE.format("UkVRVUVTVA==")),
        visible(OSC52.format("RVJST1I=")),
        visible(TITLE.format("Q0hJTEQ=")),
        "p\\x9b2J",
        "cut \\x9d0;SHORT\\x9c",
        visible(OSC52.format("U1VNTUFSWQ==")),
        "\\x1b]0;RETRY\\x07",
    ):
        assert shown in texts, shown
