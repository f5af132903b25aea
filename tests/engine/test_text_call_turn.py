"""A model that writes its tool call as text, through the real provider client and the scripted
server: the call runs as a structured one would (permission, journal, result sent back), and
its text is never shown as an answer."""

from __future__ import annotations

from pathlib import Path

from support.engine import make_engine, of
from support.engine import turn as run
from support.scripted_server import Reply, ScriptedServer
from support.session_helpers import saved as saved_session

from mm_tui.core.events import (
    Decision,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from mm_tui.engine.guards import LOOP_WARNING

HERMES = (
    "I'll list the files.\n"
    '<tool_call>\n{"name": "bash", "arguments": {"command": "echo from-text"}}\n</tool_call>'
)


async def test_a_hermes_call_in_the_text_runs_as_a_call(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.script(Reply(HERMES, split=3), Reply("It printed from-text."))
        engine = make_engine(tmp_path, server, yolo=False)  # bash asks first
        asked: list[PermissionRequested] = []

        def answer(question: PermissionRequested) -> Decision:
            asked.append(question)
            return Decision.ALLOW_ONCE

        events = await run(engine, "list", answer=answer)
        sent = server.wait_for_requests(2)[1].messages
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.stop_reason == "end_turn", end
    started = of(events, ToolCallStarted)
    assert [(s.tool, s.title, s.from_text) for s in started] == [
        ("bash", "bash  echo from-text", True)
    ]
    assert [q.call_id for q in asked] == [started[0].call_id]
    finished = of(events, ToolCallFinished)
    assert [(f.status, f.output) for f in finished] == [("ok", "from-text\n")]
    shown = "".join(e.text for e in of(events, TextDelta))
    assert shown == "I'll list the files.\nIt printed from-text."
    # what the next request carries: the call as the API's, its result paired with it
    assistant, result = sent[-2], sent[-1]
    assert assistant["content"] == "I'll list the files."
    assert [c["function"] for c in assistant["tool_calls"]] == [
        {"name": "bash", "arguments": '{"command": "echo from-text"}'}
    ]
    assert result == {
        "role": "tool",
        "tool_call_id": assistant["tool_calls"][0]["id"],
        "content": "from-text\n",
    }
    # and the journal holds it
    messages = saved_session(engine.session)["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[2]["tool_calls"][0]["id"] == started[0].call_id
    assert messages[3]["tool_call_id"] == started[0].call_id


async def test_calls_from_text_get_ids_of_their_own_and_meet_the_loop_guard(
    tmp_path: Path,
) -> None:
    same = '{"name": "bash", "parameters": {"command": "echo again"}}'
    with ScriptedServer() as server:
        server.script(Reply(same), Reply(same), Reply(same), Reply("stopping"))
        engine = make_engine(tmp_path, server, yolo=True)
        events = await run(engine, "go")
        sent = server.wait_for_requests(4)[3].messages
    ids = [c["id"] for m in sent if m["role"] == "assistant" for c in m["tool_calls"]]
    assert len(ids) == 3 and len(set(ids)) == 3
    outputs = [f.output for f in of(events, ToolCallFinished)]
    assert LOOP_WARNING in outputs[-1]
    assert all(s.from_text for s in of(events, ToolCallStarted))
    assert "".join(e.text for e in of(events, TextDelta)) == "stopping"


async def test_an_answer_that_quotes_a_call_stays_an_answer(tmp_path: Path) -> None:
    text = 'A call looks like `{"name": "bash", "arguments": {"command": "ls"}}` in JSON.'
    with ScriptedServer() as server:
        server.script(Reply(text, split=2))
        engine = make_engine(tmp_path, server, yolo=True)
        events = await run(engine, "explain")
    assert of(events, ToolCallStarted) == []
    assert "".join(e.text for e in of(events, TextDelta)) == text
    assert saved_session(engine.session)["messages"][-1]["content"] == text


async def test_text_held_back_is_shown_when_the_stream_fails(tmp_path: Path) -> None:
    """A reply cut by the server while its held text waits: what was held is shown, as any
    answer's text before a failure is."""
    from support.scripted_server import drop_after, text_chunks

    with ScriptedServer() as server:
        server.script(drop_after(6, text_chunks('Look: ```json\n{"a": 1, "b": 2}', 4)))
        engine = make_engine(tmp_path, server, yolo=True)
        events = await run(engine, "go")
    shown = "".join(e.text for e in of(events, TextDelta))
    assert shown.startswith("Look: ```json")
    assert isinstance(events[-1], TurnEnded) and events[-1].stop_reason == "error"


async def test_held_text_beside_structured_calls_is_shown(tmp_path: Path) -> None:
    """Text that looked like a call, in a reply whose calls are structured: the text is the
    answer's and is shown; only the structured call runs."""
    from support.scripted_server import call

    text = 'Like this:\n```json\n{"name": "bash", "arguments": {"command": "echo no"}}'
    with ScriptedServer() as server:
        server.script(Reply(text, tool_calls=[call("bash", {"command": "echo yes"})]), Reply("ok"))
        engine = make_engine(tmp_path, server, yolo=True)
        events = await run(engine, "go")
    assert "".join(e.text for e in of(events, TextDelta)) == text + "ok"
    assert [(s.title, s.from_text) for s in of(events, ToolCallStarted)] == [
        ("bash  echo yes", False)
    ]
