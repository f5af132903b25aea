"""Window mode and a session's past: `--resume` and `/sessions` redraw the conversation from the
journal (each call with the status and time it really had, the recaps, the notices, a compaction
that unfolds to its summary), later turns after `/new` or a reopen update on screen, and the
header shows how full the model's context is.

Sessions are made by running real turns through the engine on the scripted server (real SSE over
a socket), then opened by a new app started as `mm --resume` starts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support.engine import make_engine, of, turn
from support.scripted_server import Error, Reply, ScriptedServer, call
from support.waiting import until
from support.window_helpers import all_text, painted, painted_soon, screen_text, settle, started_app
from textual.widgets import OptionList

from mm_tui.core.events import (
    ContextUsage,
    Decision,
    HistoryCompacted,
    HistoryShortened,
    PermissionRequested,
    ToolCallFinished,
)
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import INTERRUPTED, Session
from mm_tui.window.screens.sessions import SessionsScreen
from mm_tui.window.transcript.renderers.strips import format_elapsed
from mm_tui.window.transcript.store import CompactionItem, NoticeItem, RecapItem, ToolItem
from mm_tui.window.transcript.view import TranscriptView
from mm_tui.window.widgets.agent_header import AgentHeader

# the context after each turn, against the config's window: an estimate (`~`), since the
# scripted replies report 10 prompt tokens whatever the request, which is no count of it
CTX = r"ctx ~[\d,]+ / 4,096 \(\d+%\)"
SUMMARY = "Summary: the person had three calls run and a count made; nothing is left to do."


def sessions(folder: Path) -> Path:
    return folder / ".mm" / "sessions"


def tools(app: Any) -> list[ToolItem]:
    return [i for i in app.main.transcript.items if type(i) is ToolItem]


def notices(app: Any) -> list[tuple[str, str]]:
    return [(i.level, i.text) for i in app.main.transcript.items if isinstance(i, NoticeItem)]


def tool_row(app: Any, title: str) -> str:
    """The painted line of the tool call titled `title`."""
    return next(line for line in painted(app).splitlines() if f"‣ {title} " in line)


def kill_after_a_call(folder: Path, session_id: str, command: str) -> None:
    """What a kill leaves: the model's message asking for a call is in the journal, its result
    never is, and the last line was cut short in the middle of a write."""
    flush_all()
    session = Session.load(sessions(folder), session_id)
    session.add_message({"role": "user", "content": "one more thing"})
    session.add_message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "k1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": f'{{"command": "{command}"}}'},
                }
            ],
        }
    )
    session.save()
    closed = session.close()
    assert closed is not None
    closed.result(10)
    with session.path.open("ab") as journal:
        journal.write(b'{"type": "message", "message": {"role": "tool", "tool_')


async def a_worked_session(server: ScriptedServer, folder: Path) -> tuple[str, list[Any]]:
    """Three turns on the server, then a /compact, then a kill: every kind of record. Returns the
    session's id and the events each turn emitted."""
    server.script(
        Reply(
            tool_calls=[
                call("bash", {"command": "sleep 0.3; echo hello"}, id="c1"),
                call("read_file", {"path": "missing.txt"}, id="c2"),
                call("bash", {"command": "echo refused"}, id="c3"),
            ]
        ),
        Reply("Three calls ran."),
        Reply(tool_calls=[call("bash", {"command": "seq 1 8000"}, id="c4")]),
        Reply("Counted."),
        Reply(SUMMARY),  # /compact's
        Error(400, "the model fell over"),
    )
    engine = make_engine(folder, server, yolo=False, contextWindow=4096)
    await engine.learn_context_window()

    def answer(request: PermissionRequested) -> Decision:
        return Decision.REJECT if "refused" in request.title else Decision.ALLOW_ONCE

    events = await turn(engine, "three calls", answer)
    events += await turn(engine, "count", answer)
    compacted: list[Any] = []
    await engine.compact(compacted.append)
    events += compacted
    events += await turn(engine, "and fail", answer)
    session_id = engine.session.id
    await engine.aclose()
    kill_after_a_call(folder, session_id, "sleep 99")
    return session_id, events


