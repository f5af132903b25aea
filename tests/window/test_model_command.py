"""`/model` in window mode, driven by keys on the scripted server (LM Studio's list, one window
per model): the list and Enter, `/model NAME`, the name completed after `/model `, a request
queued behind a turn, and names from the server that would need escaping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.model_list import model_server as server
from support.model_list import open_model_list
from support.scripted_server import Reply, ScriptedServer
from support.waiting import until
from support.window_helpers import make_app, painted, painted_soon, settle
from textual.widgets import OptionList

from mm_tui.engine.provider import OpenAIProvider
from mm_tui.window.screens.models import ModelsScreen
from mm_tui.window.transcript.store import NoticeItem


def app_on(scripted: ScriptedServer, folder: Path) -> Any:
    client = OpenAIProvider(scripted.base_url, "small-coder", provider="lmstudio", retries=0)
    return make_app(client, folder, frozen=False)


def notices(app: Any) -> list[str]:
    return [item.text for item in app.main.transcript.items if isinstance(item, NoticeItem)]


def option_texts(app: Any) -> list[str]:
    options = app.screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_the_list_shows_the_windows_and_enter_switches(folder: Path) -> None:
    with server(Reply("on the big one")) as scripted:
        app = app_on(scripted, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await open_model_list(pilot, app, 3)
            assert option_texts(app) == [
                "● small-coder  ctx 4,096",
                "  big-coder  ctx 32,768",
                "  other  ctx 8,192",
            ]
            await pilot.press("down", "enter")
            await settle(pilot, app)
            assert not isinstance(app.screen, ModelsScreen)
            assert app.main.header.model == "big-coder"
            assert "model: big-coder (was small-coder)" in notices(app)
            assert "context window: 32,768 tokens (LM Studio /api/v0/models)" in notices(app)
            await pilot.press(*"hello", "enter")
            await settle(pilot, app)
            assert scripted.requests[-1].body["model"] == "big-coder"
            assert await painted_soon(pilot, app, "on the big one")


async def test_escape_leaves_the_model_as_it_was(folder: Path) -> None:
    with server() as scripted:
        app = app_on(scripted, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"/model", "enter")
            await until(lambda: isinstance(app.screen, ModelsScreen), "the list", pilot=pilot)
            await pilot.press("escape")
            await settle(pilot, app)
            assert app.engine.client.model == "small-coder"
            assert not any(text.startswith("model:") for text in notices(app))


async def test_a_name_completes_after_model_and_switches_at_once(folder: Path) -> None:
    with server() as scripted:
        app = app_on(scripted, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            prompt = app.main.prompt
            await pilot.press(*"/model b")
            await until(lambda: prompt.suggestion == "ig-coder", "the completion", pilot=pilot)
            await pilot.press("tab")
            assert prompt.text == "/model big-coder"
            await pilot.press("enter")
            await settle(pilot, app)
            assert app.engine.client.model == "big-coder"
            assert app.main.header.model == "big-coder"
            # The names were asked once: typing `/model ` again asks nothing more.
            lookups = len([r for r in scripted.lookups if r.path.endswith("/models")])
            await pilot.press(*"/model s")
            await until(lambda: prompt.suggestion == "mall-coder", "the completion", pilot=pilot)
            assert len([r for r in scripted.lookups if r.path.endswith("/models")]) == lookups


async def test_a_name_the_server_does_not_offer_changes_nothing(folder: Path) -> None:
    with server() as scripted:
        app = app_on(scripted, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"/model coder", "enter")
            await settle(pilot, app)
            assert app.engine.client.model == "small-coder"
            assert app.main.header.model == "small-coder"
            assert any(
                "the server offers no model coder — did you mean small-coder, big-coder?" in text
                for text in notices(app)
            ), notices(app)


async def test_model_typed_during_a_turn_waits_for_its_end(folder: Path) -> None:
    with server(Reply("a slow answer", delay=0.3), Reply("next")) as scripted:
        app = app_on(scripted, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"first", "enter")
            await until(lambda: app.engine.busy, "the turn running", pilot=pilot)
            await pilot.press(*"/model other", "enter")
            assert app.engine.client.model == "small-coder"
            assert any(
                text.startswith("queued (a turn is running): /model other") for text in notices(app)
            )
            await settle(pilot, app)
            await until(lambda: app.engine.client.model == "other", "the switch", pilot=pilot)
            await settle(pilot, app)
            assert app.main.header.model == "other"


async def test_names_that_would_need_escaping_are_drawn_escaped_and_not_completed(
    folder: Path,
) -> None:
    evil = "evil\x1b]0;owned\x07model"
    with server(models=("small-coder", evil)) as scripted:
        app = app_on(scripted, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await open_model_list(pilot, app, 2)
            texts = option_texts(app)
            assert "\x1b" not in "".join(texts) and "\x07" not in "".join(texts)
            assert any("evil\\x1b]0;owned\\x07model" in text for text in texts), texts
            await pilot.press("escape")
            await settle(pilot, app)
            prompt = app.main.prompt
            await pilot.press(*"/model e")
            await until(lambda: "/model" in prompt.arguments, "the names", pilot=pilot)
            assert prompt.arguments["/model"] == ["small-coder"]
            assert prompt.suggestion == ""
            assert "\x1b" not in painted(app)
