"""Painting only what changed: a partial update asks only the widgets it touches, for
only its rows (`window/screens/cropped_compositor.py`); the view's rows that only moved are not painted
again (`window/transcript/painted_rows.py`); the status line paints its own line. And what a terminal
shows after all those partial updates is what a full paint of the same screen shows, cell by
cell: a replica of the terminal takes every update the window writes, as a terminal would."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.style import Style
from support.events import text_delta, tool_started
from support.scripted_model import ScriptedModel
from support.waiting import until
from support.window_helpers import make_app, screen_painted, settle
from textual._compositor import ChopsUpdate, Compositor, LayoutUpdate
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from mm_tui.core.events import (
    Counters,
    ThoughtDelta,
    ToolCallFinished,
    TurnEnded,
    TurnStarted,
    Usage,
)
from mm_tui.window.screens.cropped_compositor import CroppedCompositor
from mm_tui.window.transcript.painted_rows import PaintedRows
from mm_tui.window.widgets.status_line import StatusLine

SIZE = (100, 30)
Cell = tuple[str, Style | None]


class Terminal:
    """What a terminal shows: each update the window writes, applied to a grid of cells."""

    def __init__(self, width: int, height: int) -> None:
        self.rows: list[list[Cell]] = [[(" ", None)] * width for _ in range(height)]
        self.partial = 0  # partial updates taken

    def _put(self, y: int, x: int, strip: Strip, first: int, last: int) -> None:
        row = self.rows[y]
        for segment in strip:
            if segment.control:
                continue
            for character in segment.text:
                width = cell_len(character)
                if first <= x < last and x < len(row):
                    row[x] = (character, segment.style)
                    for extra in range(1, width):
                        if x + extra < len(row):
                            row[x + extra] = ("", segment.style)
                x += width

    def take(self, update: Any) -> None:
        if isinstance(update, LayoutUpdate):
            for y, line in enumerate(update.strips, update.region.y):
                x = update.region.x
                for strip in line:
                    self._put(y, x, strip, 0, len(self.rows[y]))
                    x += strip.cell_length
        elif isinstance(update, ChopsUpdate):
            self.partial += 1
            for y, x1, x2 in update.spans:
                for cut, strip in update.chops[y].items():
                    if strip is not None:
                        self._put(y, cut, strip, x1, x2)


def full_paint(compositor: Compositor, width: int, height: int) -> list[list[Cell]]:
    """The screen painted whole, as Textual paints a screenshot."""
    terminal = Terminal(width, height)
    for y, strip in enumerate(compositor.render_strips()):
        terminal._put(y, 0, strip, 0, width)
    return terminal.rows


def differences(shown: list[list[Cell]], whole: list[list[Cell]]) -> list[str]:
    out = []
    for y, (a, b) in enumerate(zip(shown, whole, strict=True)):
        if a != b:
            text_a = "".join(c for c, _ in a)
            text_b = "".join(c for c, _ in b)
            out.append(f"row {y}:\n  shown {text_a!r}\n  whole {text_b!r}")
    return out


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Region]]:
    """Every widget's `render_lines` call: its class and the crop it was asked for."""
    seen: list[tuple[str, Region]] = []
    render_lines = Widget.render_lines

    def recorded(self: Widget, crop: Region) -> list[Strip]:
        seen.append((type(self).__name__, crop))
        return render_lines(self, crop)

    monkeypatch.setattr(Widget, "render_lines", recorded)
    return seen


async def test_a_spinner_frame_asks_only_the_status_line_for_its_row(
    folder: Path, calls: list[tuple[str, Region]]
) -> None:
    """Before, each spinner frame (ten a second through a whole turn) asked every widget on
    screen for all of its lines: the transcript's 24 rows, the prompt, the key bar, the header."""
    app = make_app(ScriptedModel(), folder, frozen=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen._compositor, CroppedCompositor)
        app.main.emit(TurnStarted(turn=1, text="explain"))
        await settle(pilot, app, idle=False)  # the request drawn in the transcript
        # and painted: on a loaded machine the screen's update can follow at its next tick
        await until(lambda: screen_painted(app), "the request painted", pilot=pilot)
        calls.clear()
        await asyncio.sleep(0.45)  # four spinner frames or so
        await pilot.pause()
        status = app.screen.query_one(StatusLine)
        assert status.state and "Esc cancels" in status.text
        asked = {name for name, _crop in calls}
        assert "StatusLine" in asked, calls
        assert asked <= {"StatusLine", "MainScreen"}, calls
        assert all(crop.height == 1 for _name, crop in calls), calls


