"""Window mode through Pilot: every interaction of the issue, against a real engine."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.events import text_delta, tool_started
from support.processes import running
from support.scripted_model import ScriptedModel, call, say
from support.waiting import until
from support.window_helpers import all_text, make_app, painted, painted_soon, screen_text, settle
from textual.command import CommandList, CommandPalette
from textual.widgets import OptionList

from mm_tui.core.events import AgentFinished, AgentStarted, ToolCallFinished
from mm_tui.engine.demo import DemoModel
from mm_tui.window.app import MMApp
from mm_tui.window.screens.help import HelpScreen
from mm_tui.window.screens.sessions import SessionsScreen
from mm_tui.window.transcript.store import NoticeItem, RecapItem, ToolItem
from mm_tui.window.transcript.view import TranscriptView
from mm_tui.window.widgets.agent_header import AgentHeader
from mm_tui.window.widgets.key_bar import KeyBar
from mm_tui.window.widgets.permission import PermissionBox
from mm_tui.window.widgets.prompt import Prompt


async def type_and_send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def a_turn_running(pilot, app, text: str = "long") -> None:
    """`text` sent, and the turn it started running its first tool call."""
    await settle(pilot, app)
    await type_and_send(pilot, text)
    await until(
        lambda: tools(app) and app.engine is not None and app.engine.busy,
        "the turn's tool call",
        pilot=pilot,
    )


async def sent(pilot, app, text: str = "go") -> None:
    """The window up, `text` sent, and everything it started finished."""
    await settle(pilot, app)
    await type_and_send(pilot, text)
    await settle(pilot, app)


async def asked(pilot, app, text: str = "go") -> None:
    """`text` sent, and the permission question its tool call raised up."""
    await type_and_send(pilot, text)
    await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
    await settle(pilot, app, idle=False)


def two_bash_calls(second: str = "echo hi") -> ScriptedModel:
    """A model that runs `echo hi` in one turn and `second` in the next."""
    return ScriptedModel(
        call("bash", {"command": "echo hi"}),
        say("ok"),
        call("bash", {"command": second}, "c2"),
        say("ok"),
    )


def tools(app) -> list[ToolItem]:
    return [i for i in app.main.transcript.items if isinstance(i, ToolItem)]


async def test_a_request_runs_a_tool_line_to_done_with_the_recap(folder: Path) -> None:
    app = make_app(DemoModel(delay=0), folder, notes=("demo note",))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        header = app.screen.query_one(AgentHeader)
        assert (header.title_text, header.model, header.provider) == ("mm", "demo", "demo")
        assert "demo note" in screen_text(app)
        await type_and_send(pilot, "list the files")
        await settle(pilot, app)
        text = screen_text(app)
        assert "› list the files" in text
        assert "‣ bash  ls -la" in text and "✓" in text
        assert "── ⚙ 1 command(s) · 0.0s · " in text
        assert isinstance(app.main.transcript.items[-1], RecapItem)


async def test_fold_and_unfold_with_enter_click_and_ctrl_o(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "echo one; echo two"}), say("done"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, "go")
        await settle(pilot, app)
        (item,) = tools(app)
        assert item.folded and "    one" not in screen_text(app)
        # Keyboard: Tab to the transcript, Up selects the tool line, Enter opens it.
        await pilot.press("tab")
        assert isinstance(app.focused, TranscriptView)
        await pilot.press("up", "enter")
        await settle(pilot, app)
        assert not item.folded
        assert "    one\n    two" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot, app)
        assert item.folded
        # A click on the line opens it.
        view = app.main.view
        row = view.item_top(item) - int(view.scroll_y)
        await pilot.click(TranscriptView, offset=(5, row))
        await settle(pilot, app)
        assert not item.folded
        # Ctrl+O closes every output when one is open, opens them all otherwise.
        await pilot.press("ctrl+o")
        await settle(pilot, app)
        assert item.folded
        await pilot.press("ctrl+o")
        await settle(pilot, app)
        assert not item.folded


HEREDOC = "cat <<'EOF'\nline a\nline b\nEOF"


async def test_a_command_of_several_lines_keeps_its_tool_line_whole(folder: Path) -> None:
    """A heredoc's tool line is one row, waiting for its answer and done: its first line and
    how many more, the state at the right; unfolded, the rest of the command above the output.
    (A resumed session's lines are drawn by the same renderer.)"""
    model = ScriptedModel(call("bash", {"command": HEREDOC}), say("done"))
    app = make_app(model, folder, yolo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await asked(pilot, app, "go")
        rows = screen_text(app).splitlines()
        (row,) = [r for r in rows if r.startswith("‣ bash")]
        assert row.startswith("‣ bash  cat <<'EOF' … +3 lines") and "waiting for a/s/r/n" in row
        assert not any(r.startswith(("line a", "EOF")) for r in rows)  # nothing out of place
        await pilot.press("a")
        await settle(pilot, app)
        (item,) = tools(app)
        rows = screen_text(app).splitlines()
        (row,) = [r for r in rows if r.startswith("‣ bash")]
        assert row.startswith("‣ bash  cat <<'EOF' … +3 lines") and row.endswith("✓ 0.0s")
        await pilot.press("tab", "up", "enter")  # the transcript, the line, open it
        await settle(pilot, app)
        assert not item.folded
        text = screen_text(app)
        assert "    line a\n    line b\n    EOF\n    line a\n    line b" in text, text


@pytest.mark.parametrize(
    ("key", "status", "output"),
    [
        ("a", "ok", "hi\n"),
        ("s", "ok", "hi\n"),
        ("r", "rejected", "[command rejected by the user]"),
        ("n", "rejected", "[command rejected by the user]"),
    ],
)
async def test_permission_box_each_answer(folder: Path, key: str, status: str, output: str) -> None:
    model = two_bash_calls()
    app = make_app(model, folder, yolo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await asked(pilot, app, "go")
        box = app.screen.query_one(PermissionBox)
        assert box.has_class("-open") and box.has_focus
        assert "waiting for a/s/r/n" in screen_text(app)
        await pilot.press(key)
        await settle(pilot, app)
        (item,) = tools(app)
        assert (item.status, item.output) == (status, output)
        assert model.requests[1][-1]["content"] == output
        assert not box.has_class("-open")
        assert isinstance(app.focused, Prompt)
        # s and n are remembered: the second call does not ask.
        await type_and_send(pilot, "again")

        def second_call_asked_or_done() -> bool:
            second = tools(app)[1:]
            return app.main.box.request is not None or bool(second and not second[0].running)

        await until(second_call_asked_or_done, "the second call", pilot=pilot)
        await settle(pilot, app, idle=False)
        if key in "sn":
            await settle(pilot, app)
            assert app.main.box.request is None
            assert tools(app)[1].status == status
            assert app.engine.permissions.standing() == {"bash": {"s": "s", "n": "n"}[key]}
        else:
            assert app.main.box.request is not None
            await pilot.press("a")
            await settle(pilot, app)


async def test_typing_while_a_permission_box_is_up_goes_to_the_prompt(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A box that opens while the person types: `xyz` and `yes` land in the prompt (its `s` is
    no answer), a letter within half a second of the box opening is typing too; a/s/r/n on its
    own after a moment answers. Esc cancels at once, as it always does."""
    from mm_tui.window.widgets import permission

    monkeypatch.setattr(permission, "ARMED_AFTER", 0.5)
    model = two_bash_calls("echo again")
    app = make_app(model, folder, yolo=False)
    now = [0.0]
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        box = app.main.box  # mounted the first time it is wanted
        box.clock = lambda: now[0]
        await asked(pilot, app, "go")
        await pilot.press("r")  # the box opened a moment ago: typing, not a rejection
        now[0] += 0.2
        await pilot.press(*"xyz", "space", *"yes")
        await settle(pilot, app, idle=False)
        assert app.main.box.request is not None and box.has_focus
        assert app.main.prompt.text == "rxyz yes"
        assert app.engine.permissions.standing() == {}
        now[0] += 0.3  # still within half a second of the last key typed
        await pilot.press("a")
        await settle(pilot, app, idle=False)
        assert app.main.box.request is not None and app.main.prompt.text == "rxyz yesa"
        now[0] += 0.6  # a pause: the next a/s/r/n is an answer
        await pilot.press("a")
        await settle(pilot, app)
        (item,) = tools(app)
        assert (item.status, item.output) == ("ok", "hi\n")
        assert app.main.prompt.text == "rxyz yesa"  # what was typed is kept
        app.main.prompt.clear()
        await asked(pilot, app, "again")
        await pilot.press("escape")  # at once: the turn is cancelled, the call never ran
        await settle(pilot, app)
        assert tools(app)[1].status == "cancelled"
        assert tools(app)[1].output != "again\n"


async def test_the_permission_box_is_mounted_at_the_first_question(folder: Path) -> None:
    """No box in the first frame nor until a call asks (docs/performance.md); the first
    question mounts it between the transcript and the status line."""
    app = make_app(two_bash_calls(), folder, yolo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert not app.main.query(PermissionBox)
        await asked(pilot, app, "go")
        box = app.screen.query_one(PermissionBox)
        assert box.has_focus
        assert box.region.y == app.main.view.region.bottom
        assert box.region.bottom == app.main.status.region.y


@pytest.mark.parametrize("how", ["escape", "ctrl+c", "/abort"])
async def test_cancellation(folder: Path, how: str) -> None:
    model = ScriptedModel(call("bash", {"command": "echo started; sleep 30"}), say("after"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await a_turn_running(pilot, app)
        await until(lambda: running("sleep", "30"), "the command's sleep", pilot=pilot)
        if how in ("escape", "ctrl+c"):
            await pilot.press(how)
        else:
            await type_and_send(pilot, "/abort")
        await settle(pilot, app, timeout=10)
        item = tools(app)[0]
        assert item.status == "cancelled"
        assert item.output.endswith("[error: cancelled]")
        assert "⊘" in all_text(app)
        tool_messages = [m for m in app.engine.session.messages if m["role"] == "tool"]
        assert tool_messages[0]["content"].endswith("[error: cancelled]")


def sessions_listed(app: MMApp) -> bool:
    """The sessions screen is up, its list taking the keys."""
    return isinstance(app.screen, SessionsScreen) and isinstance(app.focused, OptionList)


def palette_text(app: MMApp) -> str:
    """The commands the command palette lists (empty when it is not open)."""
    if not isinstance(app.screen, CommandPalette):
        return ""
    listed = app.screen.query_one(CommandList)
    return "\n".join(str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count))


def highlighted(app: MMApp) -> str:
    """The command the palette would run on Enter (empty when none)."""
    if not isinstance(app.screen, CommandPalette):
        return ""
    listed = app.screen.query_one(CommandList)
    if listed.highlighted is None:
        return ""
    return str(listed.get_option_at_index(listed.highlighted).prompt)


def notices(app: MMApp) -> list[str]:
    return [i.text for i in app.main.transcript.items if isinstance(i, NoticeItem)]


async def test_a_request_sent_while_a_turn_runs_waits_for_its_end(folder: Path) -> None:
    model = ScriptedModel(
        call("bash", {"command": "sleep 3; echo done"}), say("first"), say("second")
    )
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await a_turn_running(pilot, app)
        await type_and_send(pilot, "and then this")
        assert "queued (a turn is running): and then this — Esc takes it back" in notices(app)
        assert app.engine.busy  # the running turn goes on
        await settle(pilot, app, timeout=10)
        await until(
            lambda: len(model.requests) == 3 and not app.engine.busy, "the 2nd turn", pilot=pilot
        )
        await settle(pilot, app)
        assert tools(app)[0].status == "ok"  # not cancelled
        assert model.requests[2][-1] == {"role": "user", "content": "and then this"}
        users = [m["content"] for m in app.engine.session.messages if m["role"] == "user"]
        assert users == ["long", "and then this"]
        assert "second" in all_text(app)


async def test_esc_takes_back_the_last_queued_request_then_cancels(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "sleep 30"}), say("after"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await a_turn_running(pilot, app)
        await type_and_send(pilot, "one")
        await type_and_send(pilot, "two")
        await pilot.press("escape")
        assert notices(app)[-1] == "taken back: two"
        assert app.engine.busy and app.main._queued == ["one"]
        await pilot.press("ctrl+c")  # cancels the turn and what waits behind it
        await settle(pilot, app, timeout=10)
        assert "taken back: 1 queued request(s)" in notices(app)
        assert tools(app)[0].status == "cancelled"
        assert len(model.requests) == 1  # neither queued request was sent


async def test_a_request_sent_before_the_engine_is_ready_runs_when_it_is(folder: Path) -> None:
    model = ScriptedModel(say("ready now"))
    app = make_app(model, folder)
    boot = app.boot
    gate = asyncio.Event()

    async def slow_boot():  # noqa: ANN202
        await gate.wait()
        return await boot()

    app.boot = slow_boot
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()  # the window up, its boot held at the gate
        assert app.engine is None
        await type_and_send(pilot, "early bird")
        assert "queued (mm is starting): early bird — Esc takes it back" in notices(app)
        gate.set()
        await until(lambda: model.requests and not app.engine.busy, "the queued turn", pilot=pilot)
        await settle(pilot, app)
        assert model.requests[0][-1] == {"role": "user", "content": "early bird"}
        assert "ready now" in all_text(app)


async def test_ctrl_c_twice_when_idle_quits(folder: Path) -> None:
    """With text in the prompt, Ctrl+C clears it first (as a shell does) and does not count
    towards quitting; then twice quits."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"half a request")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.main.prompt.text == "" and app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()  # handled, and mm is still there
        assert app.is_running and app.return_code is None
        await pilot.press("ctrl+c")
        await until(lambda: app.return_code is not None, "quitting", pilot=pilot)
    assert app.return_code == 0


@pytest.mark.slow  # three themes applied, and seven requests typed key by key: about 5 s
def test_the_app_gives_the_main_screen_what_its_commands_ask() -> None:
    """The screen may not import the app: what it asks of it is a protocol the app keeps."""
    from mm_tui.window.screens.main import WindowCommands

    assert isinstance(MMApp.__new__(MMApp), WindowCommands)


async def test_slash_commands(folder: Path) -> None:
    app = make_app(ScriptedModel(say("first answer")), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        # Completion as typed.
        await pilot.press(*"/he")
        assert app.main.prompt.suggestion == "lp"
        await pilot.press("tab")
        assert app.main.prompt.text == "/help"
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, HelpScreen), "the help screen", pilot=pilot)
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, HelpScreen), "closing the help", pilot=pilot)
        await type_and_send(pilot, "/theme mm-light")
        await until(lambda: app.theme == "mm-light", "the light theme", pilot=pilot)
        await type_and_send(pilot, "/theme ansi-dark")
        await until(lambda: app.theme == "ansi-dark", "the ANSI theme", pilot=pilot)
        await type_and_send(pilot, "/theme nope")
        await settle(pilot, app)
        assert "no theme named nope" in screen_text(app)
        await type_and_send(pilot, "hello")
        await settle(pilot, app)
        old = app.engine.session.id
        await type_and_send(pilot, "/new")
        await settle(pilot, app)
        assert app.engine.session.id != old
        assert "first answer" not in screen_text(app)
        await type_and_send(pilot, "/bogus")
        await settle(pilot, app)
        assert "unknown command /bogus" in screen_text(app)
        await type_and_send(pilot, "/quit")
        await until(lambda: app.return_code is not None, "quitting", pilot=pilot)
    assert app.return_code == 0


async def test_sessions_screen_reopens_a_session(folder: Path) -> None:
    app = make_app(ScriptedModel(say("remember me")), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, "the first session")
        await settle(pilot, app)
        first = app.engine.session.id
        await type_and_send(pilot, "/new")
        await settle(pilot, app)
        await type_and_send(pilot, "/sessions")
        await until(lambda: sessions_listed(app), "the sessions screen", pilot=pilot)
        await pilot.press("enter")  # the newest saved session is the first one
        await settle(pilot, app)
        assert app.engine.session.id == first
        assert app.engine.turn_number == 1  # the reopened session's own count
        text = screen_text(app)
        assert "› the first session" in text and "remember me" in text


async def test_history_walks_with_up_and_down(folder: Path) -> None:
    app = make_app(ScriptedModel(say("1"), say("2")), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, "first")
        await settle(pilot, app)
        await type_and_send(pilot, "second")
        await settle(pilot, app)
        await pilot.press(*"draft")
        await pilot.press("up")
        assert app.main.prompt.text == "second"
        await pilot.press("up")
        assert app.main.prompt.text == "first"
        await pilot.press("down")
        assert app.main.prompt.text == "second"
        await pilot.press("down")
        assert app.main.prompt.text == "draft"


async def test_shift_enter_and_ctrl_j_add_a_line(folder: Path) -> None:
    app = make_app(ScriptedModel(say("ok")), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("a", "ctrl+j", "b")
        assert app.main.prompt.text == "a\nb"
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.engine.session.messages[1]["content"] == "a\nb"


async def test_resize_to_80_by_24(folder: Path) -> None:
    app = make_app(DemoModel(delay=0), folder)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, "list the files")
        await settle(pilot, app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot, app)
        assert app.main.view.line_width == 80 - 2 - 2  # less the padding and the scrollbar
        lines = screen_text(app).splitlines()
        assert all(len(line) <= 80 for line in lines)
        assert any("‣ bash  ls -la" in line and line.rstrip().endswith("0.0s") for line in lines)


async def test_child_agent_events_nest_under_its_header(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        events = [
            AgentStarted(
                name="helper",
                title="reviewer",
                model="tiny",
                provider="Ollama",
                asked_by="mm",
                agent="helper",
            ),
            tool_started(call_id="k1", agent="helper"),
            ToolCallFinished(
                call_id="k1", tool="bash", status="ok", output="a\n", elapsed=0.2, agent="helper"
            ),
            text_delta("All good.", agent="helper"),
            AgentFinished(
                name="helper",
                title="reviewer",
                model="tiny",
                provider="Ollama",
                asked_by="mm",
                agent="helper",
            ),
        ]
        for event in events:
            app.main.emit(event)
        await settle(pilot, app)
        text = screen_text(app)
        assert "mm [reviewer] · tiny @ Ollama · asked by mm" in text
        assert "‣ helper · bash  ls" in text
        assert "‣ mm [reviewer]\nAll good." in text


async def test_a_long_session_keeps_every_item(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        for i in range(3000):
            app.main.emit(tool_started("bash", {"command": f"echo {i}"}, f"c{i}"))
            app.main.emit(
                ToolCallFinished(
                    call_id=f"c{i}", tool="bash", status="ok", output=f"{i}\n", elapsed=0.0
                )
            )
        await settle(pilot, app, timeout=30)
        assert len(tools(app)) == 3000
        assert "‣ bash  echo 2999" in screen_text(app)
        await pilot.press("tab", "home")
        await until(lambda: "‣ bash  echo 0 " in screen_text(app), "the first line", pilot=pilot)


async def test_engine_errors_show_in_the_transcript(folder: Path) -> None:
    app = make_app(ScriptedModel(5.0), folder, watchdogTimeout=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, "hi")
        await settle(pilot, app)
        assert "turn stopped by the watchdog" in screen_text(app)
        await asyncio.sleep(0)


async def test_command_palette_has_the_slash_commands(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, CommandPalette), "the palette", pilot=pilot)
        await pilot.press(*"/help")
        await until(lambda: highlighted(app).startswith("/help"), "/help found", pilot=pilot)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, HelpScreen), "the help screen", pilot=pilot)


