"""The modes in window mode: Shift+Tab cycles ask, auto and plan, the header shows the mode, the
next request declares the mode's tools, leaving plan mode after a plan puts its request in the
prompt, and `/mode NAME` sets one. Driven by keys on the scripted server."""

from __future__ import annotations

from pathlib import Path

from support.scripted_server import Reply, ScriptedServer
from support.window_helpers import make_app, settle

from mm_tui.window.screens.main import CARRY_OUT
from mm_tui.window.transcript.store import NoticeItem


def notices(app) -> list[str]:  # noqa: ANN001
    return [item.text for item in app.main.transcript.items if isinstance(item, NoticeItem)]


def declared(body: dict) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


async def test_shift_tab_cycles_the_modes_and_leaving_plan_offers_to_carry_it_out(
    folder: Path,
) -> None:
    with ScriptedServer(Reply("1. fix greet.py"), Reply("done")) as server:
        app = make_app(server, folder, frozen=False)  # yolo: auto, as by default
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            header = app.main.header
            assert app.engine.permissions.mode == "auto" and header.mode == "auto"
            assert header.render().plain.endswith(" auto ")
            await pilot.press("shift+tab")
            assert app.engine.permissions.mode == "plan" and header.mode == "plan"
            assert header.render().plain.endswith(" plan ")
            assert app.focused is app.main.prompt  # the key changed the mode, not the focus
            assert (
                "mode: plan — the model looks and plans; no file changes, every command asked"
                in (notices(app))
            )
            await pilot.press(*"plan the fix", "enter")
            await settle(pilot, app)
            assert "write_file" not in declared(server.requests[-1].body)
            await pilot.press("shift+tab")  # plan -> ask, after a plan
            assert app.engine.permissions.mode == "ask"
            assert header.render().plain.rstrip().endswith("project")  # ask has no badge
            assert app.main.prompt.text == CARRY_OUT
            assert "the plan is ready: Enter carries it out" in notices(app)
            await pilot.press("enter")
            await settle(pilot, app)
            last = server.requests[-1].body
            assert last["messages"][-1]["content"] == CARRY_OUT
            assert "write_file" in declared(last)
            await pilot.press("shift+tab")
            assert app.engine.permissions.mode == "auto"


async def test_leaving_plan_mode_without_a_plan_leaves_the_prompt_alone(folder: Path) -> None:
    with ScriptedServer() as server:
        app = make_app(server, folder, frozen=False, mode="plan")
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            assert app.main.header.mode == "plan"
            await pilot.press(*"/mode auto", "enter")
            await settle(pilot, app)
            assert app.engine.permissions.mode == "auto"
            assert app.main.prompt.text == ""
            await pilot.press(*"/mode", "enter")
            await settle(pilot, app)
            assert "modes: ask, auto, plan (now auto)" in notices(app)
