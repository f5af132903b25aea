"""The find_tool tool: declared in place of the MCP tools that a small window has no room for
(engine/fixed_prompt.py leaves them out). Given words, it returns the declarations of the tools
left out that match them (name, description, parameters), and the model then calls them by name
as if they had been declared: the registry knows every MCP tool, declared or not.

A tool matches by the words of the query found in its name or its description; the best
matches come first, at most MAX_FOUND of them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mm_tui.core.text import one_line
from mm_tui.tools import schemas
from mm_tui.tools.base import Tool, ToolContext, ToolResult, lazy_args

if TYPE_CHECKING:
    from mm_tui.tools.args import FindToolArgs

MAX_FOUND = 5
DESCRIPTION = (
    "Find a tool that is not declared here: give words of what it should do, and get the "
    "declarations of the tools that match; then call them by name. It finds {count} tool(s) of "
    "the MCP servers {servers}."
)
WORD = re.compile(r"[a-z0-9]+")


COMMON = frozenset({"the", "and", "for", "with", "that", "this", "from", "into", "tool", "tools"})


def words(text: str) -> set[str]:
    """The lower-case words of `text` that say something (three letters or more, not the
    commonest); a name's parts (`files__read_text`) are words too."""
    return {w for w in WORD.findall(text.lower()) if len(w) > 2 and w not in COMMON}


def score(tool: Tool, wanted: set[str]) -> int:
    """How many of the wanted words the tool's name and description hold (the name counts
    twice: a word of the name says more)."""
    name = words(tool.name)
    described = words(tool.description())
    return sum(2 * (w in name) + (w in described) for w in wanted)


def declared_text(tool: Tool) -> str:
    """A tool's declaration as the model reads it in the result."""
    parameters = json.dumps(tool.parameters(), ensure_ascii=False, separators=(",", ":"))
    return f"{tool.name}: {tool.description()}\nparameters: {parameters}"


class FindToolTool(Tool):
    name = "find_tool"
    kind = "search"
    Args = lazy_args("FindToolArgs")
    parameters_schema = schemas.FIND_TOOL

    def __init__(self, left_out: Callable[[], Sequence[Tool]]) -> None:
        self.left_out = left_out  # the tools not declared now (the fixed prompt's choice)

    def description(self) -> str:
        return self.description_for(self.left_out())

    def description_for(self, tools: Sequence[Tool]) -> str:
        """The description when `tools` are left out: their servers named, not each tool."""
        servers = dict.fromkeys(getattr(tool, "server", tool.name) for tool in tools)
        return DESCRIPTION.format(count=len(tools), servers=", ".join(servers) or "none")

    def short_description(self) -> str:
        return self.description()

    def title(self, args: FindToolArgs) -> str:
        return one_line(args.query, 80)

    def display(self, args: FindToolArgs) -> str:
        return f"🔎 find_tool: {self.title(args)}"

    async def run(self, args: FindToolArgs, ctx: ToolContext) -> ToolResult:
        tools = list(self.left_out())
        wanted = words(args.query)
        if not tools:
            return ToolResult("[find_tool: every tool is declared already — call it by name]")
        scored = sorted(
            ((score(tool, wanted), index, tool) for index, tool in enumerate(tools)),
            key=lambda found: (-found[0], found[1]),
        )
        found = [tool for points, _, tool in scored if points > 0][:MAX_FOUND]
        if not found:
            names = ", ".join(tool.name for tool in tools)
            return ToolResult(
                f'[find_tool: no tool matches "{one_line(args.query, 80)}" — the tools it can '
                f"find: {names}]"
            )
        listed = "\n\n".join(declared_text(tool) for tool in found)
        return ToolResult(
            f"{len(found)} tool(s) found; call them by name with these parameters:\n\n{listed}"
        )
