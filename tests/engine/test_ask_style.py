"""How mm asks a model after its probe (engine/ask_style.py), through start-up and real turns
against the scripted server: as always when the server takes and streams tools, non-streamed
when it loses streamed tool calls, tools described as text when it refuses them, chat only when
even that cannot work; a kept answer asks nothing; a probe that never ends holds nothing up; two
engines at once share one probe."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from support.engine import make_engine, of, turn
from support.scripted_server import (
    Error,
    ProbeBehaviour,
    Received,
    Reply,
    ScriptedServer,
    call,
)
from support.scripted_server.script import Response
from support.waiting import await_until

from mm_tui.config import Settings
from mm_tui.core.events import Event, HistoryCompacted, ModelProbed, TextDelta, ToolCallFinished
from mm_tui.engine import ask_style
from mm_tui.engine.ask_style import AskStyle
from mm_tui.engine.fixed_prompt import CHAT_ONLY_PLAN_NOTE, CHAT_ONLY_PROMPT
from mm_tui.engine.model_choice import switch_model
from mm_tui.engine.permissions import PLAN_NOTE
from mm_tui.engine.probe_findings import ProbeFindings
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.text_call_prompt import TEXT_CALL_FORM
from mm_tui.engine.turn import DEFAULT_SYSTEM_PROMPT
from mm_tui.startup import Started, start

MODEL = "scripted-model"
HERMES = '<tool_call>{"name": "bash", "arguments": {"command": "echo hi"}}</tool_call>'


@pytest.fixture(autouse=True)
def _state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The probe's kept answers in this test's own state folder."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


async def started(server: ScriptedServer, tmp_path: Path) -> Started:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    settings = Settings(
        baseUrl=server.base_url, model=MODEL, yolo=True, sessionsDir=str(tmp_path / "sessions")
    )
    return await start(settings, work)


async def test_a_server_that_takes_and_streams_tools_is_asked_as_always(tmp_path: Path) -> None:
    with ScriptedServer(Reply("hello")) as server:
        made = await started(server, tmp_path)
        events = await turn(made.engine, "hi")
        await made.engine.aclose()
    (request,) = server.requests
    assert request.stream and "bash" in request.tool_names
    assert of(events, ModelProbed) == []
    assert len(server.probe_requests) == 2  # the tools, streamed; a short answer


async def test_lost_streamed_tool_calls_make_the_first_request_non_streamed(
    tmp_path: Path,
) -> None:
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": "echo hi"})]),
        Reply("It said hi."),
        probe=ProbeBehaviour.llama_cpp_python(),
    ) as server:
        made = await started(server, tmp_path)
        events = await turn(made.engine, "say hi")
        await made.engine.aclose()
    first, second = server.requests
    assert not first.stream and not second.stream and "bash" in first.tool_names
    (said,) = of(events, ModelProbed)
    assert "non-streamed" in said.text
    assert [e.status for e in of(events, ToolCallFinished)] == ["ok"]


async def test_refused_tools_are_described_and_the_calls_read_from_the_text(
    tmp_path: Path,
) -> None:
    with ScriptedServer(
        Reply(HERMES), Reply("It said hi."), probe=ProbeBehaviour(tools="refused")
    ) as server:
        made = await started(server, tmp_path)
        events = await turn(made.engine, "say hi")
        session = made.engine.session
        await made.engine.aclose()
    first, second = server.requests
    assert "tools" not in first and "tools" not in second
    system = first.messages[0]["content"]
    assert TEXT_CALL_FORM in system and "- bash: " in system
    assert second.messages[0] == first.messages[0]
    called, result = second.messages[-2:]
    assert called["role"] == "assistant" and "tool_calls" not in called
    assert called["content"].startswith('<tool_call>{"name": "bash"')
    assert '"command": "echo hi"' in called["content"]
    assert result["role"] == "user" and result["content"].startswith("<tool_response>\nhi")
    (said,) = of(events, ModelProbed)
    assert "refuses tools" in said.text
    assert [e.status for e in of(events, ToolCallFinished)] == ["ok"]
    # the journal keeps the history as it was: a structured call and its result
    assert [m["role"] for m in session.messages][-3:] == ["assistant", "tool", "assistant"]


async def test_a_model_that_cannot_call_in_text_is_spoken_to_in_chat_only(
    tmp_path: Path,
) -> None:
    with ScriptedServer(
        Reply(HERMES), probe=ProbeBehaviour(tools="refused", text_calls=False)
    ) as server:
        made = await started(server, tmp_path)
        events = await turn(made.engine, "say hi")
        await made.engine.aclose()
    (request,) = server.requests
    assert "tools" not in request and "<tool_call>" not in request.messages[0]["content"]
    assert of(events, ToolCallFinished) == []  # not even a call written as text is run
    assert HERMES in "".join(e.text for e in of(events, TextDelta))
    (said,) = of(events, ModelProbed)
    assert said.text.startswith("chat only:")


async def test_in_chat_only_the_system_prompt_speaks_of_no_tool(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text("Answer in French.\n")
    with ScriptedServer(
        Reply("Bonjour."),
        Reply("1. Rien."),
        probe=ProbeBehaviour(tools="refused", text_calls=False),
    ) as server:
        made = await started(server, tmp_path)
        engine = made.engine
        names = [tool["function"]["name"] for tool in engine.tools()]
        await turn(engine, "hi")
        engine.set_mode("plan")
        await turn(engine, "a plan, please")
        kept = engine.session.messages[0]["content"]
        await engine.aclose()
    first, planned = (request.messages[0]["content"] for request in server.requests)
    assert first.startswith(CHAT_ONLY_PROMPT.format(cwd=work))
    assert "Answer in French." in first  # the project's instructions stay
    assert "bash" in names and not re.search(rf"\b({'|'.join(names)})\b", first)
    assert "Use the tools" not in first and "Use the tools" not in planned
    assert planned == first + CHAT_ONLY_PLAN_NOTE and PLAN_NOTE not in planned
    assert kept.startswith(DEFAULT_SYSTEM_PROMPT.format(cwd=work))  # the journal's is as it was


def refusing_tools(*answers: str) -> ScriptedServer:
    """A server that refuses tools outright, as Ollama does a model without them: a request
    that declares tools, or whose history holds a structured call or a tool's result, gets its
    400; any other gets the next of `answers`."""
    left = list(answers)

    def answer(req: Received) -> Response:
        structured = any("tool_calls" in m or m.get("role") == "tool" for m in req.messages)
        if req.tools or structured:
            return Error(400, f"registry.ollama.ai/library/{MODEL} does not support tools")
        return Reply(left.pop(0))

    return ScriptedServer(on_empty=answer, probe=ProbeBehaviour(tools="refused"))


async def test_compaction_sends_the_history_as_text_to_a_server_that_refuses_tools(
    tmp_path: Path,
) -> None:
    with refusing_tools(HERMES, "It said hi.", "We said hi with bash.") as server:
        made = await started(server, tmp_path)
        engine = made.engine
        await turn(engine, "say hi")
        events: list[Event] = []
        summary = await engine.compact(events.append)
        await engine.aclose()
    assert summary == "We said hi with bash."
    assert [e.summary for e in of(events, HistoryCompacted)] == [summary]
    asked = server.requests[-1]
    assert "tools" not in asked and len(server.requests) == 3
    assert not any("tool_calls" in m or m["role"] == "tool" for m in asked.messages)
    called, result = asked.messages[-4:-2]  # the call and its result, then the answer, the ask
    assert called["content"].startswith('<tool_call>{"name": "bash"')
    assert result["role"] == "user" and result["content"].startswith("<tool_response>\nhi")
    assert "Summarise this conversation" in asked.messages[-1]["content"]


def test_in_chat_only_a_resumed_sessions_calls_go_as_text() -> None:
    asking = AskStyle()
    asking.findings = ProbeFindings(chat="yes", tools="no", text_calls="no")
    called = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": "{}"}}],
    }
    history = [{"role": "system", "content": "s"}, called, {"role": "tool", "content": "ok"}]
    messages, tools = asking.request(history, [])
    assert tools == [] and messages[0] is history[0]
    assert [m["role"] for m in messages] == ["system", "assistant", "user"]
    assert "tool_calls" not in messages[1]


async def test_a_second_start_asks_no_probe_request(tmp_path: Path) -> None:
    with ScriptedServer(probe=ProbeBehaviour.llama_cpp_python()) as server:
        for _ in range(2):
            made = await started(server, tmp_path)
            events = await turn(made.engine, "hi")
            await made.engine.aclose()
            assert len(server.probe_requests) == 3  # the first start's, and no other
            assert "non-streamed" in of(events, ModelProbed)[0].text  # the kept answer said
        assert len(server.probe_lookups) == 2  # each start's fingerprint
        assert not any(r.stream for r in server.requests if r.tools)


async def test_a_probe_that_never_ends_holds_nothing_up(tmp_path: Path) -> None:
    with ScriptedServer(Reply("still here"), probe=ProbeBehaviour(silent=True)) as server:
        engine = make_engine(tmp_path, server)
        engine.round_trip.asking = asking = AskStyle(bound=0.5, state_dir=tmp_path / "state")
        asking.start(engine.client, lambda: None)
        events = await turn(engine, "hi")
        await engine.aclose()
    assert asking.findings is not None and asking.findings.status == "timed out"
    assert "still here" in "".join(e.text for e in of(events, TextDelta))
    (request,) = server.requests
    assert request.stream and request.tools  # asked as always
    assert of(events, ModelProbed) == []


async def test_a_model_switched_to_is_probed_at_its_first_request(tmp_path: Path) -> None:
    with ScriptedServer(models=(MODEL, "other-model")) as server:
        made = await started(server, tmp_path)
        engine = made.engine
        await turn(engine, "hi")
        events: list[Event] = []
        await switch_model(engine, "other-model", events.append)
        await turn(engine, "hi again")
        await engine.aclose()
    probed = [r["model"] for r in server.probe_requests]
    assert probed == [MODEL, MODEL, "other-model", "other-model"]


async def test_the_demo_model_is_never_probed(tmp_path: Path) -> None:
    made = await start(Settings(yolo=False), tmp_path, demo=True)
    assert not made.engine.round_trip.asking.enabled
    await turn(made.engine, "hi")
    assert made.engine.round_trip.asking.findings is None
    await made.engine.aclose()


async def test_two_engines_at_once_share_one_probe_of_a_model(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        clients = [OpenAIProvider(server.base_url, MODEL, retries=0) for _ in range(2)]
        styles = [AskStyle(state_dir=tmp_path / "state") for _ in clients]
        pairs = list(zip(styles, clients, strict=True))
        for style, client in pairs:
            style.start(client, lambda: None)
        said: list[Event] = []
        await asyncio.gather(*(style.settle(client, said.append) for style, client in pairs))
        for client in clients:
            await client.aclose()
    assert len(server.probe_requests) == 2 and len(server.probe_lookups) == 1  # one probe's
    assert not ask_style._probing  # dropped when done: the kept answer serves later starts
    first, second = (style.findings for style in styles)
    assert first is not None and first.chat == "yes" and second == first


async def test_a_waiter_cancelled_leaves_the_shared_probe_to_the_other(tmp_path: Path) -> None:
    slow = Reply("one two three four five", delay=0.1)  # each chunk a tenth of a second apart
    with ScriptedServer(probe=ProbeBehaviour(fixed=slow)) as server:
        clients = [OpenAIProvider(server.base_url, MODEL, retries=0) for _ in range(2)]
        first, second = (AskStyle(state_dir=tmp_path / "state") for _ in clients)
        first.start(clients[0], lambda: None)
        second.start(clients[1], lambda: None)
        said: list[Event] = []
        waiting = asyncio.ensure_future(first.settle(clients[0], said.append))
        assert await await_until(lambda: server.probe_requests), "the probe never asked"
        waiting.cancel()
        await second.settle(clients[1], said.append)
        for client in clients:
            await client.aclose()
    assert waiting.cancelled()
    assert second.findings is not None and second.findings.status == "done"
    assert second.findings.chat == "yes" and len(server.probe_requests) == 2
