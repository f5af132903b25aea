"""3. A turn with tools on the real server. Whatever the model does (a call with good or bad
arguments, or text), the turn ends cleanly within maxTurns, every call gets a result, the session
file holds the exchange and the recap is printed.

llama-cpp-python answers a streamed request that ends in a tool call with HTTP 200 and an empty
body; mm asks again without streaming, once, and asks that server non-streamed from then on.
"""

from __future__ import annotations

import re
from pathlib import Path

from e2e_helpers import (
    assert_calls_concluded,
    assert_well_formed,
    engine_on,
    saved_session,
    turn,
    write_config,
)
from support.program import mm

from mm_tui.core.events import EngineError, ToolCallStarted

# One model round trip a turn. This model never sees a tool's result (llama-cpp-python's
# chatml-function-calling template leaves tool messages out of the prompt), so after a call it
# tends to write another one, with arguments that may run to the end of the context: a minute
# and more, which the server spends even after the client has gone.
MAX_TURNS = 1
ASK_FOR_A_TOOL = "Use the bash tool to run the command: ls"
THEN = "Hello!"


def check_turn(events, ended, bodies) -> None:  # noqa: ANN001
    """Ended cleanly within maxTurns: no more model round trips than maxTurns (a round trip may
    take more than one request: the fallback, a retry), every call concluded, and a stop reason
    that says how it ended."""
    assert ended.stop_reason in ("end_turn", "max_turns"), ended
    assert len({len(body["messages"]) for body in bodies}) <= MAX_TURNS
    assert_calls_concluded(events)
    errors = [e for e in events if isinstance(e, EngineError)]
    if ended.stop_reason == "max_turns":
        assert [e.where for e in errors] == ["generation"]
        assert f"maxTurns ({MAX_TURNS} model round trips)" in errors[0].message
    else:
        assert errors == []
    assert ended.recap()


async def test_a_turn_with_tools_ends_cleanly_and_falls_back_once(server, project: Path):
    async with engine_on(server, project, maxTurns=MAX_TURNS) as (engine, recorded):
        events, ended = await turn(engine, ASK_FOR_A_TOOL)
        first_turn = len(recorded.bodies)
        check_turn(events, ended, recorded.bodies)
        calls = [e for e in events if isinstance(e, ToolCallStarted)]
        assert calls, "the model was asked for a tool call and this server makes one"

        # The empty streamed answer was asked again without streaming, with the same messages.
        streamed, again, *rest = recorded.bodies
        assert streamed["stream"] is True and again["stream"] is False
        assert streamed["messages"] == again["messages"]
        assert streamed["tool_choice"] == again["tool_choice"] == "auto"
        assert again["tools"] == streamed["tools"]
        assert all(body["stream"] is False for body in rest)

        # Remembered: the next turn asks non-streamed straight away (and words, under "none",
        # still stream).
        events, ended = await turn(engine, THEN)
        later = recorded.bodies[first_turn:]
        check_turn(events, ended, later)
        assert later[0]["stream"] is False and later[0]["tool_choice"] == "auto"
        autos = [body for body in recorded.bodies if body.get("tool_choice") == "auto"]
        assert [body["stream"] for body in autos].count(True) == 1

        # The session file holds the whole exchange, well formed.
        saved = saved_session(project)
        messages = saved["messages"]
        assert messages == engine.session.messages
        assert [m["content"] for m in messages if m["role"] == "user"] == [ASK_FOR_A_TOOL, THEN]
        assert_well_formed(messages)
        tool_results = [m for m in messages if m["role"] == "tool"]
        assert len(tool_results) == sum(len(m.get("tool_calls") or []) for m in messages)
        assert len(saved["turns"]) == 2


def test_print_with_tools_prints_every_call_and_the_recap(server, project: Path):
    write_config(project, temperature=0, maxTurns=MAX_TURNS)
    result = mm(
        "--base-url",
        server.base_url,
        "--model",
        server.model_id,
        "-p",
        ASK_FOR_A_TOOL,
        cwd=project,
        timeout=90,
    )
    saved = saved_session(project)
    (record,) = saved["turns"]
    assert record["stop_reason"] in ("end_turn", "max_turns"), result.stdout + result.stderr
    assert result.returncode == (0 if record["stop_reason"] == "end_turn" else 1)
    lines = result.stdout.rstrip("\n").splitlines()
    # The recap closes the output: the commands and file operations counted, the time, tokens.
    assert re.match(r"^(⚙ |📝 |📖 |🔎 |\d+\.\ds)", lines[-1]), lines[-1]
    assert re.search(r"\d+\.\ds", lines[-1])
    messages = saved["messages"]
    assert_well_formed(messages)
    calls = [c for m in messages for c in m.get("tool_calls") or []]
    assert calls
    shown = [line for line in lines[:-1] if line.startswith(("🛠️", "📄", "✏️", "📝", "📖", "⚠"))]
    assert len(shown) == len(calls), result.stdout
