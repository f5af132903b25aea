"""`/undo` in window mode, driven by keys: the plan in its box, y changes the files, n keeps
them, a second /undo redoes, a bad N is refused, and /undo typed during a turn waits for it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from support.scripted_model import ScriptedModel, call, say
from support.undo import tree_hash
from support.waiting import until
from support.window_helpers import make_app, settle

from mm_tui.window.screens.undo import UndoScreen
from mm_tui.window.transcript.store import NoticeItem

SCRIPT = "echo '# changed' >> greet.py && rm README.md && echo new > added.txt"


def notices(app: Any) -> list[str]:
    return [item.text for item in app.main.transcript.items if isinstance(item, NoticeItem)]


def plan_text(app: Any) -> str:
    return str(app.screen.query_one("#undo-plan").render())


def box_shown(app: Any) -> bool:
    """The /undo box is up with its plan mounted (pushed is not yet composed)."""
    return isinstance(app.screen, UndoScreen) and bool(app.screen.query("#undo-plan"))


async def run_turn(pilot: Any, app: Any, text: str) -> None:
    ended = len(app.main.engine.session.turns) + 1
    await pilot.press(*text, "enter")
    engine = app.main.engine
    await until(
        lambda: len(engine.session.turns) == ended and not engine.busy,
        "the turn's end",
        pilot=pilot,
    )
    await settle(pilot, app)


async def open_undo(pilot: Any, app: Any, command: str = "/undo") -> None:
    await pilot.press(*command, "enter")
    await until(lambda: box_shown(app), "the /undo box", pilot=pilot)
    await pilot.pause()


async def test_y_puts_the_files_back_and_a_second_undo_redoes(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": SCRIPT}), say("done"))
    app = make_app(model, folder, frozen=False, yolo=True)
    before = tree_hash(folder, skip=(".mm",))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await run_turn(pilot, app, "change things")
        after = tree_hash(folder, skip=(".mm",))
        assert after != before
        await open_undo(pilot, app)
        assert plan_text(app).splitlines() == [
            "bring back README.md",
            "delete     added.txt",
            "restore    greet.py",
        ]
        await pilot.press("y")
        await until(
            lambda: tree_hash(folder, skip=(".mm",)) == before, "the files back", pilot=pilot
        )
        await settle(pilot, app)
        assert "undo: undone (1 turn): 1 restored, 1 brought back, 1 deleted" in notices(app)
        await open_undo(pilot, app)
        assert "redo" in str(app.screen.query_one("Static").render())
        await pilot.press("enter")
        await until(lambda: tree_hash(folder, skip=(".mm",)) == after, "the redo", pilot=pilot)


async def test_n_keeps_the_files_and_bad_input_is_refused(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": SCRIPT}), say("done"))
    app = make_app(model, folder, frozen=False, yolo=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"/undo", "enter")
        await until(
            lambda: any("no turn to undo" in n for n in notices(app)), "refused", pilot=pilot
        )
        await run_turn(pilot, app, "change things")
        after = tree_hash(folder, skip=(".mm",))
        await open_undo(pilot, app)
        await pilot.press("n")
        await settle(pilot, app)
        assert not isinstance(app.screen, UndoScreen)
        assert "/undo: the files are kept as they are" in notices(app)
        assert tree_hash(folder, skip=(".mm",)) == after
        await pilot.press(*"/undo two", "enter")
        await settle(pilot, app)
        assert "/undo N: N is a number of turns (/undo alone: the last one)" in notices(app)
        await pilot.press(*"/undo 5", "enter")
        await until(
            lambda: "/undo: /undo 5: only 1 turn can be undone" in notices(app),
            "refused",
            pilot=pilot,
        )


async def test_undo_during_a_turn_waits_for_its_end(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "sleep 1 && echo x > slow.txt"}), say("done"))
    app = make_app(model, folder, frozen=False, yolo=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"slow one", "enter")
        await until(lambda: app.main.engine.busy, "the turn to start", pilot=pilot)
        await pilot.press(*"/undo", "enter")
        await pilot.pause()
        assert any(n.startswith("queued (a turn is running): /undo") for n in notices(app))
        await until(lambda: box_shown(app), "the box after the turn", pilot=pilot)
        assert plan_text(app).splitlines() == ["delete     slow.txt"]
        await pilot.press("y")
        await until(lambda: not (folder / "slow.txt").exists(), "undone", pilot=pilot)
        await asyncio.sleep(0)
