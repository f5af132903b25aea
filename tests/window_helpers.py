"""Building MMApp for tests: an engine on a given model, frozen clocks, a fixed folder; or MMApp
started as `mm` starts it (`startup.start`) on the scripted server, `--resume` included."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mm_tui.app import MMApp
from mm_tui.config import Settings
from mm_tui.engine.session import Session
from mm_tui.engine.turn import Engine
from mm_tui.playground import PLAYGROUND
from mm_tui.startup import Started, start, tool_registry
from mm_tui.transcript import Item

FIXED_FOLDER = Path("/tmp/mm-test-playground")


def playground(folder: Path = FIXED_FOLDER) -> Path:
    """The demo's small project in a folder whose name never changes, so screenshots match."""
    shutil.rmtree(folder, ignore_errors=True)
    for name, content in PLAYGROUND.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return folder


def make_app(
    model: Any,
    folder: Path,
    *,
    notes: tuple[str, ...] = (),
    frozen: bool = True,
    app_theme: str | None = None,
    **settings: Any,
) -> MMApp:
    clock = (lambda: 100.0) if frozen else None
    settings.setdefault("sessionsDir", str(folder / ".mm" / "sessions"))

    async def boot() -> Started:
        s = Settings(**settings)
        session = Session.new(
            folder / ".mm" / "sessions",
            cwd=folder,
            model=model.model,
            provider=model.provider,
            base_url=model.base_url,
        )
        kwargs = {"clock": (lambda: 0.0)} if frozen else {}
        registry = tool_registry(s, folder)
        engine = Engine(s, model, cwd=folder, session=session, registry=registry, **kwargs)
        return Started(engine, list(notes))

    app = MMApp(boot, clock=clock, theme=app_theme) if clock else MMApp(boot, theme=app_theme)
    return app


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
    view = app.view
    return "\n".join(
        "".join(segment.text for segment in view._content_line(y)).rstrip()
        for y in range(view.size.height)
    )


def all_text(app: MMApp) -> str:
    """Every line the transcript holds, on screen or not."""
    view = app.view
    out = []
    for index, lines in enumerate(view._lines):
        item: Item = app.transcript.items[index]
        for row, strip in enumerate(lines or []):
            if row == view._header_row(index) and item.foldable and hasattr(item, "call_id"):
                strip = view.tool_line.header(item, view._width, app.clock())
            out.append(strip.text.rstrip())
    return "\n".join(out)


async def settle(pilot: Any, app: MMApp, *, idle: bool = True, timeout: float = 10.0) -> None:
    """Wait until the turn is over (when `idle`) and the view has drawn what changed."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await pilot.pause(0.05)
        engine = app.engine
        ready = engine is not None and (not idle or not engine.busy)
        if ready and not app.view._dirty and not app.view._flush_scheduled:
            await pilot.pause(0.05)
            return
        if loop.time() > deadline:
            raise TimeoutError("the window did not settle")