async def test_resume_redraws_the_conversation(folder: Path) -> None:
    with ScriptedServer() as server:
        session_id, events = await a_worked_session(server, folder)
        finished = {e.call_id: e for e in of(events, ToolCallFinished)}
        assert [finished[c].status for c in ("c1", "c2", "c3", "c4")] == [
            "ok",
            "error",
            "rejected",
            "ok",
        ]
        app = started_app(server.base_url, folder, resume=session_id, contextWindow=8192)
        async with app.run_test(size=(120, 70)) as pilot:
            await settle(pilot, app)
            lines = tools(app)
            assert [(t.call_id, t.status) for t in lines] == [
                ("c1", "ok"),
                ("c2", "error"),
                ("c3", "rejected"),
                ("c4", "ok"),
                ("k1", "cancelled"),
            ]
            # Each line as it was live: its title, its mark and its time.
            for item, mark in zip(lines[:4], "✓✗⊘✓", strict=True):
                live = finished[item.call_id]
                assert item.elapsed == round(live.elapsed, 3)
                row = tool_row(app, item.title)
                assert row.endswith(f"{mark} {format_elapsed(item.elapsed)}"), row
            assert lines[0].elapsed is not None and lines[0].elapsed >= 0.3
            assert "‣ bash  sleep 0.3; echo hello " in painted(app)
            assert "‣ read_file  missing.txt " in painted(app)
            assert tool_row(app, 'bash  {"command": "sleep 99"}').endswith("⊘ 0.0s")
            assert lines[4].output == INTERRUPTED
            # The recaps, made as the live ones were (the token counts are the server's).
            recaps = [i.text for i in app.main.transcript.items if isinstance(i, RecapItem)]
            assert len(recaps) == 3
            assert re.fullmatch(
                r"⚙ 2 command\(s\) · 📝 1 file op\(s\) · \d+\.\ds · 30 tokens · " + CTX, recaps[0]
            )
            assert re.fullmatch(r"⚙ 1 command\(s\) · \d+\.\ds · 30 tokens · " + CTX, recaps[1])
            assert re.fullmatch(r"\d+\.\ds · " + CTX, recaps[2])
            assert f"── {recaps[0]} ──" in painted(app)
            # Notices: the shortening, the error, then what start-up said.
            (shortened,) = of(events, HistoryShortened)
            said = notices(app)
            assert (
                "info",
                f"shortened 1 tool output by {shortened.chars_cut:,} characters to fit the "
                "model's context; the session journal keeps it whole",
            ) in said
            assert any(level == "error" and "the model fell over" in text for level, text in said)
            torn = [text for level, text in said if level == "warning"]
            assert len(torn) == 1 and "was cut short" in torn[0]
            assert ("info", f"resumed session {session_id}") in said
            # The compaction: one line, its summary folded beneath; Enter opens it.
            (compaction,) = [i for i in app.main.transcript.items if isinstance(i, CompactionItem)]
            (live_compaction,) = of(events, HistoryCompacted)
            assert compaction.title == live_compaction.title  # token counts too
            assert compaction.folded and SUMMARY not in painted(app)
            assert painted(app).count(compaction.title) == 1
            await pilot.press("tab", "up", "up")
            assert isinstance(app.focused, TranscriptView)
            assert app.main.view.cursor == compaction.id - 1
            await pilot.press("enter")
            await settle(pilot, app)
            assert not compaction.folded
            assert await painted_soon(pilot, app, f"    {SUMMARY}")
            row = tool_row(app, compaction.title)
            assert row.endswith("✓") and not row.endswith("s")  # no time of its own
            # The messages it replaced are still there, before it.
            text = screen_text(app)
            assert text.index("› three calls") < text.index(compaction.title)
            assert "Three calls ran." in text and "Counted." in text
            # The conversation goes on in the resumed session.
            server.script(Reply("Still here."))
            await pilot.press("shift+tab")
            await pilot.press(*"go on", "enter")
            await settle(pilot, app)
            assert await painted_soon(pilot, app, "Still here.")
            assert app.engine is not None and app.engine.session.id == session_id


async def test_the_redraw_ends_at_the_bottom(folder: Path) -> None:
    script = []
    for n in range(12):
        script += [Reply(tool_calls=[call("bash", {"command": f"echo {n}"}, id=f"c{n}")])]
        script += [Reply(f"answer {n}")]
    with ScriptedServer(*script) as server:
        engine = make_engine(folder, server)
        for n in range(12):
            await turn(engine, f"question {n}")
        session_id = engine.session.id
        await engine.aclose()
        flush_all()
        app = started_app(server.base_url, folder, resume=session_id)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            view = app.main.view
            assert view.max_scroll_y > 0
            assert view.scroll_offset.y == view.max_scroll_y
            assert "answer 11" in painted(app)
            assert "question 0" not in painted(app)
            assert len(tools(app)) == 12


