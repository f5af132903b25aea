"""The agent loop: events in order, tools run and answered, guards, permissions, cancellation."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from support.engine import make_engine, of
from support.engine import turn as run
from support.processes import running
from support.scripted_model import ScriptedModel, call, calls, say
from support.scripted_server import SSE, Reply, ScriptedServer, chunk, finish_chunk
from support.session_helpers import saved as saved_session
from support.waiting import await_until

from mm_tui.core.events import (
    ComposingToolCall,
    Decision,
    EngineError,
    Event,
    PermissionRequested,
    TextDelta,
    Thinking,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from mm_tui.engine.demo import DemoModel
from mm_tui.engine.guards import LOOP_WARNING
from mm_tui.engine.model_stream import ModelError, StreamEnd, ToolCallChunk
from mm_tui.engine.playground import make_playground
from mm_tui.engine.session import Session


async def test_plain_answer(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, ScriptedModel(say("Hello there")))
    events = await run(engine, "hi")
    assert isinstance(events[0], TurnStarted) and events[0].text == "hi"
    assert isinstance(events[1], Thinking) and events[1].state == "Thinking"
    assert "".join(e.text for e in of(events, TextDelta)) == "Hello there"
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.stop_reason == "end_turn"
    assert end.usage.total_tokens == 15
    saved = saved_session(engine.session)
    assert [m["role"] for m in saved["messages"]] == ["system", "user", "assistant"]
    assert saved["messages"][-1]["content"] == "Hello there"


async def test_tool_call_runs_and_result_goes_back(tmp_path: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "echo hi"}), say("it said hi"))
    engine = make_engine(tmp_path, model)
    events = await run(engine, "say hi")
    started = of(events, ToolCallStarted)[0]
    assert started.title == "bash  echo hi"
    assert started.display == "🛠️  bash: echo hi"
    assert started.kind == "execute"
    finished = of(events, ToolCallFinished)[0]
    assert finished.status == "ok" and finished.output == "hi\n"
    assert model.requests[1][-1] == {"role": "tool", "tool_call_id": "c1", "content": "hi\n"}
    assert events[-1].counters.commands == 1
    assert events[-1].counters.parts() == ["⚙ 1 command(s)"]


async def test_counters_of_every_kind(tmp_path: Path) -> None:
    (tmp_path / ".mm" / "skills").mkdir(parents=True)
    (tmp_path / ".mm" / "skills" / "style.md").write_text("be brief\n")
    (tmp_path / "a.txt").write_text("x\n")
    model = ScriptedModel(
        calls(
            ("bash", {"command": "true"}, "1"),
            ("read_file", {"path": "a.txt"}, "2"),
            ("write_file", {"path": "b.txt", "content": "y\n"}, "3"),
            ("read_skill", {"name": "style"}, "4"),
        ),
        say("done"),
    )
    engine = make_engine(tmp_path, model)
    events = await run(engine, "all")
    end = events[-1]
    assert end.counters.parts() == ["⚙ 1 command(s)", "📝 2 file op(s)", "📖 1 skill(s)"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"command": "ls"', "the arguments of bash are not valid JSON"),
        ("[1, 2]", "the arguments of bash must be a JSON object"),
        ("{}", 'field "command" is missing'),
        ('{"command": 5}', 'field "command"'),
    ],
)
async def test_malformed_arguments_get_a_clear_result(
    tmp_path: Path, arguments: str, expected: str
) -> None:
    model = ScriptedModel(call("bash", arguments), say("sorry"))
    engine = make_engine(tmp_path, model)
    events = await run(engine, "go")
    finished = of(events, ToolCallFinished)[0]
    assert finished.status == "error"
    assert expected in finished.output
    assert "command (string, required)" in finished.output
    assert events[-1].stop_reason == "end_turn"  # the turn went on


async def test_unknown_tool(tmp_path: Path) -> None:
    model = ScriptedModel(call("teleport", {"to": "mars"}), say("ok"))
    events = await run(make_engine(tmp_path, model), "go")
    output = of(events, ToolCallFinished)[0].output
    assert output.startswith('[error: there is no tool named "teleport" — the tools are: bash')


async def test_loop_detector_warns_then_stops(tmp_path: Path) -> None:
    same = call("bash", {"command": "false"})
    model = ScriptedModel(*[same] * 6)
    engine = make_engine(tmp_path, model)
    events = await run(engine, "loop")
    outputs = [e.output for e in of(events, ToolCallFinished)]
    assert len(outputs) == 6
    assert not outputs[0].endswith(LOOP_WARNING) and not outputs[1].endswith(LOOP_WARNING)
    assert all(o.endswith(LOOP_WARNING) for o in outputs[2:5])
    stop = (
        "[error: the model repeated the same bash call 6 times in a row with the same failing "
        "result — turn stopped by the loop detector; rephrase the request, or fix what the tool "
        "kept reporting]"
    )
    assert outputs[5] == stop
    end = events[-1]
    assert end.stop_reason == "loop_detected" and end.error == stop
    saved = saved_session(engine.session)
    assert saved["errors"][-1]["where"] == "generation"
    assert saved["errors"][-1]["message"] == stop
    # The history keeps everything that ran.
    assert sum(1 for m in saved["messages"] if m["role"] == "tool") == 6


async def test_new_session_resets_the_loop_detector(tmp_path: Path) -> None:
    same = call("bash", {"command": "false"})
    engine = make_engine(tmp_path, ScriptedModel(same, same, say("x"), same, say("y")))
    await run(engine, "a")
    engine.new_session(
        Session.new(tmp_path / "s2", cwd=str(tmp_path), model="m", provider="p", base_url="u")
    )
    events = await run(engine, "b")
    assert not of(events, ToolCallFinished)[0].output.endswith(LOOP_WARNING)


@pytest.mark.parametrize(
    ("decision", "status", "runs"),
    [
        (Decision.ALLOW_ONCE, "ok", True),
        (Decision.ALLOW_SESSION, "ok", True),
        (Decision.REJECT, "rejected", False),
        (Decision.NEVER, "rejected", False),
    ],
)
async def test_permission_decisions(
    tmp_path: Path, decision: Decision, status: str, runs: bool
) -> None:
    marker = tmp_path / "ran"
    model = ScriptedModel(call("bash", {"command": f"touch {marker}"}), say("ok"))
    engine = make_engine(tmp_path, model, yolo=False)
    asked: list[PermissionRequested] = []
    events = await run(engine, "go", lambda e: asked.append(e) or decision)
    assert len(asked) == 1 and asked[0].tool == "bash" and asked[0].details == f"touch {marker}"
    finished = of(events, ToolCallFinished)[0]
    assert finished.status == status
    assert marker.exists() == runs
    if not runs:
        assert finished.output == "[command rejected by the user]"


async def test_session_and_never_are_remembered(tmp_path: Path) -> None:
    model = ScriptedModel(
        call("bash", {"command": "true"}),
        call("bash", {"command": "echo 2"}, "c2"),
        say("ok"),
        call("write_file", {"path": "f", "content": "x"}),
        call("write_file", {"path": "g", "content": "y"}, "c2"),
        say("ok"),
    )
    engine = make_engine(tmp_path, model, yolo=False)
    answers = {"bash": Decision.ALLOW_SESSION, "write_file": Decision.NEVER}
    asked: list[str] = []
    events = await run(engine, "one", lambda e: asked.append(e.tool) or answers[e.tool])
    events += await run(engine, "two", lambda e: asked.append(e.tool) or answers[e.tool])
    assert asked == ["bash", "write_file"]
    finished = of(events, ToolCallFinished)
    assert [f.status for f in finished] == ["ok", "ok", "rejected", "rejected"]
    assert finished[2].output == "[write_file rejected by the user]"
    assert engine.permissions.standing() == answers


async def test_yolo_never_asks(tmp_path: Path) -> None:
    model = ScriptedModel(call("bash", {"command": "true"}), say("ok"))
    engine = make_engine(tmp_path, model, yolo=True)
    events = await run(engine, "go", lambda e: pytest.fail("asked under yolo"))
    assert of(events, ToolCallFinished)[0].status == "ok"


async def test_cancel_stops_the_running_tool(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            ("bash", {"command": "echo started; sleep 30"}, "a"),
            ("bash", {"command": "echo never"}, "b"),
        )
    )
    engine = make_engine(tmp_path, model)
    events: list[Event] = []
    turn = asyncio.create_task(engine.run_turn("go", events.append))
    # cancelled once the command is in its `sleep 30`: `echo started` has run
    assert await await_until(lambda: running("sleep", "30")), "the command never started"
    assert engine.cancel()
    end = await asyncio.wait_for(turn, 5)
    assert end.stop_reason == "cancelled"
    # the cancelled call is a bash response, and counts as a rejected one does; the call never
    # started does not
    assert end.counters.commands == 1
    finished = of(events, ToolCallFinished)
    assert finished[0].status == "cancelled"
    assert finished[0].output.startswith("started")
    assert finished[0].output.endswith("[error: cancelled]")
    saved = saved_session(engine.session)
    tools = [m for m in saved["messages"] if m["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == ["a", "b"]  # every call answered
    assert tools[1]["content"] == "[error: cancelled]"
    # The engine is usable afterwards.
    engine.client.responses.append(say("back"))
    events = await run(engine, "again")
    assert events[-1].stop_reason == "end_turn"


async def test_a_permission_is_answered_by_a_command_with_no_front_end(tmp_path: Path) -> None:
    """The question is plain data; the answer is `Engine.answer(agent, call_id, decision)`, taken
    once, for the call that asked: nothing else resolves it."""
    model = ScriptedModel(call("bash", {"command": "echo yes"}), say("done"))
    engine = make_engine(tmp_path, model, yolo=False)
    events: list[Event] = []
    turn = asyncio.create_task(engine.run_turn("go", events.append))
    assert await await_until(lambda: of(events, PermissionRequested)), "never asked"
    (asked,) = of(events, PermissionRequested)
    assert json.loads(json.dumps(dataclasses.asdict(asked))) == {
        "agent": None,
        "call_id": "c1",
        "tool": "bash",
        "title": "bash  echo yes",
        "details": "echo yes",
        "pattern": "echo *",
    }
    assert not engine.answer(None, "c2", Decision.ALLOW_ONCE)  # no such question
    assert not engine.answer("helper", "c1", Decision.ALLOW_ONCE)  # an asked agent's call c1
    assert not of(events, ToolCallRunning)
    assert engine.answer(None, "c1", Decision.ALLOW_ONCE)
    assert not engine.answer(None, "c1", Decision.REJECT)  # answered already
    end = await asyncio.wait_for(turn, 10)
    assert end.stop_reason == "end_turn"
    assert [e.call_id for e in of(events, ToolCallRunning)] == ["c1"]
    (finished,) = of(events, ToolCallFinished)
    assert (finished.status, finished.output) == ("ok", "yes\n")


async def test_cancel_while_waiting_for_permission(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, ScriptedModel(call("bash", {"command": "true"})), yolo=False)
    events: list[Event] = []
    turn = asyncio.create_task(engine.run_turn("go", events.append))
    assert await await_until(lambda: of(events, PermissionRequested)), "never asked"
    engine.cancel()
    end = await asyncio.wait_for(turn, 5)
    assert end.stop_reason == "cancelled"
    asked = of(events, PermissionRequested)[0]
    assert not engine.questions.waiting(None, asked.call_id)  # withdrawn with the turn
    assert not engine.answer(None, asked.call_id, Decision.ALLOW_ONCE)  # too late: nothing
    assert of(events, ToolCallFinished)[0].status == "cancelled"


async def test_watchdog_ends_a_silent_turn(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, ScriptedModel(5.0), watchdogTimeout=0.2)
    events = await asyncio.wait_for(run(engine, "hello"), 3)
    end = events[-1]
    assert end.stop_reason == "error"
    assert "the model sent nothing for 0.2s — turn stopped by the watchdog" in end.error
    assert of(events, EngineError)[0].where == "generation"


async def test_runaway_tool_call_is_stopped(tmp_path: Path) -> None:
    pieces = []
    args = '{"command": "'
    for _ in range(100):
        args += "ab12"
        pieces.append(ToolCallChunk(0, "bash", args))
    model = ScriptedModel(pieces + [StreamEnd("tool_calls")])
    engine = make_engine(tmp_path, model)
    events = await run(engine, "go")
    end = events[-1]
    assert end.stop_reason == "error"
    assert end.error.startswith(
        "[error: the model's tool call ran away: its arguments repeat the same pattern ("
    )
    assert not of(events, ToolCallStarted)  # nothing ran on the garbage
    assert of(events, ComposingToolCall)[0].state == "Composing a tool call"


async def test_model_error_is_recorded(tmp_path: Path) -> None:
    model = ScriptedModel(
        ModelError(
            "the model server closed the stream in the middle of the answer", after_tokens=True
        )
    )
    engine = make_engine(tmp_path, model)
    events = await run(engine, "go")
    assert events[-1].stop_reason == "error"
    saved = saved_session(engine.session)
    assert saved["errors"][0]["where"] == "provider"
    assert "closed the stream" in saved["errors"][0]["message"]


async def test_max_turns(tmp_path: Path) -> None:
    model = ScriptedModel(*[call("bash", {"command": f"echo {i}"}, f"c{i}") for i in range(5)])
    engine = make_engine(tmp_path, model, maxTurns=3)
    events = await run(engine, "go")
    assert events[-1].stop_reason == "max_turns"
    assert len(of(events, ToolCallFinished)) == 3


async def test_demo_model_lists_the_files(tmp_path: Path) -> None:
    folder = make_playground(tmp_path)
    engine = make_engine(folder, DemoModel(delay=0))
    events = await run(engine, "list the files")
    started = of(events, ToolCallStarted)[0]
    assert started.title == "bash  ls -la"
    assert "greet.py" in of(events, ToolCallFinished)[0].output
    answer = "".join(e.text for e in of(events, TextDelta))
    assert "greet.py" in answer
    assert events[-1].stop_reason == "end_turn"


async def test_demo_model_helps_with_anything_else(tmp_path: Path) -> None:
    engine = make_engine(tmp_path, DemoModel(delay=0))
    events = await run(engine, "what is the meaning of life?")
    answer = "".join(e.text for e in of(events, TextDelta))
    assert "demo model" in answer and "--base-url" in answer
    assert not of(events, ToolCallStarted)


async def test_calls_sharing_an_index_or_an_id_each_run_under_an_id_of_their_own(
    tmp_path: Path,
) -> None:
    """A server that streams every call on index 0 and a model that repeats ids: each call runs,
    and the conversation sent back names each call by an id of its own, its result after it
    under the same id (a strict server refuses a repeated id)."""
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(f"file {name}\n")

    def whole(index: int, id: str, path: str) -> dict[str, Any]:
        args = json.dumps({"path": path})
        piece = {"index": index, "id": id, "function": {"name": "read_file", "arguments": args}}
        return chunk({"tool_calls": [piece]})

    with ScriptedServer() as server:
        server.script(
            SSE(
                [
                    whole(0, "t", "a.txt"),
                    whole(0, "u", "b.txt"),
                    whole(1, "t", "c.txt"),
                    finish_chunk("tool_calls"),
                ]
            ),
            SSE([whole(0, "t", "a.txt"), finish_chunk("tool_calls")]),
            Reply("done"),
        )
        engine = make_engine(tmp_path, server, yolo=True)
        events = await run(engine, "read them")
        end = events[-1]
        assert isinstance(end, TurnEnded) and end.stop_reason == "end_turn"
        sent = server.wait_for_requests(3)[2].messages
    asked = [m for m in sent if m["role"] in ("assistant", "tool")]
    assert [
        [c["id"] for c in m["tool_calls"]] if m["role"] == "assistant" else m["tool_call_id"]
        for m in asked
    ] == [["t", "u", "t-2"], "t", "u", "t-2", ["t-3"], "t-3"]
    assert ["file a" in asked[1]["content"], "file b" in asked[2]["content"]] == [True, True]
    assert "file c" in asked[3]["content"] and "file a" in asked[5]["content"]
