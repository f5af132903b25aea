"""The transcript's view: selecting its text with the mouse, as Textual's Log allows, and copying
it with Ctrl+C, while a click or a drag does what it did (fold a line, scroll); its line cache;
an item drawn before its frame; a spinner timer that runs only while a tool call does; a frame
rate that adapts to what a frame costs; a line added to a long transcript, which touches only
its bottom."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.events import text_delta, tool_started
from support.scripted_model import ScriptedModel, call, say
from support.waiting import await_until
from support.window_helpers import make_app, screen_text, settle
from textual import events

from mm_tui.core.events import EngineError, ToolCallFinished
from mm_tui.window.frame_clock import FrameClock
from mm_tui.window.transcript.line_cache import LineCache
from mm_tui.window.transcript.store import ToolItem
from mm_tui.window.transcript.view import TranscriptView

PADDING = 1  # the view's left padding: a widget offset is a content column plus this


def row_and_column(app, text: str) -> tuple[int, int]:
    """Where `text` starts on screen, as an offset in the view (padding included)."""
    for row, line in enumerate(screen_text(app).split("\n")):
        column = line.find(text)
        if column >= 0:
            return row, column + PADDING
    raise AssertionError(f"{text!r} is not on screen")


async def drag(pilot, start: tuple[int, int], end: tuple[int, int]) -> None:
    """Press at `start`, move to `end`, release there (offsets in the view: column, row), and
    the Click a terminal's release makes: Textual's App sends one after a MouseUp over the
    widget that was pressed, wherever the press was (the Pilot's mouse_up bypasses that)."""
    await pilot.mouse_down(TranscriptView, offset=start)
    await pilot.hover(TranscriptView, offset=end)
    await pilot.mouse_up(TranscriptView, offset=end)
    await pilot._post_mouse_events([events.Click], TranscriptView, offset=end)
    await pilot.pause()


async def test_a_drag_selects_text_across_lines_and_ctrl_c_copies_it(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.main.emit(text_delta("alpha one\n\nbeta two\n\ngamma three"))
        await settle(pilot, app)
        row, column = row_and_column(app, "one")
        end_row, end_column = row_and_column(app, "two")
        await drag(pilot, (column, row), (end_column + 2, end_row))
        assert app.screen.get_selected_text() == "one\n\nbeta two"
        # The selection is painted: the selected cells take the screen's selection style.
        selection = app.screen.get_component_rich_style("screen--selection")
        line = app.main.view.content_line(row)
        styled = [s for s in line if s.style and s.style.bgcolor == selection.bgcolor]
        assert "".join(s.text for s in styled) == "one"
        # Ctrl+C copies, clears the selection and leaves mm running, with no quit warning.
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.clipboard == "one\n\nbeta two"
        assert app.screen.get_selected_text() is None
        assert app.is_running
        line = app.main.view.content_line(row)
        assert not [s for s in line if s.style and s.style.bgcolor == selection.bgcolor]


async def test_ctrl_c_without_a_selection_still_cancels_and_quits(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running


async def test_a_drag_over_a_tool_line_selects_it_without_folding(folder: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "echo one; echo two"}), say("done"))
    app = make_app(model, folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"go", "enter")
        await settle(pilot, app)
        (item,) = [i for i in app.main.transcript.items if isinstance(i, ToolItem)]
        assert item.folded
        row, column = row_and_column(app, "‣ bash")
        await drag(pilot, (column, row), (column + 11, row))  # the cell released on is in
        await settle(pilot, app)
        assert item.folded  # a drag selects; only a click folds
        assert app.screen.get_selected_text() == "‣ bash  echo"
        # A plain click on the line clears the selection and opens it, as before.
        await pilot.click(TranscriptView, offset=(column, row))
        await settle(pilot, app)
        assert not item.folded
        assert app.screen.get_selected_text() is None


async def test_a_drag_on_the_scrollbar_scrolls_and_selects_nothing(folder: Path) -> None:
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.main.emit(text_delta("".join(f"paragraph {i}\n\n" for i in range(60))))
        await settle(pilot, app)
        await drag(pilot, (98, 0), (98, app.main.view.size.height // 2))
        await settle(pilot, app)
        assert 0 < app.main.view.scroll_offset.y < app.main.view.max_scroll_y
        assert not app.screen.get_selected_text()


async def test_select_all_copies_items_never_drawn(folder: Path) -> None:
    """A double click selects the whole transcript; items far above the screen were never
    rendered (their heights are estimates), and their text is rendered for the copy."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        for number in range(300):
            app.main.emit(EngineError(where="test", message=f"notice {number}", level="warning"))
        await settle(pilot, app)
        first = next(i for i in app.main.transcript.items if "notice 0" in getattr(i, "text", ""))
        assert app.main.view.drawn_lines(first) is None  # never drawn
        row, column = row_and_column(app, "notice 299")
        await pilot.click(TranscriptView, offset=(column, row), times=2)
        await pilot.pause()
        text = app.screen.get_selected_text() or ""
        lines = [line for line in text.split("\n") if line.startswith("notice")]
        assert lines == [f"notice {n}" for n in range(300)]


def test_the_line_cache_gives_back_the_oldest_lines_beyond_its_budget() -> None:
    cache = LineCache(budget=10)
    cache.extend([4, 4, 4])
    cache.reflow(0)
    assert cache.offsets == [0, 4, 8] and cache.total == 12
    lines = [object()] * 4
    for index in range(3):
        cache.keep(index, lines, version=index)  # type: ignore[arg-type] - plain stand-ins
    assert cache.lines[0] is None and cache.lines[1] is lines and cache.lines[2] is lines
    assert cache.heights == [4, 4, 4] and cache.versions == [0, 1, 2]
    assert cache.index_at(5) == 1 and cache.index_at(12) == 2 and LineCache().index_at(0) is None
    assert list(cache.between(3, 9)) == [0, 1, 2]


async def test_an_item_painted_before_its_frame_is_laid_out_at_its_drawn_height(
    folder: Path,
) -> None:
    """An item scrolled into view is drawn at once, before the frame that lays it out; its
    height was an estimate (a table's borders are not in its text), and the next frame must
    take the drawn height, else its last lines are cut off or blank lines follow it."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        for number in range(40):
            app.main.emit(text_delta(f"table {number}\n\n| a | b |\n|---|---|\n| 1 | 2 |"))
            app.main.emit(EngineError(where="test", message=f"notice {number}", level="warning"))
        await settle(pilot, app)
        view = app.main.view
        view.scroll_home(animate=False)
        for y in range(view.size.height):  # painted before the next frame, as the screen may
            view.content_line(y)
        await settle(pilot, app)
        on_screen = view.items_on_screen()
        assert on_screen
        for item in on_screen:
            assert len(view.drawn_lines(item) or []) == len(view.item_rows(item)), item


async def test_a_finished_tool_line_is_drawn_once_and_kept(folder: Path) -> None:
    """A long turn's frames draw only the running calls' header rows: a finished call's row is
    drawn with its output and kept, as the live row was drawn (selected too)."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        for n in range(40):
            app.main.emit(tool_started("bash", {"command": f"echo {n}"}, call_id=f"c{n}"))
            app.main.emit(ToolCallFinished(f"c{n}", "bash", "ok", f"{n}\n", elapsed=0.5))
        app.main.emit(tool_started("bash", {"command": "sleep 9"}, call_id="live"))
        await settle(pilot, app)
        view = app.main.view
        tool = view.renderers.tool
        drawn: list[str] = []
        header = tool.header

        def counted(item, width, now, selected=False):  # noqa: ANN001, ANN202
            drawn.append(item.call_id)
            return header(item, width, now, selected)

        tool.header = counted
        for _ in range(3):
            view.refresh()
            await settle(pilot, app)
        assert drawn and set(drawn) == {"live"}, drawn
        finished = [item for item in view.items_on_screen() if isinstance(item, ToolItem)][-2]
        assert not finished.running
        row = view.item_rows(finished)[0] - int(view.scroll_y)
        view.cursor = finished.id - 1
        view.refresh()
        await settle(pilot, app)
        live = header(finished, view.line_width, 0.0, selected=True).apply_style(view.base_style)
        painted = view.content_line(row)  # its styles carry the offsets a selection reads

        def looks(strip):  # noqa: ANN001, ANN202
            return [(s.text, s.style and s.style.clear_meta_and_links()) for s in strip]

        assert looks(painted) == looks(live)


async def test_the_spinner_timer_runs_only_while_a_tool_runs(folder: Path) -> None:
    """An idle window wakes for nothing: the view's timer, which redraws running tool lines,
    starts with the first running call and stops when none runs."""
    model = ScriptedModel(call("bash", {"command": "sleep 1"}), say("done"))
    app = make_app(model, folder, frozen=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert not app.main.view.spinning
        assert not app.main.prompt.cursor_blink  # a blinking cursor is a timer too
        await pilot.press(*"go", "enter")
        assert await await_until(lambda: app.main.view.spinning, 10, pilot=pilot), "never spun"
        await settle(pilot, app)
        assert not app.main.view.spinning


async def test_deltas_within_a_frame_cross_as_one_message_in_order(folder: Path) -> None:
    """A fast server's hundreds of deltas a second reach the window as one message per run and
    frame, their texts joined, nothing lost, the order kept around other events."""
    from mm_tui.core.events import ThoughtDelta
    from mm_tui.window.screens.main import EngineEvent

    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        posted: list = []
        original = app.main.post_message

        def counting(message):  # noqa: ANN001, ANN202
            if isinstance(message, EngineEvent):
                posted.append(message.event)
            return original(message)

        app.main.post_message = counting  # type: ignore[method-assign]
        for n in range(200):
            app.main.emit(ThoughtDelta(text=f"t{n} "))
        for n in range(300):
            app.main.emit(text_delta(f"w{n} "))
        app.main.emit(EngineError(where="test", message="after the text", level="warning"))
        await settle(pilot, app)
        kinds = [type(event).__name__ for event in posted]
        assert kinds == ["ThoughtDelta", "TextDelta", "EngineError"], kinds
        assert posted[0].text == "".join(f"t{n} " for n in range(200))
        assert posted[1].text == "".join(f"w{n} " for n in range(300))
        # alone, a run is posted within a frame, without another event to push it
        app.main.emit(text_delta("tail"))
        assert app.main.deltas_pending
        await settle(pilot, app)
        assert not app.main.deltas_pending and posted[-1].text == "tail"


async def test_the_frame_rate_adapts_to_what_a_frame_costs(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expensive frames slow the view's frame rate at once (down to MAX_FRAME); cheap frames
    bring it back, gradually. Driven by the real view: the answer's renderer is made slow for a
    while (the CPU it burns is part of the frame's measured cost). The factor is lowered so that
    an ordinary frame is cheap on any machine (with mm's factor, a frame of 2.2 ms or more is
    already at the cap)."""
    import time

    from mm_tui.window import frame_clock
    from mm_tui.window.frame_clock import MAX_FRAME, MIN_FRAME

    monkeypatch.setattr(frame_clock, "FRAME_COST_FACTOR", 10)

    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        view = app.main.view
        # (the first frames, which paint the whole window on cold code, may already be at the
        # cap on a slow machine: what counts is what follows)
        assert MIN_FRAME <= view.frames.interval <= MAX_FRAME
        answer = view.renderers.answer
        render = answer.render

        def slow(item, width):  # noqa: ANN001, ANN202
            end = time.thread_time() + 0.05  # a frame of 50 ms of CPU: far over the cap
            while time.thread_time() < end:
                pass
            return render(item, width)

        answer.render = slow  # type: ignore[method-assign]
        app.main.emit(text_delta("slow "))
        await settle(pilot, app)
        assert view.frames.interval == MAX_FRAME
        answer.render = render  # type: ignore[method-assign]
        intervals = [view.frames.interval]
        for n in range(200):  # frames, not seconds: each is the cost of a few words
            app.main.emit(text_delta(f"w{n} "))
            await settle(pilot, app)
            intervals.append(view.frames.interval)
            if intervals[-1] < MAX_FRAME:
                break
        assert intervals[-1] < MAX_FRAME, intervals
        assert len(intervals) > 2, "one cheap frame does not undo an expensive one"
        assert min(intervals) >= MIN_FRAME


def frame_clock_at_its_cap(monkeypatch: pytest.MonkeyPatch) -> tuple[FrameClock, list[float]]:
    """A running frame clock whose frames cost so much that its interval is at MAX_FRAME, on a
    loop time the test moves itself (`now[0]`)."""
    from types import SimpleNamespace

    from mm_tui.window import frame_clock
    from mm_tui.window.frame_clock import MAX_FRAME

    now = [1000.0]
    loop = SimpleNamespace(time=lambda: now[0])
    monkeypatch.setattr(frame_clock, "asyncio", SimpleNamespace(get_running_loop=lambda: loop))
    clock = FrameClock()
    clock.running = True
    clock.measured(1.0)  # a frame of a second: the interval is at its cap
    assert clock.interval == MAX_FRAME
    return clock, now


def test_the_slowest_frames_keep_in_step_with_the_paced_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While an answer streams, the engine reads the server READ_GAP apart, and the window draws
    a read's text in the wake-up that read it when a frame is due. Even at their slowest (frames
    that cost so much that the interval is at MAX_FRAME), every read must find a frame due:
    frames slower than the reads fall out of step, and the text then waits for a frame as well
    as for its read. Driven on the clock's own terms: a read returns, its frame begins a few
    milliseconds later, the next read returns READ_GAP after the last (a little later, as a
    sleep does)."""
    from mm_tui.engine.paced_reads import READ_GAP

    clock, now = frame_clock_at_its_cap(monkeypatch)
    late = []
    for read in range(50):
        if clock.due_in() == 0:
            now[0] += 0.003  # the read's text is handed to the view
            clock.frame_begins()
        else:
            late.append(read)
        now[0] += READ_GAP + 0.0005  # the next read, after its pace
    assert late == [], f"reads that found no frame due: {late}"


def test_a_frame_out_of_step_with_the_reads_delays_one_read_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frame drawn between two reads (the turn's start, a tool line, anything but a read's
    text) must not put the frames out of step with the reads for long. A read comes READ_GAP
    and a few milliseconds after the last (a sleep's overshoot; 5 to 8 ms on this machine),
    and its text waits for the frame due then. With the slowest frames as slow as the reads,
    the frames gained on the reads by those few milliseconds a read only, and a run of up to
    eight reads after such a frame each waited most of a frame (bench_e2e: the median from a
    read to the screen 3 ms, its 95th percentile 52 to 59 ms)."""
    from mm_tui.engine.paced_reads import READ_GAP

    clock, now = frame_clock_at_its_cap(monkeypatch)
    overshoot = 0.006
    waits = []
    for read in range(40):
        read_at = 1000.0 + read * (READ_GAP + overshoot)
        now[0] = read_at
        wait = clock.due_in()
        waits.append(round(wait * 1000))
        now[0] = read_at + wait + 0.001  # its text drawn, at once or when its frame is due
        clock.frame_begins()
        if read == 10:
            now[0] = read_at + READ_GAP / 2  # a frame of something else, between two reads
            clock.frame_begins()
    assert all(wait == 0 for wait in waits[:11]), waits
    late = [wait for wait in waits[11:] if wait > 0]
    assert len(late) <= 1, f"the waits after the frame out of step, in ms: {waits[11:]}"


async def test_a_transcript_emptied_leaves_nothing_drawn(folder: Path) -> None:
    """An empty view that stays empty is not repainted (its first flush, after the first frame,
    only gives it its width); one that held lines and is emptied is, and shows none of them."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.main.emit(text_delta("a line that goes away"))
        await settle(pilot, app)
        assert "a line that goes away" in screen_text(app)
        app.main.transcript.clear()
        app.main.view.reset()
        await settle(pilot, app)
        assert "a line that goes away" not in screen_text(app)


async def test_a_line_added_to_a_long_transcript_costs_what_the_screen_costs(
    folder: Path,
) -> None:
    """A long session's ten thousandth tool line costs what its twentieth did
    (bench/bench_window_long.py times it): adding one renders and measures only items at the
    bottom, where the screen is, and lays the offsets out again from the new line on, never
    the whole transcript."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        transcript, view = app.main.transcript, app.main.view
        for n in range(2000):
            done = ToolItem(call_id=f"old{n}", tool="bash", title=f"bash  echo {n}", status="ok")
            transcript.add(done)
        view.update_items(transcript.items)
        await settle(pilot, app)
        touched: dict[str, list[int]] = {"estimated": [], "rendered": [], "laid out from": []}

        def noting(name: str, original):  # noqa: ANN001, ANN202
            def noted(index: int, *args):  # noqa: ANN002, ANN202
                touched[name].append(index)
                return original(index, *args)

            return noted

        view._estimate = noting("estimated", view._estimate)
        view._render_item = noting("rendered", view._render_item)
        view._cache.reflow = noting("laid out from", view._cache.reflow)
        for n in range(3):
            app.main.emit(tool_started("bash", {"command": f"echo new {n}"}, call_id=f"new{n}"))
            app.main.emit(ToolCallFinished(f"new{n}", "bash", "ok", "new\n", elapsed=0.1))
            await settle(pilot, app)
        assert transcript.items[-1].call_id == "new2"
        assert "echo new 2" in screen_text(app)
        bottom = len(transcript.items) - view.size.height  # a screen of one-line items
        far = {name: [i for i in indices if i < bottom] for name, indices in touched.items()}
        assert touched["rendered"], touched  # the new lines were drawn
        assert far == {name: [] for name in touched}, far
