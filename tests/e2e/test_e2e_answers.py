"""2. A plain question answered with text, with no tools declared (the answer streams in pieces)
and with tools declared (the answer comes however this server gives it), in `mm -p`, in the
engine and in window mode through Pilot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from e2e_helpers import (
    engine_on,
    items_of,
    saved_session,
    send,
    texts,
    turn,
    window,
    write_config,
)
from support.program import mm
from support.waiting import await_until
from support.window_helpers import screen_text, settle

from mm_tui.core.events import ToolCallStarted, TurnEnded
from mm_tui.window.transcript.store import AnswerItem, RecapItem

QUESTION = "What is the capital of France? Answer in one sentence."
# With tools declared, a question this model answers in words (at temperature 0, with mm's own
# system prompt and tools): it chooses "message" rather than a function. llama-cpp-python loses
# such an answer under tool_choice "auto" (empty text), so mm asks it again under "none".
GREETING = "Hello!"
NO_TOOLS = {"bashTool": False, "editTools": False}
# Should the model call a tool after all, the turn stays short (see test_e2e_tools.py).
TOOLS = {"maxTurns": 2}
# The recap of a turn without tool calls: its time, and its tokens when the server counts them.
RECAP = re.compile(r"^\d+\.\ds( · [\d,]+ tokens \([\d,]+ in, [\d,]+ out\))?$")


@pytest.mark.parametrize("tools", [False, True], ids=["no-tools", "tools"])
def test_print_answers_a_question(server, project: Path, tools: bool):
    write_config(project, temperature=0, **(TOOLS if tools else NO_TOOLS))
    question = GREETING if tools else QUESTION
    result = mm(
        "--base-url", server.base_url, "--model", server.model_id, "-p", question, cwd=project,
        timeout=90,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.rstrip("\n").splitlines()
    assert RECAP.match(lines[-1]), lines[-1]
    saved = saved_session(project)
    assert [m["role"] for m in saved["messages"]] == ["system", "user", "assistant"]
    answer = saved["messages"][-1]["content"]
    assert answer and answer.strip()
    assert answer.strip() in result.stdout
    assert saved["errors"] == []
    assert saved["turns"][0]["stop_reason"] == "end_turn"


async def test_the_answer_streams_in_pieces_without_tools(server, project: Path):
    async with engine_on(server, project, **NO_TOOLS) as (engine, recorded):
        events, ended = await turn(engine, QUESTION)
    assert ended.stop_reason == "end_turn", ended
    pieces = texts(events)
    assert len(pieces) > 1, pieces  # streamed, token by token
    assert "".join(pieces) == engine.session.messages[-1]["content"]
    (body,) = recorded.bodies
    assert body["stream"] is True and "tools" not in body and "tool_choice" not in body
    assert isinstance(events[-1], TurnEnded)


async def test_the_answer_streams_with_tools_declared(server, project: Path):
    async with engine_on(server, project, **TOOLS) as (engine, recorded):
        events, ended = await turn(engine, GREETING)
    assert ended.stop_reason == "end_turn", ended
    calls = [e for e in events if isinstance(e, ToolCallStarted)]
    assert not calls, f"the model chose a tool call ({calls}): try another GREETING"
    pieces = texts(events)
    assert len(pieces) > 1, pieces
    assert "".join(pieces) == engine.session.messages[-1]["content"]
    # The tools go with tool_choice "auto"; the lost words are asked for again under "none".
    auto, none = recorded.bodies
    assert auto["stream"] is True and auto["tools"] and auto["tool_choice"] == "auto"
    assert none["stream"] is True and none["tools"] == auto["tools"]
    assert none["tool_choice"] == "none" and none["messages"] == auto["messages"]


@pytest.mark.parametrize("tools", [False, True], ids=["no-tools", "tools"])
async def test_window_answers_a_question(server, project: Path, tools: bool):
    write_config(project, temperature=0, **(TOOLS if tools else NO_TOOLS))
    app = window(project, baseUrl=server.base_url, model=server.model_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app, timeout=30)
        await send(pilot, GREETING if tools else QUESTION)
        ended = await await_until(lambda: items_of(app, RecapItem), 60, 0.05, pilot=pilot)
        assert ended, "waited 60s for the end of the turn"
        await settle(pilot, app, timeout=30)
        (answer,) = items_of(app, AnswerItem)
        (recap,) = items_of(app, RecapItem)
        assert recap.stop_reason == "end_turn"
        assert answer.text.strip()
        assert answer.text == app.engine.session.messages[-1]["content"]
        screen = screen_text(app)
        assert recap.text in screen
        words = [w for w in answer.text.split() if w.isalnum()]
        assert words and words[-1] in screen  # the end of the answer is in view
