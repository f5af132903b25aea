"""ask_agent against real children: `mm -acp` subprocesses on a scripted model server, asked by
a real engine (or the tool itself) on another scripted server.

Every message the original specification quotes for ask_agent (now in the reference,
docs/tools.md) is asserted here to the letter."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.ask_helpers import (
    CHILD_MODEL,
    SUPPORT,
    Recorder,
    messages_text,
    parent_engine,
    write_agent,
)
from support.processes import alive, processes_mentioning
from support.scripted_server import Reply, ScriptedServer, call, silence_after, text_chunks
from support.session_helpers import journal_files, sessions_of
from support.session_helpers import saved as saved_session
from support.waiting import await_until

from mm_tui.config import AgentRef, Settings
from mm_tui.core.events import (
    AgentFinished,
    AgentStarted,
    Decision,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnEnded,
)
from mm_tui.core.questions import Questions
from mm_tui.startup import agent_runners
from mm_tui.tools.ask_agent import DESCRIPTION, NO_RUNNER, AskAgentTool, context_text
from mm_tui.tools.base import ToolCancelled, ToolContext, truncate
from mm_tui.tools.registry import ToolRegistry


def asking_tool(*args: Any, **kw: Any) -> AskAgentTool:
    """The tool as start-up makes it: its agents run by the ACP client's pool."""
    return AskAgentTool(*args, runners=agent_runners, **kw)


@pytest.fixture
def child_server():
    with ScriptedServer(models=[CHILD_MODEL]) as server:
        yield server


@pytest.fixture
def parent_server():
    with ScriptedServer(models=["parent-model"]) as server:
        yield server


async def gone(pid: int | None) -> bool:
    """Whether the process exits within 10 s."""
    return await await_until(lambda: not alive(pid), 10, 0.05)


async def none_left(agent_file: Path) -> bool:
    """Whether, within 5 s, no process runs the agent of `agent_file`."""
    return await await_until(lambda: not processes_mentioning(str(agent_file)), 5, 0.05)


def helper_tool(work: Path, child_server: ScriptedServer, **entry) -> AskAgentTool:
    write_agent(work / "helper.yaml", child_server, acp={"title": "reviewer"})
    return asking_tool({"helper": AgentRef(config="helper.yaml", **entry)}, work)


def ctx_for(work: Path, emit=None, **settings) -> ToolContext:
    """A tool context whose permission questions a `Recorder` given as `emit` answers."""
    emit = emit or Recorder()
    questions = emit.questions if isinstance(emit, Recorder) else Questions()
    return ToolContext(cwd=work, settings=Settings(**settings), emit=emit, questions=questions)


def ask_call(agent: str = "helper", prompt: str = "review greet.py", **more) -> Reply:
    return Reply(tool_calls=[call("ask_agent", {"agent": agent, "prompt": prompt, **more})])


# --------------------------------------------------------------------------- declaration


def test_declared_only_when_mm_configs_names_an_agent(tmp_path: Path) -> None:
    assert "ask_agent" not in ToolRegistry.from_settings(Settings(), tmp_path).names
    with_agents = Settings(mmConfigs={"helper": {"config": "helper.yaml"}})
    registry = ToolRegistry.from_settings(with_agents, tmp_path)
    assert registry.names[-1] == "ask_agent"
    declared = registry.get("ask_agent").declaration()["function"]
    assert declared["name"] == "ask_agent"
    params = declared["parameters"]
    assert set(params["properties"]) == {"agent", "prompt", "with_context"}
    assert sorted(params["required"]) == ["agent", "prompt"]
    assert params["properties"]["with_context"]["default"] is False


