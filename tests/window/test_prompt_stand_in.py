"""The prompt's stand-in (`window/widgets/prompt_stand_in.py`): the first frame draws it instead
of Textual's TextArea, and the prompt replaces it right after. Nothing on screen changes when it
does, in any theme, and no key or paste that came before is lost or reordered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.waiting import until
from support.window_helpers import screen_painted
from textual import events

from mm_tui.window.app import MMApp
from mm_tui.window.transcript.store import NoticeItem
from mm_tui.window.widgets.prompt import Prompt
from mm_tui.window.widgets.prompt_stand_in import PromptStandIn


async def never() -> Any:
    await asyncio.Event().wait()


def cells(app: MMApp) -> list[list[tuple[str, Any]]]:
    """Each row of the screen as the compositor paints it: (character, style) per character."""
    strips = app.screen._compositor.render_strips()
    return [[(ch, seg.style) for seg in strip for ch in seg.text] for strip in strips]


class FirstFrame(MMApp):
    """Notes the screen at its first frame, while the stand-in is there."""

    first: list[list[tuple[str, Any]]]
    stand_in_region: Any

    def on_ready(self) -> None:  # before MMApp.on_ready, which starts the boot
        self.stand_in_region = self.main.query_one(PromptStandIn).region
        self.first = cells(self)


THEMES = ["mm-dark", "mm-light", "textual-dark", "textual-light", "ansi-dark", "ansi-light", "nord"]


@pytest.mark.parametrize("theme", THEMES)
async def test_the_prompt_takes_the_stand_ins_place_with_no_change_on_screen(theme: str) -> None:
    """The first frame's stand-in and the prompt that replaces it paint the same cells (the
    box, its title, the cursor's colours in a dark and a light theme), in the same place, and
    the focus goes with it; the key bar shows the same keys. Only the status line changes: the
    boot says it is starting."""
    app = FirstFrame(never, theme=theme)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: isinstance(app.focused, Prompt), "the prompt", pilot=pilot)
        await until(lambda: screen_painted(app), "the screen painted", pilot=pilot)
        await pilot.pause()
        assert app.theme == theme
        assert not app.main.query(PromptStandIn)
        assert app.main.prompt.region == app.stand_in_region
        status_row = app.main.status.region.y
        now = cells(app)
        changed = [y for y, (a, b) in enumerate(zip(app.first, now, strict=True)) if a != b]
        assert changed == [status_row]


class EarlyKeys(MMApp):
    """Keys and a paste that come before the first frame, and as it is drawn."""

    def on_mount(self) -> None:
        for key, character in (("a", "a"), ("b", "b")):
            self.post_message(events.Key(key, character))
        self.post_message(events.Paste("c\x1bd"))

    def on_ready(self) -> None:  # before MMApp.on_ready, which swaps the prompt in
        for key, character in (("e", "e"), ("shift+enter", None), ("f", "f")):
            self.post_message(events.Key(key, character))


async def test_keys_that_come_before_the_prompt_land_in_it_in_order() -> None:
    """Typed (and pasted) while the stand-in is up, in a burst, and at once after: all of it in
    the prompt, in order; Shift+Enter (a priority binding of the prompt) adds its line, and a
    paste is made visible as the prompt makes it."""
    app = EarlyKeys(never)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("g", "h")
        await until(lambda: isinstance(app.focused, Prompt), "the prompt", pilot=pilot)
        await pilot.pause()
        assert app.main.prompt.text == "abc\\x1bde\nfgh"


class EarlyRequest(MMApp):
    def on_mount(self) -> None:
        for key, character in (("h", "h"), ("i", "i"), ("enter", "\r"), ("o", "o")):
            self.post_message(events.Key(key, character))


async def test_a_request_sent_before_the_prompt_is_there_is_queued() -> None:
    """Enter typed before the prompt replaced its stand-in sends what was typed before it: the
    request waits for the engine, as one sent while mm starts does; what follows stays."""
    app = EarlyRequest(never)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: isinstance(app.focused, Prompt), "the prompt", pilot=pilot)
        await until(lambda: app.main.prompt.past == ["hi"], "the request", pilot=pilot)
        await pilot.pause()
        notices = [i.text for i in app.main.transcript.items if isinstance(i, NoticeItem)]
        assert any(n.startswith("queued (mm is starting): hi") for n in notices), notices
        assert app.main.prompt.text == "o"
