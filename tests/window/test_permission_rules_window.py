"""The permission box's answers that need words, through Pilot against a real engine: `p`
allows calls like this one by a rule (suggested, editable, kept where the person says), `t`
rejects with a reason the model reads; Esc goes back to the keys."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from support.scripted_model import ScriptedModel, call, say
from support.window_helpers import make_app, painted, painted_soon, screen_text, settle
from test_window import asked, tools, type_and_send

from mm_tui.config import read_project
from mm_tui.window.app import MMApp
from mm_tui.window.widgets.permission_entry import PermissionEntry


@contextlib.asynccontextmanager
async def asking(model: ScriptedModel, folder: Path) -> AsyncIterator[tuple[MMApp, Any]]:
    """The window asking (no yolo) about the first call of `model`, its box up."""
    app = make_app(model, folder, yolo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await asked(pilot, app, "go")
        yield app, pilot


def git_log_twice() -> ScriptedModel:
    return ScriptedModel(
        call("bash", {"command": "echo log --oneline"}),
        say("one"),
        call("bash", {"command": "echo log -5"}),
        say("two"),
    )


async def test_p_allows_the_suggested_rule_in_this_project(folder: Path) -> None:
    model = git_log_twice()
    async with asking(model, folder) as (app, pilot):
        assert await painted_soon(pilot, app, 'p rule "echo *"…')
        assert "t say why…" in painted(app)
        await pilot.press("p")
        await settle(pilot, app, idle=False)
        entry = app.main.box.query_one(PermissionEntry)
        assert entry.has_focus and entry.value == "echo *"
        assert await painted_soon(pilot, app, "enter allow in this project (.mm/config.yaml)")
        await pilot.press("enter")
        await settle(pilot, app)
        (item,) = tools(app)
        assert item.status == "ok"
        assert 'bash "echo *" is allowed from now on (saved to .mm/config.yaml)' in screen_text(app)
        await type_and_send(pilot, "again")
        await settle(pilot, app)
        assert app.main.box.request is None  # the rule answered the second call
        assert [t.status for t in tools(app)] == ["ok", "ok"]
    project = read_project(folder)
    assert project is not None and project.trusted
    assert project.data == {"permissions": {"bash": {"echo *": "allow"}}}


async def test_the_rule_is_edited_and_tab_keeps_it_in_the_persons_own_config(
    folder: Path,
) -> None:
    import os

    model = git_log_twice()
    async with asking(model, folder) as (app, pilot):
        await pilot.press("p")
        await settle(pilot, app, idle=False)
        await pilot.press(*["backspace"] * 2, *" log *", "tab")
        await settle(pilot, app, idle=False)
        assert await painted_soon(pilot, app, "enter allow in every project")
        await pilot.press("enter")
        await settle(pilot, app)
    own = Path(os.environ["XDG_CONFIG_HOME"]) / "mm" / "config.yaml"
    try:
        assert own.read_text() == 'permissions:\n  bash:\n    "echo log *": allow\n'
    finally:
        own.unlink()
    assert not (folder / ".mm" / "config.yaml").exists()


async def test_t_rejects_with_the_reason_the_model_reads(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "echo hi"}), say("ok"))
    async with asking(model, folder) as (app, pilot):
        await pilot.press("t")
        await settle(pilot, app, idle=False)
        await pilot.press(*"use printf", "enter")
        await settle(pilot, app)
        (item,) = tools(app)
        expected = "[command rejected by the user: use printf]"
        assert (item.status, item.output) == ("rejected", expected)
        assert model.requests[1][-1]["content"] == expected


async def test_escape_in_the_line_goes_back_to_the_keys_unanswered(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "echo hi"}), say("ok"))
    async with asking(model, folder) as (app, pilot):
        await pilot.press("t")
        await settle(pilot, app, idle=False)
        await pilot.press(*"rsn", "escape")  # letters in the line are words, not answers
        await settle(pilot, app, idle=False)
        box = app.main.box
        assert box.request is not None and box.has_focus
        assert not box.query(PermissionEntry)
        await pilot.press("a")
        await settle(pilot, app)
        (item,) = tools(app)
        assert item.status == "ok"