async def test_a_torn_last_line_is_one_warning(folder: Path) -> None:
    with ScriptedServer(Reply("first answer")) as server:
        engine = make_engine(folder, server)
        await turn(engine, "hello")
        session_id = engine.session.id
        await engine.aclose()
        flush_all()
        torn = b'{"type": "turn", "ela'
        with (sessions(folder) / f"{session_id}.jsonl").open("ab") as journal:
            journal.write(torn)
        app = started_app(server.base_url, folder, resume="")
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            warnings = [text for level, text in notices(app) if level == "warning"]
            assert len(warnings) == 1
            cut = f"was cut short ({len(torn)} bytes: mm was stopped while writing it)"
            assert cut in warnings[0]
            assert [text for _, text in notices(app)].count(warnings[0]) == 1
            assert "first answer" in painted(app)


async def test_sessions_reopens_and_later_turns_update_after_new_and_reopen(
    folder: Path,
) -> None:
    """The item ids start again at each new session; the view finds an item's lines by its id.
    After /new and after a reopen, a streamed answer must reach the screen whole, and a tool
    line its ✓ and its output."""

    def a_turn(n: int) -> list[Reply]:
        words = f"the final words of turn {n}, streamed in small pieces over several frames"
        return [
            Reply(tool_calls=[call("bash", {"command": f"echo out{n}"}, id=f"t{n}")]),
            Reply(words, split=3, delay=0.01),
        ]

    with ScriptedServer(*a_turn(1), *a_turn(2), *a_turn(3)) as server:
        app = started_app(server.base_url, folder)
        async with app.run_test(size=(100, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"first", "enter")
            await settle(pilot, app)
            first = app.engine.session.id
            assert await painted_soon(pilot, app, "the final words of turn 1, streamed")
            await pilot.press(*"/new", "enter")
            await settle(pilot, app)
            assert app.main.transcript.items[0].id == 1
            await pilot.press(*"second", "enter")
            await settle(pilot, app)
            assert await painted_soon(pilot, app, "pieces over several frames")
            assert "the final words of turn 2, streamed in small pieces over several" in painted(
                app
            )
            assert tool_row(app, "bash  echo out2").endswith(
                "✓ " + format_elapsed(tools(app)[0].elapsed)
            )
            await pilot.press("ctrl+o")
            assert await painted_soon(pilot, app, "    out2")
            await pilot.press("ctrl+o")
            # /sessions: the newest (this one) first; the first session second.
            await pilot.press(*"/sessions", "enter")
            await until(
                lambda: (
                    isinstance(app.screen, SessionsScreen) and isinstance(app.focused, OptionList)
                ),
                "the sessions screen",
                pilot=pilot,
            )
            await pilot.press("down", "enter")
            await settle(pilot, app)
            assert app.engine.session.id == first
            assert app.engine.turn_number == 1
            assert await painted_soon(pilot, app, f"resumed session {first}")
            text = painted(app)
            assert "› first" in text and "the final words of turn 1" in text
            assert tool_row(app, "bash  echo out1").endswith(
                "✓ " + format_elapsed(tools(app)[0].elapsed)
            )
            assert "turn 2" not in text
            await pilot.press(*"third", "enter")
            await settle(pilot, app)
            assert await painted_soon(pilot, app, "turn 3, streamed in small pieces over several")
            assert tool_row(app, "bash  echo out3").endswith(
                "✓ " + format_elapsed(tools(app)[1].elapsed)
            )
            await pilot.press("ctrl+o")
            assert await painted_soon(pilot, app, "    out3")


async def test_the_header_shows_the_context_and_follows_it(folder: Path) -> None:
    with ScriptedServer(serves="llama.cpp", context_window=8192, report_usage=True) as server:
        server.script(Reply("an answer"))
        app = started_app(server.base_url, folder)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot, app)
            header = app.screen.query_one(AgentHeader)
            usage = app.engine.context_usage()
            assert usage is not None and usage.window == 8192
            shown = header.render().plain
            assert f" {usage.text}  auto " in shown
            assert " ctx ~" in shown  # no count of the server's yet: the estimate says so
            # the system prompt's and the tools' part apart, an estimate too before a request
            assert usage.fixed and f" · fixed ~{usage.fixed:,}  auto " in shown
            assert shown.startswith(" mm [mm] · scripted-model @ ")
            app.main.emit(ContextUsage(used=6000, window=8192))
            await settle(pilot, app)
            assert " ctx 6,000 / 8,192 (73%)  auto " in header.render().plain
            assert "ctx 6,000 / 8,192 (73%)" in painted(app).splitlines()[0]
            app.main.emit(ContextUsage(used=1, window=99, agent="helper"))  # an asked agent's own
            await settle(pilot, app)
            assert "ctx 6,000" in header.render().plain
            await pilot.press(*"hello", "enter")
            await settle(pilot, app)
            after = app.engine.context_usage()
            assert after is not None and after.used != 6000
            assert f" {after.text}  auto " in header.render().plain
            assert " ctx ~" not in header.render().plain  # the server counted the request
            assert f" · fixed {after.fixed:,}  auto " in header.render().plain  # /tokenize's
            assert "ctx" not in all_text(app).replace(after.text, "")  # not in the transcript