def test_description_lists_agents_sorted_with_their_purpose(tmp_path: Path) -> None:
    (tmp_path / "titled.yaml").write_text("acp:\n  title: Test runner\n")
    (tmp_path / "builtin.yaml").write_text("acp:\n  title: mm\n")
    (tmp_path / "plain.yaml").write_text("model: x\n")
    tool = asking_tool(
        {
            "zeta": AgentRef(config="plain.yaml", description="Reviews  diffs\nfor style"),
            "beta": AgentRef(config="titled.yaml"),
            "alpha": AgentRef(config="builtin.yaml"),
            "gamma": AgentRef(config="missing.yaml"),
            "delta": AgentRef(config="titled.yaml", description="the description wins"),
        },
        tmp_path,
    )
    assert tool.description() == (
        DESCRIPTION + "\n\nAgents:\n"
        "  alpha — (no description)\n"
        "  beta — Test runner\n"
        "  delta — the description wins\n"
        "  gamma — (no description)\n"
        "  zeta — Reviews diffs for style"
    )
    assert DESCRIPTION.startswith("Hand a task to another agent")


# --------------------------------------------------------------------------- quoted errors


async def test_unknown_agent_and_empty_prompt_start_nothing(work: Path) -> None:
    (work / "a.yaml").write_text("model: x\n")
    tool = asking_tool({"b": AgentRef(config="a.yaml"), "a": AgentRef(config="a.yaml")}, work)
    ctx = ctx_for(work)
    unknown = await tool.run(tool.Args(agent="x", prompt="do it"), ctx)
    assert unknown.output == '[ask_agent: unknown agent "x" — agents: a, b]'
    assert unknown.status == "error" and unknown.display is None
    empty = await tool.run(tool.Args(agent="a", prompt="  \n "), ctx)
    assert empty.output == "[ask_agent: the prompt is empty — say what a must do]"
    assert tool.pid("a") is None and tool.pid("b") is None


