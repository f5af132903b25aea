"""The prompt's stand-in (`window/widgets/prompt_stand_in.py`): the window starts with it instead
of Textual's TextArea, it takes what is typed on one line until the engine is ready, and the
prompt replaces it then. Nothing on screen changes in the prompt's place when it does, in any
theme; no key or paste that came before is lost or reordered; the window's own keys work
meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.engine import make_engine
from support.scripted_model import ScriptedModel, say
from support.waiting import until
from support.window_helpers import screen_painted
from textual import events

from mm_tui.startup import Started
from mm_tui.window.app import MMApp
from mm_tui.window.transcript.store import NoticeItem
from mm_tui.window.widgets.prompt import Prompt
from mm_tui.window.widgets.prompt_stand_in import PromptStandIn


class Gate:
    """A boot that waits until the test opens it, then starts an engine on `model`."""

    def __init__(self, folder: Path, model: Any = None, **settings: Any) -> None:
        self.open = asyncio.Event()
        self.folder = folder
        self.model = model if model is not None else ScriptedModel()
        self.settings = settings

    async def __call__(self) -> Started:
        await self.open.wait()
        return Started(make_engine(self.folder, self.model, **self.settings), [])


def cells(app: MMApp, rows: range | None = None) -> list[list[tuple[str, Any]]]:
    """Each row of the screen as the compositor paints it: (character, style) per character."""
    strips = app.screen._compositor.render_strips()
    picked = strips if rows is None else [strips[y] for y in rows]
    return [[(ch, seg.style) for seg in strip for ch in seg.text] for strip in picked]


def prompt_rows(app: MMApp) -> range:
    """The rows of the prompt's box and of the key bar below it."""
    region = app.main.query_one("#prompt").region
    return range(region.y, app.size.height)


class FirstFrame(MMApp):
    """Notes the screen at its first frame, while the stand-in is there."""

    first: list[list[tuple[str, Any]]]
    stand_in_region: Any

    def on_ready(self) -> None:  # before MMApp.on_ready, which starts the boot
        self.stand_in_region = self.main.query_one(PromptStandIn).region
        self.first = cells(self)


THEMES = ["mm-dark", "mm-light", "textual-dark", "textual-light", "ansi-dark", "ansi-light", "nord"]


@pytest.mark.parametrize("theme", THEMES)
async def test_the_prompt_takes_the_stand_ins_place_with_no_change_on_screen(
    theme: str, folder: Path
) -> None:
    """The stand-in and the prompt that replaces it paint the same cells in the same place
    (the box, its title, the cursor's colours in a dark and a light theme), and the focus goes
    with it; the key bar shows the same keys. Until the engine is ready only the status line
    changes from the first frame: the boot says it is starting."""
    gate = Gate(folder, theme=theme)
    app = FirstFrame(gate, theme=theme)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: screen_painted(app), "the first frame", pilot=pilot)
        await pilot.pause()
        status_row = app.main.status.region.y
        changed = [y for y, (a, b) in enumerate(zip(app.first, cells(app), strict=True)) if a != b]
        assert changed == [status_row]
        rows = prompt_rows(app)
        waiting = cells(app, rows)
        gate.open.set()
        await until(lambda: isinstance(app.focused, Prompt), "the prompt", pilot=pilot)
        await until(lambda: screen_painted(app), "the screen painted", pilot=pilot)
        await pilot.pause()
        assert app.theme == theme
        assert not app.main.query(PromptStandIn)
        assert app.main.prompt.region == app.stand_in_region
        assert cells(app, rows) == waiting


@pytest.mark.parametrize("theme", ["mm-dark", "mm-light", "ansi-dark"])
async def test_what_is_typed_while_mm_starts_shows_as_the_prompt_shows_it(
    theme: str, folder: Path
) -> None:
    """Typed before the engine is ready, in the stand-in: the same cells as the prompt then
    paints with that text, wide characters too; Backspace takes the last one back."""
    gate = Gate(folder, theme=theme)
    app = MMApp(gate, theme=theme)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.main.query_one(PromptStandIn).has_focus, "focus", pilot=pilot)
        await pilot.press(*"fix it 漢字x", "backspace")
        await until(lambda: screen_painted(app), "the screen painted", pilot=pilot)
        await pilot.pause()
        stand_in = app.main.query_one(PromptStandIn)
        assert stand_in.text == "fix it 漢字"
        rows = prompt_rows(app)
        typed = cells(app, rows)
        assert "".join(ch for ch, _ in typed[1]).startswith("│ fix it 漢字")
        gate.open.set()
        await until(lambda: isinstance(app.focused, Prompt), "the prompt", pilot=pilot)
        await until(lambda: screen_painted(app), "the screen painted", pilot=pilot)
        await pilot.pause()
        assert app.main.prompt.text == "fix it 漢字"
        assert app.main.prompt.cursor_location == (0, len("fix it 漢字"))
        assert cells(app, rows) == typed


