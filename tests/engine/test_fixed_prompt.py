"""The fixed prompt (the system prompt and the tool declarations) kept within max(800 tokens,
15% of the window): full forms when they fit, short forms below, counted as the server counts
(its /tokenize, else the usage of a turn's first request), and nothing changed for a big
window. The MCP side (find_tool with real servers) is tests/tools/test_find_tool.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.engine import make_engine, turn
from support.scripted_server import (
    Reply,
    ScriptedServer,
    call,
    scripted_prompt_tokens,
    scripted_text_tokens,
)

from mm_tui.core.events import ContextUsage, TurnEnded
from mm_tui.engine.context import DEFAULT_CHARS_PER_TOKEN, MESSAGE_OVERHEAD
from mm_tui.engine.fixed_prompt import SHORT_SYSTEM_PROMPT, fixed_budget, fixed_text
from mm_tui.engine.instructions import load_instructions
from mm_tui.engine.turn import DEFAULT_SYSTEM_PROMPT


def tokenized(server: ScriptedServer) -> list[Any]:
    return [r.body for r in server.lookups if r.path == "/tokenize"]


def sent_tools(server: ScriptedServer, index: int = 0) -> dict[str, dict[str, Any]]:
    body = server.requests[index].body
    return {t["function"]["name"]: t["function"] for t in body.get("tools", [])}


def system_sent(server: ScriptedServer, index: int = 0) -> str:
    return server.requests[index].body["messages"][0]["content"]


def test_the_budget_is_800_tokens_or_15_percent_of_the_window() -> None:
    assert [fixed_budget(w) for w in (2048, 4096, 5333, 8192, 32768)] == [
        800,
        800,
        800,
        1228,
        4915,
    ]


async def test_below_the_budget_the_short_forms_are_sent(tmp_path: Path) -> None:
    """A 2,048-token model on llama.cpp: the full forms (about 1,100 tokens of the server's)
    are over 800, so the short prompt and the short declarations go, counted by /tokenize."""
    with ScriptedServer(Reply("ok"), context_window=2048, serves="llama.cpp") as server:
        engine = make_engine(tmp_path, server)
        await engine.learn_context_window()
        await asyncio.wait_for(turn(engine, "hello"), 30)
        assert system_sent(server) == SHORT_SYSTEM_PROMPT.format(cwd=tmp_path)
        tools = sent_tools(server)
        assert tools["bash"] == {
            "name": "bash",
            "description": (
                "Run a shell command with `bash -c` in the working directory and return its "
                "output (stdout and stderr merged)."
            ),
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        }
        assert tools["read_file"]["description"].endswith(" Optional: start, end, numbered.")
        assert tools["read_file"]["parameters"] == {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }
        edits = tools["edit_file"]["parameters"]["properties"]["edits"]
        assert edits == {
            "items": {
                "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
                "required": ["old", "new"],
                "type": "object",
            },
            "type": "array",
        }
        # the server counted what was sent, and that is within the budget
        fit = engine.context.fit
        assert fit is not None and fit.short and fit.counted
        body = server.requests[0].body
        counted = fixed_text(body["messages"][0]["content"], body["tools"])
        assert tokenized(server)[-1] == {"content": counted, "add_special": False}
        assert fit.tokens == scripted_text_tokens(counted) <= 800
        # the journal keeps the full prompt; only what is sent is short
        assert engine.session.messages[0]["content"] == DEFAULT_SYSTEM_PROMPT.format(cwd=tmp_path)
        await engine.aclose()


async def test_a_call_made_from_the_short_form_still_takes_the_optional_fields(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    args = {"path": "notes.txt", "start": 2, "end": 2}
    script = [Reply(tool_calls=[call("read_file", args)]), Reply("done")]
    with ScriptedServer(*script, context_window=2048, serves="llama.cpp") as server:
        engine = make_engine(tmp_path, server)
        await engine.learn_context_window()
        await asyncio.wait_for(turn(engine, "read"), 30)
        assert "start" not in sent_tools(server)["read_file"]["parameters"]["properties"]
        result = server.requests[1].body["messages"][-1]
        assert result["role"] == "tool" and result["content"] == "two"
        await engine.aclose()


async def test_above_the_budget_nothing_changes(tmp_path: Path) -> None:
    """8,192 tokens: a budget of 1,228, and the full forms (about 1,100 by the server's count,
    1,400 by the first estimate) fit once counted; 32,768: the same."""
    for window in (8192, 32768):
        with ScriptedServer(Reply("ok"), context_window=window, serves="llama.cpp") as server:
            engine = make_engine(tmp_path, server)
            await engine.learn_context_window()
            await asyncio.wait_for(turn(engine, "hello"), 30)
            assert system_sent(server) == DEFAULT_SYSTEM_PROMPT.format(cwd=tmp_path)
            declared = [
                t
                for t in engine.registry.declarations()
                if window >= 16384 or t["function"]["name"] != "todo"
            ]
            assert server.requests[0].body["tools"] == declared
            fit = engine.context.fit
            assert fit is not None and not fit.short and fit.counted
            assert fit.tokens <= fixed_budget(window)
            await engine.aclose()


async def test_without_a_tokenizer_the_first_request_counts_it(tmp_path: Path) -> None:
    """Ollama has no /tokenize: the first request's prompt_tokens less the user's message
    (estimated) is the count, and the header says so without the `~`."""
    with ScriptedServer(
        Reply("ok"), Reply("again"), context_window=4096, serves="ollama", report_usage=True
    ) as server:
        engine = make_engine(tmp_path, server)
        await engine.learn_context_window()
        before = engine.context_usage()
        assert before is not None and before.fixed_estimated
        assert before.text.endswith(f" · fixed ~{before.fixed:,}")
        events = await asyncio.wait_for(turn(engine, "hello"), 30)
        assert [r.path for r in server.lookups if r.method == "POST"][-2:] == [
            "/tokenize",
            "/tokenize",
        ]  # both forms tried once, then never again
        fit = engine.context.fit
        assert fit is not None and fit.counted
        body = server.requests[0].body
        prompt_tokens = scripted_prompt_tokens(body)
        user = engine.context.meter.size(body["messages"][1])
        rest = round(user / DEFAULT_CHARS_PER_TOKEN) + MESSAGE_OVERHEAD
        assert fit.tokens == prompt_tokens - rest
        end = events[-1]
        assert isinstance(end, TurnEnded) and end.context_fixed == fit.tokens
        assert end.recap().endswith(f" · fixed {fit.tokens:,}")
        lookups = len(server.lookups)
        await asyncio.wait_for(turn(engine, "more"), 30)
        assert len(server.lookups) == lookups  # counted once: not asked per request
        await engine.aclose()


async def test_vllm_counts_with_its_own_tokenize(tmp_path: Path) -> None:
    with ScriptedServer(Reply("ok"), Reply("ok"), context_window=2048, serves="vllm") as server:
        engine = make_engine(tmp_path, server)
        await engine.learn_context_window()
        await asyncio.wait_for(turn(engine, "hello"), 30)
        asked = tokenized(server)
        assert "content" in asked[0] and asked[1]["model"] == "scripted-model"
        assert all("prompt" in body for body in asked[1:])
        fit = engine.context.fit
        assert fit is not None and fit.counted and fit.tokens <= 800
        count = len(asked)
        await asyncio.wait_for(turn(engine, "more"), 30)
        assert len(tokenized(server)) == count  # counted per form, not per request
        await engine.aclose()


async def test_the_header_shows_the_fixed_part_apart(tmp_path: Path) -> None:
    usage = ContextUsage(used=1234, window=4096, fixed=712)
    assert usage.text == "ctx 1,234 / 4,096 (30%) · fixed 712"
    assert ContextUsage(used=1234, window=4096, fixed=712, fixed_estimated=True).text == (
        "ctx 1,234 / 4,096 (30%) · fixed ~712"
    )
    assert ContextUsage(used=1234, window=None, fixed=712).text == "ctx 1,234"
    with ScriptedServer(Reply("ok"), context_window=2048, serves="llama.cpp") as server:
        engine = make_engine(tmp_path, server)
        await engine.learn_context_window()
        events = await asyncio.wait_for(turn(engine, "hello"), 30)
        shown = [e for e in events if isinstance(e, ContextUsage)][-1]
        fit = engine.context.fit
        assert fit is not None and shown.fixed == fit.tokens and not shown.fixed_estimated
        assert shown.used >= shown.fixed
        await engine.aclose()


@pytest.mark.parametrize("window", [2048, 4096])
async def test_a_configured_prompt_and_agents_md_are_sent_whole(
    tmp_path: Path, window: int
) -> None:
    (tmp_path / "AGENTS.md").write_text("Run the tests with make check.\n")
    with ScriptedServer(Reply("ok"), context_window=window, serves="llama.cpp") as server:
        engine = make_engine(tmp_path, server, systemPrompt="Be terse. Answer in French.")
        engine.instructions = load_instructions(tmp_path, home=tmp_path / "home", environ={})
        engine.session.messages[0] = {"role": "system", "content": engine.system_prompt()}
        await engine.learn_context_window()
        await asyncio.wait_for(turn(engine, "hello"), 30)
        sent = system_sent(server)
        assert sent.startswith("Be terse. Answer in French.")
        assert "Run the tests with make check." in sent
        assert engine.context.fit is not None and engine.context.fit.short
        await engine.aclose()


async def test_a_server_elsewhere_is_asked_only_when_the_count_may_change_the_form() -> None:
    """A server a round trip away (maybe with no tokenizer at all) is not asked for a form far
    under its budget: the first request's usage counts it. Near the budget it is."""
    from mm_tui.engine.fixed_prompt import FixedPrompt
    from mm_tui.tools.bash import BashTool

    asked: list[str] = []

    async def counter(text: str) -> int:
        asked.append(text)
        return len(text) // 4

    fixed = FixedPrompt(lambda: (), lambda tool: None)
    tools = [(BashTool(), False)]
    far_under = fixed.choose("You are mm.", "You are mm.", tools, 32768)
    await fixed.count(counter, lambda: far_under, local=False)
    assert asked == []
    await fixed.count(counter, lambda: fixed.choose("You are mm.", "x", tools, 32768))
    assert asked == [far_under.text]  # on this machine it is asked whatever the size
    near = fixed.choose("p" * 2000, "short", tools, 2048)
    assert not near.counted and near.budget > near.tokens >= near.budget / 2
    await fixed.count(counter, lambda: fixed.choose("p" * 2000, "short", tools, 2048), local=False)
    assert asked[1:] == [near.text]
