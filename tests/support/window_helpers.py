"""Building MMApp for tests: an engine on a given model, frozen clocks, a given folder; or MMApp
started as `mm` starts it (`startup.start`) on the scripted server, `--resume` included. And
reading and waiting for what the window shows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mm_tui.config import Settings
from mm_tui.startup import Started, start
from mm_tui.window.app import MMApp
from support.engine import make_engine
from support.waiting import await_until


def make_app(
    model: Any,
    folder: Path,
    *,
    notes: tuple[str, ...] = (),
    frozen: bool = True,
    app_theme: str | None = None,
    **settings: Any,
) -> MMApp:
    async def boot() -> Started:
        clock = (lambda: 0.0) if frozen else None
        return Started(make_engine(folder, model, clock=clock, **settings), list(notes))

    if frozen:
        return MMApp(boot, clock=lambda: 100.0, theme=app_theme)
    return MMApp(boot, theme=app_theme)


def started_app(
    base_url: str,
    folder: Path,
    *,
    resume: str | None = None,
    **settings: Any,
) -> MMApp:
    """MMApp whose boot is the real start-up on a server (`baseUrl`, model `scripted-model`):
    the window learned from it or from `contextWindow`, and `resume` as `--resume` gives it
    ("" for the latest session). The app's clock is frozen; the engine's is real."""
    settings.setdefault("sessionsDir", str(folder / ".mm" / "sessions"))

    async def boot() -> Started:
        s = Settings(baseUrl=base_url, model="scripted-model", **settings)
        return await start(s, folder, resume=resume)

    return MMApp(boot, clock=lambda: 100.0)


def screen_text(app: MMApp) -> str:
    """The transcript's lines as plain text (what is on screen of it), without the scrollbar."""
    view = app.main.view
    return "\n".join(view.content_line(y).text.rstrip() for y in range(view.size.height))


def all_text(app: MMApp) -> str:
    """Every line the transcript holds, on screen or not."""
    view = app.main.view
    return "\n".join(
        strip.text.rstrip()
        for item in app.main.transcript.items
        for strip in view.drawn_lines(item) or []
    )


def painted(app: MMApp) -> str:
    """What the terminal shows, through the compositor and each widget's line cache: a line
    that was never asked to repaint still shows its old text here."""
    return "\n".join(strip.text.rstrip() for strip in app.screen._compositor.render_strips())


async def painted_soon(pilot: Any, app: MMApp, wanted: str, within: float = 5.0) -> bool:
    """Whether `wanted` reaches the screen within `within` seconds (a loaded machine may take
    several frames; a line never repainted never gets there)."""
    return await await_until(lambda: wanted in painted(app), within, 0.05, pilot=pilot)


def screen_painted(app: MMApp) -> bool:
    """Whether the main screen has painted every change asked of it (nothing waits for its next
    update: on a loaded machine the update can come a timer tick after the view settled)."""
    screen = app.main
    return not (
        screen._dirty_widgets
        or screen._repaint_required
        or screen._layout_required
        or screen._scroll_required
    )


def turn_running(app: MMApp) -> bool:
    """Whether a turn runs or is about to: the engine is busy, or a turn's worker has not ended
    (it starts the engine's turn a moment after a request is sent)."""
    engine = app.engine
    if engine is not None and engine.busy:
        return True
    return any(w.group == "turn" and not w.is_finished for w in app.workers)


async def settle(pilot: Any, app: MMApp, *, idle: bool = True, timeout: float = 10.0) -> None:
    """Wait until mm has started, the turn is over (when `idle`) and the view has drawn what
    changed. Checked again once the app has handled every message pending (an event of the
    turn, a frame that scheduled another): settled then, it is settled."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout

    def ready() -> bool:
        if app.engine is None or not app.prompt_in_place:
            return False
        if (idle and turn_running(app)) or app.main.deltas_pending:
            return False
        return app.main.view.settled

    while True:
        if not await await_until(ready, max(0.0, deadline - loop.time()), pilot=pilot):
            raise TimeoutError("the window did not settle")
        await pilot.pause()  # every message queued until now handled, the screen updated
        if ready():
            return