async def test_depth_limit_refuses_a_third_level(
    work: Path, child_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = helper_tool(work, child_server)
    monkeypatch.setenv("MM_ASK_DEPTH", "2")
    result = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
    assert result.output == (
        "[ask_agent: cannot ask helper: asked agents nest at most 2 levels deep and this agent "
        "is already at level 2 (MM_ASK_DEPTH=2) — do the task yourself]"
    )
    assert tool.pid("helper") is None and child_server.requests == []


async def test_without_a_runner_the_tool_says_it_cannot_start_agents(work: Path) -> None:
    """The tool depends on a runner start-up gives; one made without it starts nothing."""
    tool = AskAgentTool({"helper": AgentRef(config="helper.yaml")}, work)
    result = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
    assert result.output == f"[ask_agent: helper failed: {NO_RUNNER}]"
    assert result.status == "error" and tool.pid("helper") is None


async def test_a_child_that_cannot_start_fails_with_its_reason(work: Path) -> None:
    tool = asking_tool({"helper": AgentRef(config="nowhere.yaml")}, work)
    result = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
    assert result.output.startswith("[ask_agent: helper failed: its process exited with status 2")
    assert "nowhere.yaml: no such file" in result.output
    assert result.output.endswith("]")


async def test_no_answer(work: Path, child_server: ScriptedServer) -> None:
    child_server.script(Reply(reasoning="nothing comes to mind"))  # it thinks, says nothing
    tool = helper_tool(work, child_server)
    try:
        result = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
    finally:
        await tool.aclose()
    assert result.output == "[ask_agent: helper gave no answer]"
    assert result.status == "error"


# --------------------------------------------------------------------------- through the engine


async def test_answer_streams_truncated_result_and_displayed_output(
    work: Path, child_server: ScriptedServer, parent_server: ScriptedServer
) -> None:
    answer = "All good. " * 30  # 300 characters
    child_server.script(
        Reply(tool_calls=[call("bash", {"command": "echo from the child"})]), Reply(answer)
    )
    parent_server.script(ask_call(), Reply("The reviewer is happy."))
    write_agent(work / "helper.yaml", child_server, acp={"title": "reviewer"})
    engine = parent_engine(
        work, parent_server, maxOutput=100, mmConfigs={"helper": {"config": "helper.yaml"}}
    )
    events = Recorder()
    try:
        ended = await engine.run_turn("ask the reviewer", events)
    finally:
        await engine.aclose()
    assert ended.stop_reason == "end_turn"
    started = events.of(AgentStarted)[0]
    assert (started.name, started.title, started.model, started.asked_by, started.agent) == (
        "helper",
        "reviewer",
        CHILD_MODEL,
        "mm",
        "helper",
    )
    assert started.provider == "127.0.0.1" and started.prompt == "review greet.py"
    assert events.of(AgentFinished)[0].agent == "helper"
    child_tool = events.of(ToolCallStarted, "helper")[0]
    assert (child_tool.tool, child_tool.title) == ("bash", "bash  echo from the child")
    assert child_tool.display == "🛠️  bash: echo from the child"
    done = events.of(ToolCallFinished, "helper")[0]
    assert (done.status, done.output) == ("ok", "from the child\n")
    assert "".join(e.text for e in events.of(TextDelta, "helper")) == answer
    mine = events.of(ToolCallFinished, None)[0]
    assert mine.tool == "ask_agent" and mine.status == "ok"
    assert mine.output == "helper answered (300 characters)"
    tool_message = next(m for m in engine.session.messages if m["role"] == "tool")
    assert tool_message["content"] == truncate(answer, 100)
    assert "[... output truncated: 200 more characters ...]" in tool_message["content"]
    assert parent_server.requests[1].messages[-1]["content"] == truncate(answer, 100)


async def test_child_reused_with_a_fresh_session_per_call(
    work: Path, child_server: ScriptedServer
) -> None:
    child_server.script(Reply("first answer"), Reply("second answer"))
    tool = helper_tool(work, child_server)
    ctx = ctx_for(work)
    try:
        one = await tool.run(tool.Args(agent="helper", prompt="question one"), ctx)
        pid = tool.pid("helper")
        two = await tool.run(tool.Args(agent="helper", prompt="question two"), ctx)
        assert tool.pid("helper") == pid and alive(pid)
    finally:
        await tool.aclose()
    assert (one.output, two.output) == ("first answer", "second answer")
    first, second = child_server.requests
    assert [m["role"] for m in second.messages] == ["system", "user"]  # nothing of call one
    assert second.messages[-1]["content"] == "question two"
    assert "question one" not in messages_text(second.messages)
    sessions = journal_files(sessions_of(work, work.parent / "home"))  # the child's
    assert len(sessions) == 2


async def test_with_context_sends_the_conversation_capped_newest_kept(
    work: Path, child_server: ScriptedServer, parent_server: ScriptedServer
) -> None:
    child_server.script(Reply("noted"), Reply("noted again"))
    parent_server.script(
        Reply(tool_calls=[call("bash", {"command": "echo SECRET-OUTPUT"})]),
        Reply("first answer"),
        ask_call(prompt="check it", with_context=True),
        Reply("done"),
    )
    write_agent(work / "helper.yaml", child_server)
    engine = parent_engine(work, parent_server, mmConfigs={"helper": {"config": "helper.yaml"}})
    try:
        await engine.run_turn("first question", Recorder())
        await engine.run_turn("second question", Recorder())
        sent = child_server.requests[0].messages[-1]["content"]
        assert sent == (
            "The conversation so far between a person and the agent asking you, for context "
            "(tool outputs left out):\n\n"
            "User: first question\n"
            'Tool call: bash {"command": "echo SECRET-OUTPUT"}\n'
            "Assistant: first answer\n"
            "User: second question\n\n"
            "Your task:\n\n"
            "check it"
        )
        # capped at maxOutput characters, the newest kept
        engine.settings = engine.settings.model_copy(update={"max_output": 45})
        parent_server.script(ask_call(prompt="again", with_context=True), Reply("done"))
        await engine.run_turn("third question", Recorder())
    finally:
        await engine.aclose()
    sent = child_server.requests[1].messages[-1]["content"]
    conversation = sent.split("\n\n")[1]
    assert len(conversation) <= 45
    assert conversation.endswith("User: third question")
    assert "first question" not in sent and "SECRET-OUTPUT" not in sent


def test_context_text_keeps_whole_lines_from_the_end() -> None:
    history = [
        {"role": "system", "content": "you are mm"},
        {"role": "user", "content": "one"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": "a"}'}}],
        },
        {"role": "tool", "content": "FILE CONTENT"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    full = context_text(history, 1000)
    assert full == 'User: one\nTool call: read_file {"path": "a"}\nAssistant: two\nUser: three'
    assert context_text(history, 30) == "Assistant: two\nUser: three"
    assert context_text(history, 11) == "User: three"


# --------------------------------------------------------------------------- permissions


async def test_the_call_itself_is_gated_like_bash(
    work: Path, child_server: ScriptedServer, parent_server: ScriptedServer
) -> None:
    parent_server.script(ask_call(), Reply("ok then"))
    write_agent(work / "helper.yaml", child_server)
    engine = parent_engine(
        work, parent_server, yolo=False, mmConfigs={"helper": {"config": "helper.yaml"}}
    )
    events = Recorder(decide=lambda request: Decision.REJECT, questions=engine.questions)
    try:
        await engine.run_turn("ask", events)
        asked = events.of(PermissionRequested)
        assert [(r.tool, r.title, r.agent) for r in asked] == [
            ("ask_agent", "ask_agent  helper — review greet.py", None)
        ]
        assert asked[0].details == "ask helper:\nreview greet.py"
        assert engine.registry.get("ask_agent").pid("helper") is None
    finally:
        await engine.aclose()
    result = next(m for m in engine.session.messages if m["role"] == "tool")
    assert result["content"] == "[ask_agent rejected by the user]"
    assert child_server.requests == []


async def test_child_permissions_asked_through_this_agent(
    work: Path, child_server: ScriptedServer
) -> None:
    """Entry yolo false: the child asks, the person decides here, each of the four ways."""
    tool = helper_tool(work, child_server, yolo=False)
    decisions = [Decision.ALLOW_ONCE, Decision.ALLOW_SESSION, Decision.REJECT, Decision.NEVER]
    for n in range(len(decisions)):
        child_server.script(
            Reply(tool_calls=[call("bash", {"command": f"echo run {n}"})]), Reply(f"answer {n}")
        )
    try:
        for n, decision in enumerate(decisions):
            events = Recorder(decide=lambda request, d=decision: d)
            ctx = ctx_for(work, events, yolo=True)  # this agent's yolo: the entry's wins
            result = await tool.run(tool.Args(agent="helper", prompt=f"task {n}"), ctx)
            assert result.output == f"answer {n}"
            (request,) = events.of(PermissionRequested)
            assert (request.agent, request.tool, request.title) == (
                "helper",
                "bash",
                f"bash  echo run {n}",
            )
            assert request.details == f"echo run {n}"
            finished = events.of(ToolCallFinished, "helper")[0]
            tool_result = child_server.requests[2 * n + 1].messages[-1]["content"]
            running = [e.call_id for e in events.of(ToolCallRunning, "helper")]
            assert running == ([request.call_id] if decision.allows else [])  # said once
            if decision.allows:
                assert (finished.status, tool_result) == ("ok", f"run {n}\n")
            else:
                assert finished.status == "rejected"
                assert tool_result == "[command rejected by the user]"
    finally:
        await tool.aclose()


async def test_child_calls_decided_by_yolo_without_asking(
    work: Path, child_server: ScriptedServer
) -> None:
    """Entry yolo true runs the child's calls even when this agent asks; no entry yolo takes
    this agent's (true here)."""
    write_agent(work / "helper.yaml", child_server)
    tool = asking_tool(
        {
            "helper": AgentRef(config="helper.yaml", yolo=True),
            "other": AgentRef(config="helper.yaml"),
        },
        work,
    )
    child_server.script(
        Reply(tool_calls=[call("bash", {"command": "echo a"})]),
        Reply("ran a"),
        Reply(tool_calls=[call("bash", {"command": "echo b"})]),
        Reply("ran b"),
    )
    try:
        # a request (there must be none) is rejected at once rather than left to hang
        events = Recorder(decide=lambda request: Decision.REJECT)
        one = await tool.run(
            tool.Args(agent="helper", prompt="a"), ctx_for(work, events, yolo=False)
        )
        two = await tool.run(tool.Args(agent="other", prompt="b"), ctx_for(work, events, yolo=True))
    finally:
        await tool.aclose()
    assert (one.output, two.output) == ("ran a", "ran b")
    assert events.of(PermissionRequested) == []
    assert child_server.requests[1].messages[-1]["content"] == "a\n"
    assert child_server.requests[3].messages[-1]["content"] == "b\n"  # its bash ran too


# --------------------------------------------------------------------------- faults


async def test_watchdog_ends_a_silent_child_and_the_next_call_starts_fresh(
    work: Path, child_server: ScriptedServer
) -> None:
    write_agent(work / "helper.yaml", child_server, watchdogTimeout=120)
    tool = asking_tool({"helper": AgentRef(config="helper.yaml")}, work)
    child_server.script(
        Reply("warm"),
        silence_after(1, [text_chunks("partial ")[0], *text_chunks("never")]),
        Reply("fresh"),
    )
    try:
        warm = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
        assert warm.output == "warm"
        pid = tool.pid("helper")
        loop = asyncio.get_running_loop()
        began = loop.time()
        silent = await tool.run(
            tool.Args(agent="helper", prompt="hi"), ctx_for(work, watchdogTimeout=1.5)
        )
        assert 1.4 < loop.time() - began < 10
        assert silent.output == (
            "partial \n[ask_agent: helper stopped before finishing: it sent nothing for 1.5s — "
            "stopped by the watchdog; raise watchdogTimeout if its model is slow to answer]"
        )
        assert silent.display == (
            "helper answered (8 characters)\n[ask_agent: helper stopped before finishing: it "
            "sent nothing for 1.5s — stopped by the watchdog; raise watchdogTimeout if its "
            "model is slow to answer]"
        )
        assert await gone(pid)
        fresh = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
        assert fresh.output == "fresh" and tool.pid("helper") != pid
    finally:
        await tool.aclose()


@pytest.mark.slow  # the answer takes 3.6 s by design, beside a child's start
async def test_each_event_of_the_child_feeds_the_watchdog(
    work: Path, child_server: ScriptedServer
) -> None:
    """A child that writes slowly but steadily outlives a watchdog shorter than its answer."""
    tool = helper_tool(work, child_server)
    child_server.script(Reply("warm"), Reply("a slow but steady answer", split=2, delay=0.3))
    try:
        await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
        result = await tool.run(
            tool.Args(agent="helper", prompt="hi"), ctx_for(work, watchdogTimeout=1.5)
        )
    finally:
        await tool.aclose()
    assert result.output == "a slow but steady answer"  # 12 pieces, 3.6 s in all


async def test_a_permission_waiting_for_the_person_does_not_count_as_silence(
    work: Path, child_server: ScriptedServer
) -> None:
    tool = helper_tool(work, child_server, yolo=False)
    child_server.script(
        Reply("warm"),
        Reply(tool_calls=[call("bash", {"command": "echo slow decision"})]),
        Reply("decided"),
    )
    loop = asyncio.get_running_loop()
    ctx = ctx_for(work, watchdogTimeout=1.5)

    def emit(event) -> None:
        if isinstance(event, PermissionRequested):  # the person thinks it over for 3 s
            answer = (event.agent, event.call_id, Decision.ALLOW_ONCE)
            loop.call_later(3.0, ctx.questions.answer, *answer)

    try:
        await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
        result = await tool.run(tool.Args(agent="helper", prompt="hi"), replace(ctx, emit=emit))
    finally:
        await tool.aclose()
    assert result.output == "decided"
    assert child_server.requests[2].messages[-1]["content"] == "slow decision\n"


async def test_a_child_killed_mid_call_gives_what_was_answered_then_a_fresh_child(
    work: Path, child_server: ScriptedServer
) -> None:
    tool = helper_tool(work, child_server)
    child_server.script(silence_after(1, [text_chunks("so far")[0], *text_chunks("x")]))
    child_server.script(Reply("fresh"))
    events = Recorder()
    ctx = ctx_for(work, events)
    try:
        running = asyncio.create_task(tool.run(tool.Args(agent="helper", prompt="hi"), ctx))
        await events.wait_for(TextDelta)
        pid = tool.pid("helper")
        os.kill(pid, signal.SIGKILL)
        result = await running
        assert result.output.startswith(
            "so far\n[ask_agent: helper stopped before finishing: its process was killed (SIGKILL)"
        )
        assert result.status == "error"
        fresh = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx)
        assert fresh.output == "fresh" and tool.pid("helper") != pid
    finally:
        await tool.aclose()


async def test_a_child_killed_between_calls_is_restarted(
    work: Path, child_server: ScriptedServer
) -> None:
    tool = helper_tool(work, child_server)
    child_server.script(Reply("one"), Reply("two"))
    try:
        assert (
            await tool.run(tool.Args(agent="helper", prompt="a"), ctx_for(work))
        ).output == "one"
        pid = tool.pid("helper")
        os.kill(pid, signal.SIGKILL)
        assert await gone(pid)
        again = await tool.run(tool.Args(agent="helper", prompt="b"), ctx_for(work))
        assert again.output == "two" and tool.pid("helper") != pid
    finally:
        await tool.aclose()


async def test_garbage_on_stdout_stops_the_call_and_the_next_starts_fresh(
    work: Path, child_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GARBAGE_FLAG", str(work / "garbage-sent"))
    write_agent(work / "helper.yaml", child_server)
    tool = asking_tool(
        {"helper": AgentRef(config="helper.yaml")},
        work,
        command=[sys.executable, str(SUPPORT / "garbage_child.py")],
    )
    child_server.script(Reply("an answer cut short", split=None, delay=0.3), Reply("clean"))
    try:
        broken = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
        assert broken.output.endswith(
            "[ask_agent: helper stopped before finishing: it wrote something that is not ACP "
            "on stdout: 'garbage: this is not ACP']"
        )
        # the broken child is stopped, not only forgotten
        assert await none_left(work / "helper.yaml"), processes_mentioning(
            str(work / "helper.yaml")
        )
        clean = await tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work))
        assert clean.output == "clean"
    finally:
        await tool.aclose()
    assert await none_left(work / "helper.yaml"), processes_mentioning(str(work / "helper.yaml"))


async def test_cancelling_the_turn_cancels_the_childs_prompt(
    work: Path, child_server: ScriptedServer, parent_server: ScriptedServer
) -> None:
    child_sessions = work.parent / "child-sessions"
    write_agent(work / "helper.yaml", child_server, sessionsDir=str(child_sessions))
    child_server.script(
        silence_after(1, [text_chunks("half an answer")[0], *text_chunks("x")]), Reply("later")
    )
    parent_server.script(ask_call())
    engine = parent_engine(work, parent_server, mmConfigs={"helper": {"config": "helper.yaml"}})
    events = Recorder()
    tool = engine.registry.get("ask_agent")
    try:
        turn = asyncio.create_task(engine.run_turn("ask", events))
        await events.wait_for(TextDelta)
        pid = tool.pid("helper")
        engine.cancel()
        ended = await turn
        assert ended.stop_reason == "cancelled"
        mine = events.of(ToolCallFinished, None)[0]
        assert mine.status == "cancelled"
        assert mine.output == (
            "helper answered (14 characters)\n"
            "[ask_agent: helper stopped before finishing: cancelled]"
        )
        result = next(m for m in engine.session.messages if m["role"] == "tool")
        assert result["content"] == (
            "half an answer\n[ask_agent: helper stopped before finishing: cancelled]"
        )
        # the child was told through the protocol: its own turn ended as cancelled, and it
        # stays up for the next call
        (child_journal,) = journal_files(child_sessions)
        saved = saved_session(child_sessions, child_journal.name.removesuffix(".jsonl"))
        assert saved["turns"][-1]["stop_reason"] == "cancelled"
        assert tool.pid("helper") == pid and alive(pid)
        ctx = ctx_for(work)
        assert (await tool.run(tool.Args(agent="helper", prompt="hi"), ctx)).output == "later"
        assert tool.pid("helper") == pid
    finally:
        await engine.aclose()


async def test_cancel_raises_tool_cancelled_with_the_answer_so_far(
    work: Path, child_server: ScriptedServer
) -> None:
    tool = helper_tool(work, child_server)
    child_server.script(silence_after(1, [text_chunks("begun")[0], *text_chunks("x")]))
    events = Recorder()
    try:
        running = asyncio.create_task(
            tool.run(tool.Args(agent="helper", prompt="hi"), ctx_for(work, events))
        )
        await events.wait_for(TextDelta)
        running.cancel()
        with pytest.raises(ToolCancelled) as stopped:
            await running
    finally:
        await tool.aclose()
    assert stopped.value.output == "begun\n[ask_agent: helper stopped before finishing: cancelled]"


async def test_children_stop_when_mm_exits(
    work: Path, child_server: ScriptedServer, parent_server: ScriptedServer
) -> None:
    write_agent(work / "one.yaml", child_server)
    write_agent(work / "two.yaml", child_server)
    child_server.script(Reply("from one"), Reply("from two"))
    parent_server.script(ask_call("one", "a"), ask_call("two", "b"), Reply("both answered"))
    engine = parent_engine(
        work,
        parent_server,
        mmConfigs={"one": {"config": "one.yaml"}, "two": {"config": "two.yaml"}},
    )
    tool = engine.registry.get("ask_agent")
    events = Recorder()
    ended = await engine.run_turn("ask both", events)
    assert isinstance(ended, TurnEnded) and ended.stop_reason == "end_turn"
    # no acp.title in their files: each goes by its mmConfigs name
    assert [e.title for e in events.of(AgentStarted)] == ["one", "two"]
    pids = [tool.pid("one"), tool.pid("two")]
    assert all(alive(pid) for pid in pids)
    await engine.aclose()
    assert not any(alive(pid) for pid in pids)
    assert processes_mentioning(str(work / "one.yaml")) == []
    assert processes_mentioning(str(work / "two.yaml")) == []


async def test_three_levels_the_third_refused(
    work: Path, child_server: ScriptedServer, parent_server: ScriptedServer
) -> None:
    """This agent asks helper (level 1), which asks grand (level 2), whose own ask_agent call
    is refused with the depth message; the answers come back up."""
    with ScriptedServer(models=[CHILD_MODEL]) as grand_server:
        write_agent(work / "deeper.yaml", grand_server)
        write_agent(
            work / "grand.yaml", grand_server, mmConfigs={"deeper": {"config": "deeper.yaml"}}
        )
        write_agent(
            work / "helper.yaml", child_server, mmConfigs={"grand": {"config": "grand.yaml"}}
        )
        grand_server.script(ask_call("deeper", "go deeper"), Reply("grand's answer"))
        child_server.script(ask_call("grand", "ask further"), Reply("helper's answer"))
        parent_server.script(ask_call("helper", "start"), Reply("top answer"))
        # a second round: helper's new session asks grand again, through the same grandchild
        grand_server.script(Reply("grand again"))
        child_server.script(ask_call("grand", "once more"), Reply("helper again"))
        parent_server.script(ask_call("helper", "again"), Reply("top again"))
        engine = parent_engine(work, parent_server, mmConfigs={"helper": {"config": "helper.yaml"}})
        events = Recorder()
        try:
            ended = await engine.run_turn("go", events)
            again = await engine.run_turn("go again", Recorder())
            assert again.stop_reason == "end_turn"
            assert child_server.requests[3].messages[-1]["content"] == "grand again"
            assert len(processes_mentioning(str(work / "grand.yaml"))) == 1
        finally:
            await engine.aclose()
        assert ended.stop_reason == "end_turn"
        # helper stops its grandchild as it exits
        assert await none_left(work / "grand.yaml"), processes_mentioning(str(work / "grand.yaml"))
        refused = grand_server.requests[1].messages[-1]["content"]
        assert refused == (
            "[ask_agent: cannot ask deeper: asked agents nest at most 2 levels deep and this "
            "agent is already at level 2 (MM_ASK_DEPTH=2) — do the task yourself]"
        )
        assert child_server.requests[1].messages[-1]["content"] == "grand's answer"
        assert parent_server.requests[1].messages[-1]["content"] == "helper's answer"
        # the grandchild's call shows as one of helper's tool lines, its text is not helper's
        nested = [e.title for e in events.of(ToolCallStarted, "helper")]
        assert "ask_agent  grand — ask further" in nested
        assert "".join(e.text for e in events.of(TextDelta, "helper")) == "helper's answer"