@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
async def test_the_permission_choices_stay_visible_in_a_small_terminal(
    folder: Path, size: tuple[int, int]
) -> None:
    """A long diff scrolls inside the box; the a/s/r/n line is always on screen."""
    content = "".join(f"line {i}\n" for i in range(80))
    (folder / "long.txt").write_text(content)
    edits = [{"old": f"line {i}\n", "new": f"LINE {i}\n"} for i in range(0, 80, 2)]
    model = ScriptedModel(call("edit_file", {"path": "long.txt", "edits": edits}), say("ok"))
    app = make_app(model, folder, yolo=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await asked(pilot, app, "edit it")
        keys = app.main.box.query_one("#keys")
        shown = str(keys.content)
        assert "a allow once" in shown and "r reject" in shown
        region = keys.region
        assert region.height >= 1 and region.bottom <= size[1]
        for y in range(region.y, region.bottom):  # every row of it is on screen, uncovered
            assert app.screen.get_widget_at(region.x + 1, y)[0] is keys
        await pilot.press("a")
        await settle(pilot, app)
        assert "LINE 0" in (folder / "long.txt").read_text()


async def test_the_command_palette_lists_mm_s_commands_before_any_typing(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p")
        commands = ("/new", "/compact", "/sessions", "/theme")
        await until(
            lambda: all(c in palette_text(app) for c in commands),
            "the listed commands",
            pilot=pilot,
        )
        shown = palette_text(app)
        assert "summarise the conversation to free the model's context" in shown
        # Textual's own commands are there but Maximize, which filled the screen with hatching
        assert "Screenshot" in shown and "Keys" in shown
        assert "Maximize" not in shown and "Minimize" not in shown


async def test_help_lists_the_decisions_of_the_session(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "true"}), say("ok"))
    app = make_app(model, folder, yolo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, "go")
        await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
        await pilot.press("n")
        await settle(pilot, app)
        await type_and_send(pilot, "/help")
        await until(lambda: isinstance(app.screen, HelpScreen), "the help screen", pilot=pilot)
        table = app.screen._content()
        names = [str(cell) for cell in table.columns[0]._cells]
        assert str(table.columns[1]._cells[names.index("bash")]) == "never"
        assert "(none)" not in names


