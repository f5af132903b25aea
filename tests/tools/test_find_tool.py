"""find_tool, with five real MCP servers (tests/support/mcp_server.py, the SDK's FastMCP, on
stdio) and mm put together by the real start-up: on a 2,048-token model the MCP tools that do
not fit the fixed prompt's budget are left out of the declarations, find_tool gives their
declarations on demand, and the model then calls them by name. On a 32,768-token model nothing
is left out. The messages are docs/tools.md's, to the letter."""

from __future__ import annotations

import json
from pathlib import Path

from support.engine import turn
from support.mcp_helpers import finished, mm_with, stdio
from support.scripted_server import Reply, ScriptedServer, call

from mm_tui.core.events import Decision
from mm_tui.engine.fixed_prompt import fixed_budget
from mm_tui.engine.turn import Engine
from mm_tui.tools.find_tool import DESCRIPTION, FindToolTool, declared_text

SERVERS = ("files", "notes", "web", "mail", "shop")


def five() -> dict[str, object]:
    return {name: stdio() for name in SERVERS}


def allow(_: object) -> Decision:
    return Decision.ALLOW_ONCE


async def counted(engine: Engine):  # noqa: ANN201 - the engine's Fit
    """The form the first request will send, counted by the server (as before a request)."""
    await engine.context.count_fixed()
    fit = engine.context.fit_now()
    assert fit is not None and fit.counted
    return fit


async def test_a_tiny_window_with_five_mcp_servers_stays_within_the_budget(
    tmp_path: Path,
) -> None:
    with ScriptedServer(Reply("ok"), context_window=2048, serves="llama.cpp") as server:
        async with mm_with(tmp_path, server, five()) as (engine, said):
            fit = await counted(engine)
            mcp = [t for t, sourced in engine.registry.declared_tools() if sourced]
            await turn(engine, "hello")
        sent = server.requests[0].tool_names
    assert said == []
    assert len(mcp) == 5 * 9
    assert fit.short and fit.tokens <= fixed_budget(2048) == 800
    assert fit.left_out and sent[-1] == "find_tool"
    assert {t.name for t in fit.left_out}.isdisjoint(sent)
    finder = server.requests[0].tools[-1]["function"]
    assert finder["description"] == DESCRIPTION.format(
        count=len(fit.left_out), servers=", ".join(dict.fromkeys(t.server for t in fit.left_out))
    )
    assert finder["parameters"] == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }


async def test_find_tool_gives_a_declaration_and_the_tool_is_then_called(tmp_path: Path) -> None:
    with ScriptedServer(context_window=2048, serves="llama.cpp") as server:
        async with mm_with(tmp_path, server, five()) as (engine, _):
            fit = await counted(engine)
            add = next(t for t in fit.left_out if t.name.endswith("__add"))
            server.script(
                Reply(tool_calls=[call("find_tool", {"query": "sum of two integers"}, id="c1")]),
                Reply(tool_calls=[call(add.name, {"a": 2, "b": 40}, id="c2")]),
                Reply("42"),
            )
            events = await turn(engine, "add 2 and 40", answer=allow)
        sent = server.requests[0].tool_names
    results = [(f.tool, f.status, f.output) for f in finished(events)]
    adders = [t for t in fit.left_out if t.name.endswith("__add")]
    assert add.name not in sent
    assert results[0] == (
        "find_tool",
        "ok",
        f"{len(adders)} tool(s) found; call them by name with these parameters:\n\n"
        + "\n\n".join(declared_text(t) for t in adders),
    )
    assert declared_text(add) == (
        f"{add.name}: The sum of two integers.\nparameters: "
        + json.dumps(add.parameters(), separators=(",", ":"))
    )
    assert results[1] == (add.name, "ok", "42")


async def test_find_tool_says_when_nothing_matches(tmp_path: Path) -> None:
    with ScriptedServer(context_window=2048, serves="llama.cpp") as server:
        async with mm_with(tmp_path, server, five()) as (engine, _):
            fit = await counted(engine)
            server.script(
                Reply(tool_calls=[call("find_tool", {"query": "weather forecast"}, id="c1")]),
                Reply("none"),
            )
            events = await turn(engine, "weather?")
    names = ", ".join(t.name for t in fit.left_out)
    assert [f.output for f in finished(events)] == [
        f'[find_tool: no tool matches "weather forecast" — the tools it can find: {names}]'
    ]


async def test_a_big_window_declares_every_tool_in_full(tmp_path: Path) -> None:
    with ScriptedServer(Reply("ok"), context_window=32768, serves="llama.cpp") as server:
        async with mm_with(tmp_path, server, five()) as (engine, _):
            fit = await counted(engine)
            declared = engine.registry.declarations()
            await turn(engine, "hello")
        tools = server.requests[0].tools
    assert not fit.short and not fit.left_out and fit.tokens <= fixed_budget(32768)
    assert tools == declared and "find_tool" not in [t["function"]["name"] for t in tools]


async def test_with_nothing_left_out_it_says_so(tmp_path: Path) -> None:
    from mm_tui.config import Settings
    from mm_tui.tools.args import FindToolArgs
    from mm_tui.tools.base import ToolContext

    tool = FindToolTool(lambda: ())
    args = FindToolArgs(query="anything at all")
    result = await tool.run(args, ToolContext(cwd=tmp_path, settings=Settings()))
    assert result.output == "[find_tool: every tool is declared already — call it by name]"
    assert result.status == "ok"
    assert tool.display(args) == "🔎 find_tool: anything at all"
    assert tool.description().endswith("It finds 0 tool(s) of the MCP servers none.")
