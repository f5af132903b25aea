"""The window while the server finishes a cancelled answer: the status line says so instead of
"Thinking" until the next answer's first word, and the turn then ends as any other."""

from __future__ import annotations

from pathlib import Path

from support.scripted_server import Generating, Reply, ScriptedServer
from support.waiting import until
from support.window_helpers import all_text, settle, started_app

from mm_tui.window.transcript.store import AnswerItem, RecapItem

STATUS = "The server is still finishing the last answer…   Esc cancels"


async def type_and_send(pilot, text: str) -> None:  # noqa: ANN001
    await pilot.press(*text)
    await pilot.press("enter")


async def test_the_status_line_says_the_server_is_finishing_the_last_answer(
    folder: Path,
) -> None:
    generating = Generating(shown=("Once", " upon"))
    with ScriptedServer(generating, Reply("the next answer")) as server:
        app = started_app(server.base_url, folder, watchdogTimeout=30)
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                await settle(pilot, app)
                app.engine.server.slow_floor = 0.05
                await type_and_send(pilot, "long")
                answers = app.main.transcript.items
                await until(
                    lambda: any(isinstance(i, AnswerItem) and i.text for i in answers),
                    "the first words",
                    pilot=pilot,
                )
                await pilot.press("escape")
                await until(lambda: not app.engine.busy, "the cancel", pilot=pilot)
                await type_and_send(pilot, "next")
                await until(
                    lambda: app.main.status.text.endswith(STATUS), "the status", pilot=pilot
                )
                assert "Thinking" not in app.main.status.text
                generating.finish()
                await until(
                    lambda: sum(isinstance(i, RecapItem) for i in answers) == 2,
                    "the second turn's end",
                    pilot=pilot,
                )
                await settle(pilot, app)
                assert "the next answer" in all_text(app)
                assert "watchdog" not in all_text(app)
                assert app.main.status.state is None
        finally:
            generating.finish()
