"""The built-in demo model: an in-process, scripted stand-in for a model server.

It yields the same chunks as the HTTP provider (reasoning, text in small pieces, tool calls whose
arguments arrive in pieces, usage, the final `StreamEnd`), so every front end, the screenshot
tests and `make run` work with no server at all. It recognises a handful of requests and answers
anything else with how to connect a real model.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from mm_tui.core.events import Usage
from mm_tui.core.frozen import frozen
from mm_tui.engine.model_stream import (
    ModelChunk,
    ReasoningChunk,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)

HELP = """\
I am mm's **demo model**: a script, not a real model. I can show you what mm does with a few \
requests:

- *list the files*
- *read the README*
- *fix the typo in greet.py*
- *run the tests*
- *fetch a page* (with `fetchContentTool: true`)
- *rename a symbol* (with a language server configured)
- *ask another agent* (with `mmConfigs`)

To work with a real model, start a local server (Ollama, llama.cpp, LM Studio, vLLM, Docker \
Model Runner) and run `mm` again: it finds it by itself. Or point it anywhere with \
`mm --base-url http://host:port/v1 --model NAME`, or `baseUrl` and `model` in \
`.mm/config.yaml`.
"""


@frozen
class _Script:
    """One recognised request: the tool it calls, with which arguments, and what it says."""

    pattern: str
    tool: str
    arguments: dict[str, Any]
    thought: str
    intro: str
    fallback: str = ""  # said instead when the tool is not declared
    succeeded: str = ""  # what the result starts with when the call did what the intro says


SCRIPTS: tuple[_Script, ...] = (
    _Script(
        r"\b(list|show)\b.*\bfiles?\b|^\s*ls\b",
        "bash",
        {"command": "ls -la"},
        "The person wants to see the files of the working folder; `ls -la` shows them all.",
        "Here are the files of the working folder:",
    ),
    _Script(
        r"\bread\b.*\breadme\b|\bread\b.*\bfile\b",
        "read_file",
        {"path": "README.md"},
        "Reading the README is the quickest way to learn what this project is.",
        "This is what the README says:",
    ),
    _Script(
        r"\btypo\b|\bfix\b",
        "edit_file",
        {"path": "greet.py", "edits": [{"old": "Helo", "new": "Hello"}]},
        "greet.py greets with `Helo`: one edit fixes it.",
        "I fixed the typo in greet.py:",
        succeeded=r"edited greet\.py: ",
    ),
    _Script(
        r"\b(run|launch)\b.*\btests?\b|\btest suite\b",
        "bash",
        {"command": "python3 -m unittest -v 2>&1 | tail -n 20"},
        "The project's tests use unittest; running them shows what passes.",
        "The tests ran:",
    ),
    _Script(
        r"\bfetch\b|\bweb ?page\b|https?://",
        "fetch_content",
        {"url": "https://example.com"},
        "fetch_content turns a page into Markdown.",
        "Here is the page as Markdown:",
        "fetch_content is not declared: set `fetchContentTool: true` in `.mm/config.yaml` to "
        "let me fetch pages.",
    ),
    _Script(
        r"\brename\b",
        "lsp",
        {"action": "rename", "path": "greet.py", "symbol": "greet", "new_name": "welcome"},
        "A rename through the language server changes every reference at once.",
        "The language server renamed the symbol:",
        "The lsp tool is not declared: configure a language server in `lsp.servers` (for "
        "example pyright or pylsp for Python) to let me rename symbols.",
    ),
    _Script(
        r"\bask\b.*\bagent\b|\bdelegate\b",
        "ask_agent",
        {"agent": "helper", "prompt": "Say hello from the asked agent."},
        "Another agent can take this task.",
        "The other agent answered:",
        "ask_agent is not declared: name agents in `mmConfigs` to let me hand work to them.",
    ),
)

FALLBACK_FIX = {"command": "sed -i 's/Helo/Hello/' greet.py && grep -n Hello greet.py"}


class DemoModel:
    """A `ModelClient` that follows the scripts above. `delay` paces the pieces so that the
    stream looks like a model typing; tests use 0."""

    model = "demo"
    provider = "demo"
    base_url = "builtin:demo"

    def __init__(self, *, delay: float = 0.01, piece: int = 6) -> None:
        self.delay = delay
        self.piece = piece
        self._calls = 0

    async def aclose(self) -> None:
        return None

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        declared = {t["function"]["name"] for t in tools}
        last = messages[-1] if messages else {}
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4
        if last.get("role") == "tool":
            async for chunk in self._after_tool(messages):
                yield chunk
            return
        request = str(last.get("content") or "")
        script = next((s for s in SCRIPTS if re.search(s.pattern, request, re.IGNORECASE)), None)
        if script is None:
            async for chunk in self._say(HELP, prompt_tokens):
                yield chunk
            return
        tool, arguments = script.tool, script.arguments
        if tool not in declared:
            if tool == "edit_file" and "bash" in declared:
                tool, arguments = "bash", FALLBACK_FIX
            else:
                async for chunk in self._say(script.fallback or HELP, prompt_tokens):
                    yield chunk
                return
        for piece in self._pieces(script.thought):
            await self._pause()
            yield ReasoningChunk(piece)
        self._calls += 1
        call = ToolCall(id=f"demo_{self._calls}", name=tool, arguments=json.dumps(arguments))
        sent = ""
        for piece in self._pieces(call.arguments):
            await self._pause()
            sent += piece
            yield ToolCallChunk(index=0, name=call.name, arguments=sent)
        yield StreamEnd(
            finish_reason="tool_calls",
            tool_calls=(call,),
            usage=Usage(prompt_tokens, len(call.arguments) // 4 + 8),
        )

    async def _after_tool(self, messages: list[dict[str, Any]]) -> AsyncIterator[ModelChunk]:
        """After a tool ran: show its output (the tail of it) under the script's intro."""
        output = str(messages[-1].get("content") or "")
        call_name = ""
        for message in reversed(messages):
            if message.get("role") == "assistant" and message.get("tool_calls"):
                call_name = message["tool_calls"][-1]["function"]["name"]
                break
        request = next(
            (str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"),
            "",
        )
        script = next((s for s in SCRIPTS if re.search(s.pattern, request, re.IGNORECASE)), None)
        intro = script.intro if script else f"{call_name} answered:"
        # A scripted model, but an honest one: a refused or failed call is said to have failed,
        # never announced as the script's success ("I fixed the typo").
        if re.match(r"\[[^\]\n]* rejected by the user\]", output):  # bash: "[command …]"
            intro = f"You rejected the {call_name} call, so nothing was done."
        elif output.startswith("[error") or (
            script and script.succeeded and not re.match(script.succeeded, output)
        ):
            intro = f"The {call_name} call failed, so nothing was done:"
        lines = output.rstrip("\n").splitlines()
        shown = "\n".join(lines[-30:])
        more = f"\n\n*({len(lines) - 30} earlier lines not shown)*" if len(lines) > 30 else ""
        fence = "```"
        while fence in shown:
            fence += "`"
        text = f"{intro}\n\n{fence}\n{shown}\n{fence}{more}\n"
        async for chunk in self._say(
            text, sum(len(str(m.get("content") or "")) for m in messages) // 4
        ):
            yield chunk

    async def _say(self, text: str, prompt_tokens: int) -> AsyncIterator[ModelChunk]:
        for piece in self._pieces(text):
            await self._pause()
            yield TextChunk(piece)
        yield StreamEnd(finish_reason="stop", usage=Usage(prompt_tokens, len(text) // 4 + 1))

    def _pieces(self, text: str) -> list[str]:
        return [text[i : i + self.piece] for i in range(0, len(text), self.piece)]

    async def _pause(self) -> None:
        await asyncio.sleep(self.delay) if self.delay else await asyncio.sleep(0)
