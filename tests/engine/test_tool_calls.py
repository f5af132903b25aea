"""The engine's tool calls on their own: calls fed in as a model's answer would give them, no
model asked. Parse, permission, run, loop guard, redaction and the records, each as the turn
would see it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.scripted_model import ScriptedModel
from support.waiting import await_until

from mm_tui.config import Settings
from mm_tui.core.events import (
    Decision,
    Event,
    PermissionRequested,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
)
from mm_tui.core.redact import Redactor
from mm_tui.engine.context_keeper import ContextKeeper
from mm_tui.engine.guards import LOOP_STOP_AT, LOOP_WARNING, loop_stop_message
from mm_tui.engine.model_stream import ToolCall
from mm_tui.engine.recorder import SessionRecorder
from mm_tui.engine.server_watch import ServerWatch
from mm_tui.engine.session import Session
from mm_tui.engine.tool_calls import NOT_RUN, ToolCalls
from mm_tui.engine.turn_state import StopTurn, TurnState
from mm_tui.tools.registry import ToolRegistry


def tool_calls(tmp_path: Path, **keys: object) -> ToolCalls:
    """ToolCalls working in `tmp_path` with the configured tools; its model is never asked."""
    settings = Settings(**{"sessionsDir": str(tmp_path / "sessions"), **keys})
    session = Session.new(
        tmp_path / "sessions", cwd=str(tmp_path), model=None, provider=None, base_url=None
    )
    session.messages.append({"role": "system", "content": "you are mm"})
    redactor = Redactor(settings.secret_values())
    session.redactor = redactor
    recorder = SessionRecorder(session)
    registry = ToolRegistry.from_settings(settings, tmp_path)
    context = ContextKeeper(
        settings,
        ScriptedModel(),
        registry,
        recorder,
        redactor=redactor,
        server=ServerWatch(),
        system_prompt=lambda: "you are mm",
    )
    return ToolCalls(settings, tmp_path, registry, recorder, context, redactor=redactor)


def answer(*calls: ToolCall) -> TurnState:
    """The turn's state after a model's answer with `calls`: each waits for its result."""
    return TurnState(pending=list(calls))


def results(calls: ToolCalls) -> list[tuple[str, str, str]]:
    """(call id, status, content) of each tool result in the history."""
    session = calls.recorder.session
    return [
        (m["tool_call_id"], session.tool_results[m["tool_call_id"]].status, m["content"])
        for m in session.messages
        if m["role"] == "tool"
    ]


async def test_calls_run_in_order_and_each_gets_its_result(tmp_path: Path) -> None:
    calls = tool_calls(tmp_path)
    events: list[Event] = []
    batch = [
        ToolCall("c1", "bash", '{"command": "echo one"}'),
        ToolCall("c2", "no_such_tool", "{}"),
        ToolCall("c3", "bash", '{"command": '),
        ToolCall("c4", "read_file", '{"path": "absent.txt"}'),
    ]
    state = answer(*batch)
    await calls.run(batch, events.append, state)
    assert state.pending == []
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.call_id, e.display) for e in started][1:3] == [
        ("c2", "⚠ no_such_tool: {}"),
        ("c3", '⚠ bash: {"command":'),
    ]
    finished = [(e.call_id, e.status) for e in events if isinstance(e, ToolCallFinished)]
    assert finished == [("c1", "ok"), ("c2", "error"), ("c3", "error"), ("c4", "error")]
    recorded = [(call_id, status) for call_id, status, _ in results(calls)]
    assert recorded == finished
    assert results(calls)[0][2] == "one\n"
    assert state.counters == {"commands": 1, "file_ops": 1}  # the malformed ones count not


async def test_a_question_is_answered_by_command_and_a_rejection_runs_nothing(
    tmp_path: Path,
) -> None:
    calls = tool_calls(tmp_path, yolo=False)
    events: list[Event] = []
    decisions = iter([Decision.ALLOW_SESSION, Decision.REJECT])

    def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, PermissionRequested):
            assert calls.questions.answer(None, event.call_id, next(decisions))

    batch = [
        ToolCall("c1", "bash", '{"command": "echo asked"}'),
        ToolCall("c2", "bash", '{"command": "echo standing"}'),  # allowed for the session
        ToolCall("c3", "write_file", '{"path": "f.txt", "content": "x"}'),
    ]
    await calls.run(batch, emit, answer(*batch))
    asked = [e.call_id for e in events if isinstance(e, PermissionRequested)]
    running = [e.call_id for e in events if isinstance(e, ToolCallRunning)]
    assert (asked, running) == (["c1", "c3"], ["c1", "c2"])
    assert [status for _, status, _ in results(calls)] == ["ok", "ok", "rejected"]
    assert not (tmp_path / "f.txt").exists()


async def test_the_loop_guard_warns_then_stops_and_answers_the_rest(tmp_path: Path) -> None:
    calls = tool_calls(tmp_path)
    events: list[Event] = []
    same = [ToolCall(f"c{n}", "bash", '{"command": "echo same"}') for n in range(LOOP_STOP_AT)]
    after = ToolCall("later", "bash", '{"command": "echo never"}')
    state = answer(*same, after)
    with pytest.raises(StopTurn) as stop:
        await calls.run([*same, after], events.append, state)
    assert (stop.value.reason, stop.value.message) == ("loop_detected", loop_stop_message("bash"))
    outputs = [content for _, _, content in results(calls)]
    assert outputs[:2] == ["same\n", "same\n"]
    assert outputs[2] == f"same\n{LOOP_WARNING}"
    assert outputs[-2:] == [loop_stop_message("bash"), NOT_RUN]
    assert state.pending == []


async def test_an_output_that_quotes_a_secret_is_redacted_everywhere(tmp_path: Path) -> None:
    calls = tool_calls(tmp_path, apiKey="sk-test-0123456789abcdef")
    events: list[Event] = []
    batch = [ToolCall("c1", "bash", '{"command": "echo key=sk-test-0123456789abcdef"}')]
    await calls.run(batch, events.append, answer(*batch))
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert "sk-test" not in finished.output and "sk-test" not in results(calls)[0][2]


async def test_a_cancelled_call_is_answered_and_the_rest_by_the_turn(tmp_path: Path) -> None:
    calls = tool_calls(tmp_path)
    events: list[Event] = []
    batch = [ToolCall("c1", "bash", '{"command": "echo started; sleep 30"}')]
    batch.append(ToolCall("c2", "bash", '{"command": "echo never"}'))
    state = answer(*batch)
    running = asyncio.create_task(calls.run(batch, events.append, state))
    assert await await_until(lambda: any(isinstance(e, ToolCallRunning) for e in events))
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    calls.answer_pending(state, "[error: cancelled]", events.append)
    (first, second) = results(calls)
    assert first[:2] == ("c1", "cancelled") and first[2].endswith("[error: cancelled]")
    assert second == ("c2", "cancelled", "[error: cancelled]")