@pytest.mark.parametrize(
    ("width", "model", "expected"),
    [
        (
            100,
            "qwen2.5-coder:7b",
            " mm [mm] · qwen2.5-coder:7b @ Ollama"
            + " " * 18
            + " /work/project  ctx 1,234 / 4,096 (30%)  auto ",
        ),
        (
            80,
            "tiny",
            " mm [mm] · tiny @ Ollama"
            + " " * 10
            + " /work/project  ctx 1,234 / 4,096 (30%)  auto ",
        ),
        # No room for the context whole: it goes, and the agent keeps its name.
        (
            80,
            "qwen2.5-coder:7b",
            " mm [mm] · qwen2.5-coder:7b @ Ollama" + " " * 23 + " /work/project  auto ",
        ),
        # Too narrow for the agent even so: the context went first.
        (50, "qwen2.5-coder:7b", " mm [mm] · qwen2.5-coder:7b @ O…  …/project  auto "),
    ],
)
async def test_the_context_gives_way_to_the_agent(width: int, model: str, expected: str) -> None:
    """The context is the first to go: it never cuts the agent's name."""
    from textual.app import App, ComposeResult

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield AgentHeader()

    app = One()
    async with app.run_test(size=(width, 3)) as pilot:
        header = app.query_one(AgentHeader)
        header.show(title="mm", model=model, provider="Ollama", cwd="/work/project", mode="auto")
        header.show_context("ctx 1,234 / 4,096 (30%)")
        await pilot.pause()
        assert header.render().plain == expected
        assert len(expected) == width


async def test_compact_shows_its_line_and_a_failure_says_so(folder: Path) -> None:
    with ScriptedServer(
        Reply("hi there"), Reply(SUMMARY), Error(400, "no summary today")
    ) as server:
        app = started_app(server.base_url, folder)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"hello", "enter")
            await settle(pilot, app)
            await pilot.press(*"/compact", "enter")
            await until(
                lambda: isinstance(app.main.transcript.items[-1], CompactionItem),
                "the compaction's line",
                pilot=pilot,
            )
            await settle(pilot, app)
            item = app.main.transcript.items[-1]
            assert isinstance(item, CompactionItem)
            assert item.title == "compacted 3 messages into a summary by /compact"
            assert (item.output, item.folded) == (SUMMARY, True)
            assert await painted_soon(
                pilot, app, "‣ compacted 3 messages into a summary by /compact"
            )
            assert not any("history compacted" in text for _, text in notices(app))
            await pilot.press("ctrl+o")
            assert await painted_soon(pilot, app, f"    {SUMMARY}")
            await pilot.press(*"/compact", "enter")
            await until(
                lambda: "/compact failed" in getattr(app.main.transcript.items[-1], "text", ""),
                "the failure's notice",
                pilot=pilot,
            )
            level, text = notices(app)[-1]
            assert level == "error" and text.startswith("/compact failed: ")
            assert "no summary today" in text
            assert sum(isinstance(i, CompactionItem) for i in app.main.transcript.items) == 1
