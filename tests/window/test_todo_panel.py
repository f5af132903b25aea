"""The model's task list in the window: the panel under the header appears with the first list,
follows each new one, folds a long one to its current step, comes back with a resumed session,
goes with /new; a step's text from the model never reaches the terminal raw."""

from __future__ import annotations

from pathlib import Path

from support.scripted_model import ScriptedModel, call, say
from support.window_helpers import make_app, settle

from mm_tui.window.widgets.todo_panel import TodoPanel

STEPS = [
    {"step": "read greet.py", "state": "done"},
    {"step": "fix the typo", "state": "in_progress"},
    {"step": "run the tests", "state": "pending"},
]


def panel_text(app) -> str:  # noqa: ANN001
    panels = app.main.query(TodoPanel)
    return panels.first().render().plain if panels and panels.first().display else ""


async def test_the_panel_follows_the_list_and_folds_a_long_one(folder: Path) -> None:
    long = [{"step": f"step {n}", "state": "done" if n < 3 else "pending"} for n in range(7)]
    long[3]["state"] = "in_progress"
    model = ScriptedModel(
        call("todo", {"steps": STEPS}),
        say("working"),
        call("todo", {"steps": long}),
        say("more"),
    )
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert not app.main.query(TodoPanel)  # nothing mounted before a list
        await pilot.press(*"plan it", "enter")
        await settle(pilot, app)
        assert panel_text(app) == "✓ read greet.py\n▸ fix the typo\n○ run the tests"
        panel = app.main.query_one(TodoPanel)
        assert panel.region.y == 1 and panel.region.height == 3  # under the header
        await pilot.press(*"go on", "enter")
        await settle(pilot, app)
        assert panel_text(app) == "tasks 3/7 done  ▸ step 3"
        assert panel.region.height == 1
        await pilot.press(*"/new", "enter")
        await settle(pilot, app)
        assert panel_text(app) == ""


async def test_a_resumed_session_shows_its_last_list(folder: Path) -> None:
    from support.scripted_server import Reply, ScriptedServer
    from support.scripted_server import call as server_call
    from support.window_helpers import started_app

    script = [Reply(tool_calls=[server_call("todo", {"steps": STEPS}, id="t1")]), Reply("ok")]
    with ScriptedServer(*script) as server:
        app = started_app(server.base_url, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"plan it", "enter")
            await settle(pilot, app)
            assert panel_text(app).startswith("✓ read greet.py")
        again = started_app(server.base_url, folder, resume="")
        async with again.run_test(size=(100, 30)) as pilot:
            await settle(pilot, again)
            assert panel_text(again) == "✓ read greet.py\n▸ fix the typo\n○ run the tests"


async def test_a_step_s_escapes_are_shown_not_sent(folder: Path) -> None:
    steps = [{"step": "evil\x1b]0;owned\x07 step", "state": "in_progress"}]
    app = make_app(ScriptedModel(call("todo", {"steps": steps}), say("ok")), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"go", "enter")
        await settle(pilot, app)
        assert panel_text(app) == "▸ evil\\x1b]0;owned\\x07 step"