async def test_the_theme_key_is_applied(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder, theme="mm-light")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.theme == "mm-light"


async def test_the_key_bar_keeps_every_answer_of_a_permission_box_at_60_columns(
    folder: Path,
) -> None:
    """At 60 columns the four answers and their descriptions do not fit: each description is
    cut to its last word rather than `n never` cut off the end."""
    model = ScriptedModel(call("bash", {"command": "echo hi"}), say("ok"))
    app = make_app(model, folder, yolo=False)
    async with app.run_test(size=(60, 24)) as pilot:
        await settle(pilot, app)
        await asked(pilot, app, "go")
        shown = app.screen.query_one(KeyBar).render().plain
        for part in (" a once ", " s session ", " r reject ", " n never "):
            assert part in shown, shown
        assert shown.index(" n never ") < shown.find("…") or "…" not in shown


async def test_a_tiny_terminal_draws_no_scrollbar_over_the_key_bar(folder: Path) -> None:
    """At 20x6 the window's parts do not all fit: the screen clips them, and draws no
    scrollbar of its own over the key bar (its thumb sat on the bar's last cells)."""
    model = ScriptedModel(say("line\n\n" * 30))
    app = make_app(model, folder)
    async with app.run_test(size=(20, 6)) as pilot:
        await sent(pilot, app)
        rows = [strip.text for strip in app.screen._compositor.render_strips()]
        assert rows[-1].rstrip().endswith("palette"), rows
        assert not any(glyph in rows[-1] for glyph in "▁▂▃▄▅▆▇█"), rows
        assert app.screen.query_one(KeyBar).region.width == 20


