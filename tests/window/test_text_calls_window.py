"""A tool call the model wrote in its text, in the window: its line says it was read from the
answer's text, and the call's text never showed as an answer, not even for a frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.style import Style
from support.events import tool_started
from support.scripted_model import ScriptedModel, say
from support.window_helpers import make_app, screen_text, settle

from mm_tui.core.events import FROM_TEXT, TextDelta, Usage
from mm_tui.engine.model_stream import StreamEnd, TextChunk
from mm_tui.window.transcript.renderers.tool_line import ToolLine
from mm_tui.window.transcript.store import AnswerItem, ToolItem, Transcript

REPLY = (
    "Listing.\n"
    '<tool_call>\n{"name": "bash", "arguments": {"command": "echo from-text"}}\n</tool_call>'
)


def streamed(text: str, size: int = 3) -> list[Any]:
    pieces = [TextChunk(text[i : i + size]) for i in range(0, len(text), size)]
    return [*pieces, StreamEnd("stop", usage=Usage(10, 5))]


async def test_a_call_from_the_text_is_marked_and_never_shown_as_an_answer(folder: Path) -> None:
    model = ScriptedModel(streamed(REPLY), say("Done."))
    app = make_app(model, folder, yolo=True)
    answers_seen: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        transcript = app.main.transcript
        apply = transcript.apply

        def watching(event: Any) -> Any:  # every answer's text as the window held it
            changed = apply(event)
            answers_seen.extend(i.text for i in transcript.items if isinstance(i, AnswerItem))
            return changed

        transcript.apply = watching  # type: ignore[method-assign]
        await pilot.press(*"go")
        await pilot.press("enter")
        await settle(pilot, app)
        text = screen_text(app)
    assert f"‣ bash  echo from-text  · {FROM_TEXT}" in text
    assert "Listing." in text and "Done." in text
    assert answers_seen and not any("tool_call" in seen or "{" in seen for seen in answers_seen)
    items = [i for i in app.main.transcript.items if isinstance(i, ToolItem)]
    assert [(i.tool, i.from_text, i.status) for i in items] == [("bash", True, "ok")]


def test_an_ordinary_calls_line_has_no_mark() -> None:
    """The mark is the call's from_text alone: an ordinary call's line is what it was."""
    store = Transcript(clock=lambda: 0.0)
    store.apply(tool_started("bash", {"command": "ls"}))
    item = store.items[-1]
    assert isinstance(item, ToolItem) and not item.from_text
    line = ToolLine(Console(width=80), lambda name: Style())
    assert FROM_TEXT not in line.header(item, 80, 0.0).text
    item.from_text = True
    assert f"‣ bash  ls  · {FROM_TEXT}" in line.header(item, 80, 0.0).text


def test_the_event_carries_it_to_the_store() -> None:
    store = Transcript(clock=lambda: 0.0)
    event = tool_started("bash", {"command": "ls"})
    from dataclasses import replace

    store.apply(replace(event, from_text=True))
    store.apply(TextDelta(text="after"))
    tools = [i for i in store.items if isinstance(i, ToolItem)]
    assert [t.from_text for t in tools] == [True]


async def test_a_session_drawn_again_keeps_the_mark(folder: Path) -> None:
    """The journal keeps that a call was read from the text: `--resume` draws its line as it
    was, and an ordinary call's line without the mark."""
    from support.engine import make_engine
    from support.engine import turn as run
    from support.scripted_model import call

    from mm_tui.engine.journal import flush_all
    from mm_tui.engine.session import Session
    from mm_tui.window.transcript.store import transcript_from_records

    model = ScriptedModel(streamed(REPLY), call("bash", {"command": "echo plain"}), say("Done."))
    engine = make_engine(folder, model, yolo=True)
    await run(engine, "go")
    flush_all()
    session = engine.session
    records = Session.load(session.folder, session.id).records
    store = Transcript(clock=lambda: 0.0)
    transcript_from_records(store, records)
    tools = [i for i in store.items if isinstance(i, ToolItem)]
    assert [(t.title, t.from_text) for t in tools] == [
        ("bash  echo from-text", True),
        ("bash  echo plain", False),
    ]
