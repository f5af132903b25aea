"""Cosmetic details: the recap's rule shows in light themes, code blocks follow
the theme (and follow a change of it), the Ctrl+C toast leaves the prompt alone, and an ordered
list streams with the numbers and the alignment it has once finished."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.color import Color as RichColor
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from support.scripted_model import ScriptedModel, say
from support.waiting import await_until
from support.window_helpers import make_app, settle

from mm_tui.window.app import MMApp
from mm_tui.window.transcript.renderers.answer import Answer
from mm_tui.window.transcript.store import AnswerItem

MONOKAI_BACKGROUND = "#272822"
FRIENDLY_BACKGROUND = "#f0f0f0"
FRIENDLY_KEYWORD = "#007020"
CODE_ANSWER = "Here it is:\n\n```python\ndef greet(name):\n    return name\n```\n\nDone."


def luminance(color: RichColor) -> float:
    """WCAG relative luminance."""

    def channel(value: int) -> float:
        value_01 = value / 255
        return value_01 / 12.92 if value_01 <= 0.03928 else ((value_01 + 0.055) / 1.055) ** 2.4

    red, green, blue = color.get_truecolor()
    return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)


def contrast(one: RichColor, other: RichColor) -> float:
    """WCAG contrast ratio, 1 (the same) to 21 (black on white)."""
    light, dark = sorted((luminance(one), luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def painted_segments(app: MMApp) -> list[Segment]:
    """The segments of the transcript's visible lines, as the view paints them."""
    view = app.main.view
    return [segment for y in range(view.size.height) for segment in view.content_line(y)]


def hex_of(color: RichColor | None) -> str | None:
    return None if color is None else color.get_truecolor().hex


async def a_finished_turn(pilot, app: MMApp) -> None:  # noqa: ANN001
    await settle(pilot, app)
    app.main.prompt.insert("go")
    await pilot.press("enter")
    await settle(pilot, app)


# -- 1. the recap's rule ----------------------------------------------------------------------


@pytest.mark.parametrize("theme", ["mm-light", "mm-dark", "textual-light"])
async def test_the_recap_rule_stands_out_from_the_background(folder: Path, theme: str) -> None:
    """The rule was the panel's lighter shade, near white: invisible on a light background."""
    app = make_app(ScriptedModel(say("done")), folder, app_theme=theme, theme=theme)
    async with app.run_test(size=(80, 24)) as pilot:
        await a_finished_turn(pilot, app)
        rules = [s for s in painted_segments(app) if "──" in s.text]
        assert rules, "no recap rule on screen"
        for segment in rules:
            style = segment.style
            assert style is not None and style.color is not None and style.bgcolor is not None
            assert contrast(style.color, style.bgcolor) >= 2.0, (theme, style)


# -- 2. code blocks follow the theme ----------------------------------------------------------


def code_backgrounds(app: MMApp) -> set[str]:
    """The backgrounds under the code block's lines (the rows holding `def greet`)."""
    view = app.main.view
    found: set[str] = set()
    for y in range(view.size.height):
        line = list(view.content_line(y))
        if any("greet" in segment.text for segment in line):
            found |= {hex_of(s.style.bgcolor) for s in line if s.style and s.text.strip()}
    return found - {None}


def keyword_color(app: MMApp) -> str | None:
    for segment in painted_segments(app):
        if segment.text == "def" and segment.style is not None:
            return hex_of(segment.style.color)
    return None


async def test_code_blocks_take_a_light_style_in_a_light_theme(folder: Path) -> None:
    app = make_app(ScriptedModel(say(CODE_ANSWER)), folder, app_theme="mm-light", theme="mm-light")
    async with app.run_test(size=(80, 24)) as pilot:
        await a_finished_turn(pilot, app)
        assert code_backgrounds(app) == {FRIENDLY_BACKGROUND}
        assert keyword_color(app) == FRIENDLY_KEYWORD