async def test_the_key_bar_follows_focus_and_a_click_presses_a_key(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "echo one"}), say("done"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await sent(pilot, app)
        bar = app.screen.query_one(KeyBar)
        shown = bar.render().plain
        assert shown.startswith(" ⏎ Send  shift+tab Mode  esc Cancel  ^o Outputs ")
        assert shown.endswith("▏^p palette ") and len(shown) == 100
        # Focus moves to the transcript: the prompt's Send key goes from the bar.
        await pilot.press("tab")
        await settle(pilot, app)
        assert (
            painted(app)
            .splitlines()[-1]
            .startswith(
                " ↑ Previous  ↓ Next  ⏎ Fold/unfold  shift+tab Mode  esc Cancel  ^o Outputs"
            )
        )
        (item,) = tools(app)
        assert item.folded
        await pilot.click(KeyBar, offset=(bar.render().plain.index("^o") + 1, 0))
        await settle(pilot, app)
        assert not item.folded
        await pilot.click(KeyBar, offset=(bar.render().plain.index("^p") + 1, 0))
        await settle(pilot, app)
        assert isinstance(app.screen, CommandPalette)


async def test_typing_in_the_transcript_goes_to_the_prompt(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "echo one"}), say("done"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await sent(pilot, app)
        await pilot.press("tab")
        assert isinstance(app.focused, TranscriptView)
        await pilot.press("h", "i")
        assert isinstance(app.focused, Prompt)
        assert app.main.prompt.text == "hi"
        await pilot.press("tab")
        await pilot.press("space")  # space still folds and unfolds there
        assert isinstance(app.focused, TranscriptView)


async def test_esc_closes_the_keys_panel(folder: Path) -> None:
    from textual.widgets import HelpPanel

    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.action_show_help_panel()
        await until(lambda: app.screen.query(HelpPanel), "the keys panel", pilot=pilot)
        await pilot.press("escape")
        await until(lambda: not app.screen.query(HelpPanel), "closing the keys panel", pilot=pilot)


async def test_sending_a_request_scrolls_to_the_bottom(folder: Path) -> None:
    model = ScriptedModel(*[say("paragraph\n\n" * 20) for _ in range(3)])
    app = make_app(model, folder)
    async with app.run_test(size=(100, 20)) as pilot:
        for _ in range(2):
            await sent(pilot, app, "more")
        view = app.main.view
        view.action_scroll_home()
        # the person scrolled up
        await until(lambda: view.scroll_y < view.max_scroll_y - 5, "the scroll up", pilot=pilot)
        await type_and_send(pilot, "and more")
        await settle(pilot, app)
        assert view.scroll_y >= view.max_scroll_y - 1 and view.max_scroll_y > 0


async def test_keys_in_one_burst_behind_a_tab_follow_the_focus(folder: Path) -> None:
    """Tab, Up, Enter arriving together (fast typing over SSH, `tmux send-keys Tab Up Enter`):
    the Tab moves the focus to the transcript and Up and Enter act there (the tool line is
    selected and opened), not in the prompt, where they re-sent the last request."""
    from textual import events

    model = ScriptedModel(call("bash", {"command": "echo one"}), say("done"), say("again"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await sent(pilot, app, "run it")
        (item,) = tools(app)
        assert item.folded and isinstance(app.focused, Prompt)
        for key in ("tab", "up", "enter"):  # posted at once: none handled before the next
            app.post_message(events.Key(key, None))
        await settle(pilot, app)
        assert isinstance(app.focused, TranscriptView)
        assert not item.folded  # Up selected the line, Enter opened it
        assert len(model.requests) == 2  # no request sent again
        await pilot.press("tab")  # back to the prompt: typing works as before
        await type_and_send(pilot, "next")
        await settle(pilot, app)
        assert len(model.requests) == 3


async def test_a_screenshot_without_a_downloads_folder_goes_to_the_state_folder(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The palette's Screenshot on a machine with no ~/Downloads (a server, a container): saved
    in mm's state folder, said where, never in the project."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user-dirs.dirs
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot, app)
        app.action_screenshot()
        shots = state / "mm" / "screenshots"
        await until(lambda: shots.is_dir() and any(shots.glob("*.svg")), "the file", pilot=pilot)
    assert not list(folder.glob("*.svg"))


async def test_page_up_and_down_in_the_prompt_scroll_the_transcript(folder: Path) -> None:
    """PageUp/PageDown while the prompt has the focus: the transcript pages, the prompt keeps
    the focus and its text."""
    model = ScriptedModel(*[say("paragraph\n\n" * 20) for _ in range(2)])
    app = make_app(model, folder)
    async with app.run_test(size=(100, 20)) as pilot:
        for _ in range(2):
            await sent(pilot, app, "more")
        view = app.main.view
        await pilot.press(*"draft")
        bottom = view.scroll_y
        assert bottom > 0 and isinstance(app.focused, Prompt)
        await pilot.press("pageup")
        await until(lambda: view.scroll_y < bottom, "a page up", pilot=pilot)
        up = view.scroll_y
        await pilot.press("pagedown")
        await until(lambda: view.scroll_y > up, "a page down", pilot=pilot)
        assert isinstance(app.focused, Prompt) and app.main.prompt.text == "draft"


def painted_color(app, text: str) -> str | None:
    """The colour the screen paints the first segment holding `text` in."""
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            if text in segment.text and segment.style and segment.style.color:
                color = segment.style.color
                return color.triplet.hex if color.triplet else color.name
    return None


async def test_code_blocks_in_an_ansi_theme_use_the_terminal_s_own_colours(folder: Path) -> None:
    """`ansi-dark` is for terminals of 16 colours: an answer's code block is drawn in them too,
    not in Monokai's 256-colour codes."""
    from rich.color import ColorType

    model = ScriptedModel(say("```python\ndef answer():\n    return 42\n```"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await sent(pilot, app)
        await type_and_send(pilot, "/theme ansi-dark")
        await settle(pilot, app)
        assert app.theme == "ansi-dark"
        kinds = {
            segment.style.color.type
            for strip in app.screen._compositor.render_strips()
            for segment in strip
            if segment.text.strip() in ("def", "answer", "return", "42")
            and segment.style
            and segment.style.color
        }
        assert kinds, "the code was not painted"
        assert kinds <= {ColorType.STANDARD, ColorType.DEFAULT}, kinds


async def test_a_theme_change_repaints_the_transcript_in_the_new_colours(folder: Path) -> None:
    """A theme that differs from mm-dark only in its accent leaves the view's own style alone:
    the tool line's bullet must still take the new accent."""
    from textual.theme import Theme

    model = ScriptedModel(call("bash", {"command": "echo hi"}), say("done"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await sent(pilot, app)
        dark = app.get_theme("mm-dark")
        assert dark is not None
        fields = ("primary", "secondary", "warning", "error", "success", "foreground")
        app.register_theme(
            Theme(
                name="mm-magenta",
                accent="#ff00ff",
                background=dark.background,
                surface=dark.surface,
                panel=dark.panel,
                dark=True,
                **{f: getattr(dark, f) for f in fields},
            )
        )
        assert painted_color(app, "‣") == "#5fd7af"
        await type_and_send(pilot, "/theme mm-magenta")
        await settle(pilot, app)
        assert painted_color(app, "‣") == "#ff00ff"


async def test_a_growing_line_repaints_when_scrolled_far_down(folder: Path) -> None:
    """Words added to the last line of a long answer reach the screen at once, though the
    answer's height does not change (only the growing rows are repainted)."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.main.emit(text_delta("".join(f"paragraph {i}\n\n" for i in range(300)) + "the end"))
        assert await painted_soon(pilot, app, "the end")
        assert app.main.view.scroll_y > 500
        for word in (" is", " near", " now"):
            app.main.emit(text_delta(word))
            await settle(pilot, app)
        assert await painted_soon(pilot, app, "the end is near now")


async def test_a_running_tool_line_ticks_when_scrolled_far_down(folder: Path) -> None:
    """The spinner and the elapsed time of a running call are repainted where the line is,
    however far the transcript has scrolled."""
    app = make_app(ScriptedModel(), folder, frozen=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.main.emit(text_delta("".join(f"paragraph {i}\n\n" for i in range(300))))
        app.main.emit(tool_started("bash", {"command": "sleep 9"}, "t1"))
        await settle(pilot, app)
        assert app.main.view.scroll_y > 500

        def tool_row() -> str:
            return next(line for line in painted(app).splitlines() if "bash  sleep 9" in line)

        first = tool_row()
        await until(lambda: tool_row() != first, "a tick of the spinner", timeout=5, pilot=pilot)


@pytest.mark.parametrize(
    ("width", "cwd", "expected"),
    [
        (80, "/work/project", " mm [mm] · model @ server" + " " * 34 + " /work/project  auto "),
        (40, "/home/someone/projects/deep/folder/mm", " mm [mm] · model @ server    …/mm  auto "),
        (30, "/home/someone/projects", " mm [mm] · mode…  …ects  auto "),
        (40, "/home/词语/项目/代码", " mm [mm] · model @ server  …/代码  auto "),
    ],
)
async def test_the_header_cuts_the_agent_and_the_folder_to_fit(
    width: int, cwd: str, expected: str
) -> None:
    """The folder takes at most half the line and keeps its last parts; the agent gives way;
    the mode's badge stays against the right edge. Cells, not characters, are counted."""
    from rich.cells import cell_len
    from textual.app import App, ComposeResult

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield AgentHeader()

    app = One()
    async with app.run_test(size=(width, 3)) as pilot:
        header = app.query_one(AgentHeader)
        header.show(title="mm", model="model", provider="server", cwd=cwd, mode="auto")
        await pilot.pause()
        shown = header.render().plain
        assert cell_len(shown) == width
        assert shown == expected


def bar_cells(app, rows: range, columns: range) -> list[list[tuple]]:
    """What the terminal shows in the given cells, as the compositor paints them: the
    character, and its colours once `reverse` is applied (a space shows no foreground)."""
    screen = app.screen._compositor.render_strips()
    out = []
    for y in rows:
        cells = []
        for segment in screen[y]:
            style = segment.style
            fg, bg = (style.bgcolor, style.color) if style.reverse else (style.color, style.bgcolor)
            for char in segment.text:
                cells.append((char, None if char == " " else fg, bg))
        out.append([cells[x] for x in columns])
    return out


@pytest.mark.parametrize("at", ["top", "middle", "bottom"])
async def test_the_scrollbar_looks_like_textuals_own(folder: Path, at: str) -> None:
    """The view draws its scrollbar in its own lines; it must look as Textual's ScrollBar looks
    on a scroll view of the same height, content and position."""
    from textual.app import App, ComposeResult
    from textual.widgets import Log

    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.main.emit(text_delta("".join(f"paragraph {i}\n\n" for i in range(60))))
        await settle(pilot, app)
        view = app.main.view
        total, height = view.virtual_size.height, view.size.height
        target = {"top": 0, "middle": (total - height) // 3, "bottom": total - height}[at]
        view.scroll_to(y=target, animate=False, immediate=True)
        await settle(pilot, app)
        assert view.scroll_offset.y == target and total > 3 * height
        ours = bar_cells(app, range(view.region.y, view.region.y + height), range(97, 99))

    class Reference(App[None]):
        CSS = (
            f"Log {{ height: {height}; background: $background; padding: 0 1;"
            " scrollbar-gutter: stable; scrollbar-size-horizontal: 0; }"
        )

        def compose(self) -> ComposeResult:
            yield Log()

        def on_mount(self) -> None:
            from mm_tui.window.theme_files import load_themes

            for loaded in load_themes().themes:
                self.register_theme(loaded)
            self.theme = "mm-dark"

    reference = Reference()
    async with reference.run_test(size=(100, height)) as pilot:
        log = reference.query_one(Log)
        log.write_lines([f"line {i}" for i in range(total)])
        await pilot.pause()
        log.scroll_to(y=target, animate=False, immediate=True)
        await pilot.pause()
        assert log.scroll_offset.y == target
        theirs = bar_cells(reference, range(height), range(97, 99))
    assert ours == theirs
    assert len({cell[2] for row in ours for cell in row}) == 2  # a thumb on a track


async def test_the_scrollbar_drags_and_the_wheel_scrolls(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.main.emit(text_delta("".join(f"paragraph {i}\n\n" for i in range(60))))
        await settle(pilot, app)
        view = app.main.view
        assert view.scroll_offset.y == view.max_scroll_y > 0  # following the bottom
        # Press on the bar near its top: the view goes to the top and stops following.
        await pilot.mouse_down(TranscriptView, offset=(97, 0))
        await pilot.mouse_up(TranscriptView, offset=(97, 0))
        await settle(pilot, app)
        assert view.scroll_offset.y == 0
        items = len(app.main.transcript.items)
        # A click on the bar is not a click on a line: nothing folds or is selected.
        assert view.cursor is None and len(app.main.transcript.items) == items
        # Drag to the middle.
        await pilot.mouse_down(TranscriptView, offset=(98, 0))
        await pilot.hover(TranscriptView, offset=(98, view.size.height // 2))
        await pilot.mouse_up(TranscriptView, offset=(98, view.size.height // 2))
        await settle(pilot, app)
        assert 0.3 * view.max_scroll_y < view.scroll_offset.y < 0.7 * view.max_scroll_y
        # The wheel still scrolls.
        before = view.scroll_offset.y
        from textual import events

        await pilot._post_mouse_events([events.MouseScrollDown], TranscriptView, offset=(40, 5))
        await settle(pilot, app)
        assert view.scroll_offset.y > before


@pytest.mark.parametrize("name", ["mm-light", "ansi-dark", "mm-dark"])
async def test_a_first_theme_is_what_textuals_theme_watcher_would_make(
    folder: Path, name: str
) -> None:
    """MMApp starts in its theme without Textual's watcher (which re-parses every stylesheet
    once the app runs); the app must end up as the watcher leaves it: classes, CSS variables,
    the ANSI colour filter and the painted colours."""

    def state(app) -> tuple:
        (ansi,) = [f for f in app._filters if type(f).__name__ == "ANSIToTruecolor"]
        classes = sorted(c for c in app.classes if c.startswith("-"))
        painted = painted_color(app, "›") or ""
        background = app.screen.styles.background
        return classes, app.theme_variables, ansi._terminal_theme, painted, background

    first = make_app(ScriptedModel(), folder, app_theme=name, theme=name)
    async with first.run_test(size=(100, 30)) as pilot:
        await settle(pilot, first)
        ours = state(first)
    watched = make_app(ScriptedModel(), folder, app_theme="textual-dark", theme="textual-dark")
    async with watched.run_test(size=(100, 30)) as pilot:
        await settle(pilot, watched)
        watched.theme = name  # Textual's own watcher
        await settle(pilot, watched)
        theirs = state(watched)
    assert ours == theirs
    assert f"-theme-{name}" in ours[0]