async def test_what_the_terminal_shows_after_partial_updates_is_the_whole_screen(
    folder: Path,
) -> None:
    """An answer streams past the bottom (the view follows it, every row moves), a tool call
    runs with its spinner, a notification floats over the transcript, and the status line
    spins; after each step the replica of the terminal, fed only what the window wrote, equals
    the screen painted whole."""
    app = make_app(ScriptedModel(), folder, frozen=False)
    async with app.run_test(size=SIZE) as pilot:
        compositor = app.screen._compositor
        terminal = Terminal(*SIZE)
        render_update = compositor.render_update

        def taken(*args: Any, **kwargs: Any) -> Any:
            update = render_update(*args, **kwargs)
            if update is not None:
                terminal.take(update)
            return update

        compositor.render_update = taken  # type: ignore[method-assign]
        # what the window painted before (its first layout may be painted in the idle that
        # follows the mount, before the test gets here)
        terminal.rows = full_paint(compositor, *SIZE)
        await settle(pilot, app)

        async def check(step: str) -> None:
            await settle(pilot, app, idle=False)
            await pilot.pause()
            # A spinner may have moved since the last update (it runs on the real clock, and its
            # widget tells the screen in a message of its own): looked at again after the next
            # updates. A widget the compositor skipped stays wrong.
            for _ in range(5):
                problems = differences(terminal.rows, full_paint(compositor, *SIZE))
                if not problems:
                    break
                await pilot.pause()
            assert not problems, f"after {step}:\n" + "\n".join(problems[:5])

        app.main.emit(TurnStarted(turn=1, text="explain"))
        await check("the turn's start")
        for n in range(60):
            app.main.emit(text_delta(f"word{n} " + ("\n\n" if n % 7 == 6 else "")))
            if n % 10 == 9:
                await check(f"{n + 1} words")
        app.main.emit(tool_started("bash", {"command": "sleep 1"}))
        await asyncio.sleep(0.25)  # the tool line's spinner and the status line's turn
        await check("a running tool call")
        app.notify("a notification over the transcript")
        await check("a notification")
        app.main.emit(
            ToolCallFinished(call_id="c1", tool="bash", status="ok", output="done", elapsed=1.0)
        )
        for n in range(30):
            app.main.emit(text_delta(f"more{n} "))
        await check("the answer after the call")
        app.main.emit(
            TurnEnded(
                turn=1, counters=Counters(), elapsed=1.0, usage=Usage(), stop_reason="end_turn"
            )
        )
        await check("the turn's end")
        assert terminal.partial > 10, "the steps were painted by partial updates"


async def test_a_row_that_only_moved_is_not_painted_again(folder: Path) -> None:
    """While the view follows a growing answer, each new line moves every row up: the view's
    painted rows are found again by the line they show."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        view = app.main.view
        rows = view._styles_cache
        assert isinstance(rows, PaintedRows)
        for n in range(40):
            app.main.emit(text_delta(f"line {n}\n\n"))
            await settle(pilot, app)
        painted = 0
        render_line = type(rows).__mro__[1].render_line

        def counted(cache: Any, *args: Any, **kwargs: Any) -> Strip:
            nonlocal painted
            painted += cache is rows
            return render_line(cache, *args, **kwargs)

        type(rows).__mro__[1].render_line = counted  # type: ignore[method-assign]
        try:
            before = view.scroll_y
            app.main.emit(text_delta("line 40\n\n"))
            await settle(pilot, app)
            assert view.scroll_y > before, "the view followed the answer down"
        finally:
            type(rows).__mro__[1].render_line = render_line  # type: ignore[method-assign]
        height = view.size.height
        assert 0 < painted <= 6, f"{painted} of {height} rows painted again"


async def test_the_spinner_moves_in_the_frames_of_streaming_thoughts(
    folder: Path, calls: list[tuple[str, Region]]
) -> None:
    """While a model's thoughts stream (the status line says Thinking, with its spinner), the
    spinner is painted in the transcript's frames, not in screen updates of its own (each costs
    about a millisecond, whatever it paints): over a second of streaming, hardly any update
    paints the status line alone, and the spinner still moves."""
    app = make_app(ScriptedModel(), folder, frozen=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        compositor = app.screen._compositor
        updates: list[set[str]] = []
        render_update = compositor.render_update

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls.clear()
            update = render_update(*args, **kwargs)
            if update is not None:
                updates.append({name for name, _crop in calls} - {"MainScreen"})
            return update

        compositor.render_update = counted  # type: ignore[method-assign]
        status = app.screen.query_one(StatusLine)
        app.main.emit(TurnStarted(turn=1, text="explain"))
        await settle(pilot, app, idle=False)
        updates.clear()
        shown = set()
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.0
        n = 0
        while loop.time() < end:
            app.main.emit(ThoughtDelta(text=f"word{n} "))
            n += 1
            shown.add(status.text)
            await asyncio.sleep(0.02)
        alone = [u for u in updates if u == {"StatusLine"}]
        with_view = [u for u in updates if "TranscriptView" in u]
        assert len(with_view) >= 5, updates
        assert len(alone) <= 2, updates
        assert len(shown) >= 5, "the spinner moved"
        assert any("StatusLine" in u and "TranscriptView" in u for u in updates), updates