class EarlyKeys(MMApp):
    """Keys and a paste that come before the first frame, and as it is drawn."""

    def on_mount(self) -> None:
        for key, character in (("a", "a"), ("b", "b")):
            self.post_message(events.Key(key, character))
        self.post_message(events.Paste("c\x1bd"))

    def on_ready(self) -> None:  # before MMApp.on_ready, which starts the boot
        for key, character in (("e", "e"), ("shift+enter", None), ("f", "f")):
            self.post_message(events.Key(key, character))


async def test_keys_that_come_before_the_prompt_land_in_it_in_order(folder: Path) -> None:
    """Typed (and pasted) before and as the first frame is drawn, in a burst, and while mm
    starts: all of it in the prompt, in order; Shift+Enter (a priority binding of the prompt)
    adds its line, and a paste is made visible as the prompt makes it."""
    gate = Gate(folder)
    app = EarlyKeys(gate)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("g", "h")
        gate.open.set()
        await until(lambda: isinstance(app.focused, Prompt), "the prompt", pilot=pilot)
        await pilot.pause()
        assert app.main.prompt.text == "abc\\x1bde\nfgh"


async def test_a_key_the_stand_in_does_not_know_waits_with_every_key_behind_it(
    folder: Path,
) -> None:
    """An arrow typed while mm starts moves the prompt's cursor once it is there, and what
    follows it is typed where the cursor then is, not at the end of the stand-in's line."""
    gate = Gate(folder)
    app = MMApp(gate)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.main.query_one(PromptStandIn).has_focus, "focus", pilot=pilot)
        await pilot.press("a", "b", "left", "c")
        await pilot.pause()
        assert app.main.query_one(PromptStandIn).text == "ab"
        gate.open.set()
        await until(lambda: app.prompt_in_place, "the prompt", pilot=pilot)
        await pilot.pause()
        assert app.main.prompt.text == "acb"


async def test_a_request_sent_while_mm_starts_is_queued_then_sent(folder: Path) -> None:
    """Enter in the stand-in sends what was typed: the request waits for the engine, then
    goes to the model; what is typed after it stays, and the prompt's history holds it."""
    model = ScriptedModel(say("hello"))
    gate = Gate(folder, model)
    app = MMApp(gate)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.main.query_one(PromptStandIn).has_focus, "focus", pilot=pilot)
        await pilot.press("h", "i", "enter", "o")
        await pilot.pause()
        notices = [i.text for i in app.main.transcript.items if isinstance(i, NoticeItem)]
        assert any(n.startswith("queued (mm is starting): hi") for n in notices), notices
        gate.open.set()
        await until(lambda: len(model.requests) == 1, "the request", pilot=pilot)
        assert model.requests[0][-1] == {"role": "user", "content": "hi"}
        await until(lambda: app.prompt_in_place, "the prompt", pilot=pilot)
        assert app.main.prompt.past == ["hi"]
        assert app.main.prompt.text == "o"


async def test_the_windows_own_keys_work_while_mm_starts(folder: Path) -> None:
    """Ctrl+C clears what the stand-in holds, and Ctrl+Q quits, while the boot still waits
    (on a slow model server, say): they are not held for a prompt that is not there yet."""
    app = MMApp(Gate(folder))
    async with app.run_test(size=(100, 30)) as pilot:
        stand_in = app.main.query_one(PromptStandIn)
        await until(lambda: stand_in.has_focus, "focus", pilot=pilot)
        await pilot.press("x", "y")
        await until(lambda: stand_in.text == "xy", "the text", pilot=pilot)
        await pilot.press("ctrl+c")
        await until(lambda: stand_in.text == "", "the text cleared", pilot=pilot)
        await pilot.press("ctrl+q")
        await until(lambda: not app.is_running, "the window closed", pilot=pilot)
    assert app.engine is None
