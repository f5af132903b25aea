"""A streaming answer wakes the window about once a frame.

On a virtual machine each wake-up of the event loop costs a few hundred microseconds of kernel
and loop time, most of what a streamed answer costs. These count what the window does per text
delta that arrives a frame or more after the last: one frame (following the bottom onto lines
already drawn asks for none), painted in the wake-up that brought the delta (not at the next
tick of Textual's update timer, whose sleep after each tick is a wake-up of its own)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.events import text_delta
from support.loop_sleeps import Sleeps
from support.scripted_model import ScriptedModel
from support.window_helpers import make_app, settle

from mm_tui.core.events import TurnStarted

SIZE = (100, 30)
DELTAS = 12
APART = 0.15  # more than the longest frame interval: each delta is a frame of its own


async def stream(folder: Path) -> tuple[int, int]:
    """DELTAS paragraphs, APART seconds apart, into an answer already past the bottom of the
    view: (the view's frames, the loop's sleeps) meanwhile."""
    app = make_app(ScriptedModel(), folder)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.main.emit(TurnStarted(turn=1, text="explain"))
        app.main.emit(text_delta("".join(f"line {n}\n\n" for n in range(30))))
        await settle(pilot, app, idle=False)
        await asyncio.sleep(0.3)
        view = app.main.view
        frames = 0
        flush = view.flush

        def counted() -> None:
            nonlocal frames
            frames += 1
            flush()

        view.flush = counted  # type: ignore[method-assign]
        sleeps = Sleeps()
        try:
            for n in range(DELTAS):
                app.main.emit(text_delta(f"more {n}\n\n"))
                await asyncio.sleep(APART)
        finally:
            sleeps.close()
        assert app.main.transcript.items[-1].text.endswith(f"more {DELTAS - 1}\n\n")
        return frames, sleeps.count


async def test_a_delta_a_frame_apart_costs_one_frame_and_one_wake_up(tmp_path: Path) -> None:
    """Measured: 12 frames and 12 sleeps for 12 deltas. Before: 18 frames (following the
    bottom scheduled frames of its own) and 24 to 29 sleeps (the update timer's)."""
    frames, sleeps = await stream(tmp_path)
    # each delta: one frame
    assert frames <= DELTAS + 1, frames
    # each delta: the test's own sleep, in whose wake-up the delta crosses, is drawn and is
    # painted
    assert sleeps <= DELTAS + 4, sleeps