async def test_a_theme_change_draws_the_code_again_in_the_new_style(folder: Path) -> None:
    """An answer drawn in mm-dark (Monokai) is drawn again when the theme turns light."""
    app = make_app(ScriptedModel(say(CODE_ANSWER)), folder)
    async with app.run_test(size=(80, 24)) as pilot:
        await a_finished_turn(pilot, app)
        assert code_backgrounds(app) == {MONOKAI_BACKGROUND}
        app.main.prompt.insert("/theme mm-light")
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.theme == "mm-light"
        assert code_backgrounds(app) == {FRIENDLY_BACKGROUND}
        assert keyword_color(app) == FRIENDLY_KEYWORD
        app.main.prompt.insert("/theme mm-dark")
        await pilot.press("enter")
        await settle(pilot, app)
        assert code_backgrounds(app) == {MONOKAI_BACKGROUND}


# -- 3. the Ctrl+C toast ----------------------------------------------------------------------


@pytest.mark.parametrize("prompt_lines", [1, 4])
async def test_the_ctrl_c_toast_leaves_the_prompt_clear(folder: Path, prompt_lines: int) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot, app)
        app.main.prompt.insert("\n".join(["line"] * prompt_lines))
        grown = await await_until(
            lambda: app.main.prompt.region.height == 2 + prompt_lines, pilot=pilot
        )
        assert grown, app.main.prompt.region
        # Ctrl+C with text in the prompt clears it: the toast here is the copy's, of a
        # selection, with the prompt kept as tall as it is
        app.screen.get_selected_text = lambda: "selected"  # type: ignore[method-assign]
        await pilot.press("ctrl+c")
        toasts = []

        def shown() -> bool:
            toasts[:] = [t for t in app.screen.query("Toast") if t.region.area]  # Textual's own
            return bool(toasts)

        assert await await_until(shown, 2, 0.05, pilot=pilot), "no toast shown"
        prompt = app.main.prompt.region
        assert prompt.height == 2 + prompt_lines
        for toast in toasts:
            assert not toast.region.overlaps(prompt), (toast.region, prompt)
            assert toast.region.y >= 0 and toast.region.bottom <= app.main.status.region.y


# -- 4. an ordered list while it streams ------------------------------------------------------

WIDTH = 60

ORDERED = {
    "three items": "Here are the steps:\n\n1. first\n2. second\n3. third\n",
    "twelve items": "".join(f"{i}. **Step {i}**: do thing {i}\n" for i in range(1, 13)),
    "all written 1.": "1. first\n1. second\n1. third\n",
    "from 8, nested": "8. eight\n   - a\n   - b\n9. nine\n10. ten\n11. eleven\n",
    "wrapping": "".join(f"{i}. " + "word " * 15 + "\n" for i in range(1, 11)),
}


def plain(answer: Answer, text: str, *, done: bool) -> list[str]:
    item = AnswerItem(id=1)
    item.pieces.append(text)
    item.done = done
    return [strip.text.rstrip() for strip in answer.render(item, WIDTH)]


def renderer() -> Answer:
    console = Console(width=WIDTH, force_terminal=True, color_system="truecolor")
    return Answer(console, lambda name: Style())


@pytest.mark.parametrize("name", ORDERED)
@pytest.mark.parametrize("piece", [3, 5])
def test_a_streaming_ordered_list_is_drawn_as_the_finished_one(name: str, piece: int) -> None:
    """Fed a few characters at a time (pieces also cut at each line's end), as the window feeds
    it, the renderer draws every prefix that ends a line as it draws that prefix finished: the
    same numbers in the same column."""
    text = ORDERED[name]
    line_ends = {index + 1 for index, char in enumerate(text) if char == "\n"}
    streaming = renderer()
    for cut in sorted(set(range(piece, len(text), piece)) | line_ends):
        prefix = text[:cut]
        drawn = plain(streaming, prefix, done=False)
        if cut in line_ends:
            assert drawn == plain(renderer(), prefix, done=True), prefix
