"""One tool of an MCP server, as mm's tools are: declared to the model as `<server>__<tool>` with
the server's input schema, shown as `‣ <server>: <tool>  <short args>`, asking before it runs
when yolo is off (a server's tool may do anything), counted in the recap as an mcp call.

The call itself is the server link's (`link.py`, which holds the SDK): this module imports no
part of the SDK, so that naming and showing a tool cost nothing before the SDK is loaded."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import ConfigDict

from mm_tui.core.events import ToolProgress
from mm_tui.core.text import one_line
from mm_tui.tools.args import ToolArgs
from mm_tui.tools.base import Tool, ToolContext, ToolResult, truncate

NAME_LIMIT = 64  # what OpenAI's API takes for a function's name (`^[a-zA-Z0-9_-]{1,64}$`)
SHORT_ARGS = 80  # characters of the arguments on the call's line


class McpArgs(ToolArgs):
    """Whatever the model sends: the server checks the arguments against its own schema."""

    model_config = ConfigDict(extra="allow")


class Outcome(Protocol):
    text: str
    is_error: bool


class Caller(Protocol):
    """What a tool needs of its server's link: to run a call."""

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        on_progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> Outcome: ...


def tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>`, with what a model's tool name may not hold made `_`, cut to 64."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}__{tool}")[:NAME_LIMIT]


def unique_name(name: str, taken: Callable[[str], bool]) -> str:
    """`name`, or when it is `taken`, `name` with the first free `_2`, `_3`… (cut to leave room
    for it within the 64 characters): two tools must never answer to one name."""
    count = 1
    candidate = name
    while taken(candidate):
        count += 1
        suffix = f"_{count}"
        candidate = name[: NAME_LIMIT - len(suffix)] + suffix
    return candidate


def short_args(arguments: dict[str, Any]) -> str:
    """The arguments on one line: one argument's value alone, several as `key=value`."""
    if not arguments:
        return ""

    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    if len(arguments) == 1:
        return one_line(text(next(iter(arguments.values()))), SHORT_ARGS)
    return one_line(" ".join(f"{k}={text(v)}" for k, v in arguments.items()), SHORT_ARGS)


class McpTool(Tool):
    kind = "other"
    counter = "mcp_calls"
    Args = McpArgs

    def __init__(
        self,
        server: str,
        tool: str,
        *,
        description: str | None,
        schema: dict[str, Any] | None,
        link: Caller,
        name: str | None = None,
    ) -> None:
        self.name = name or tool_name(server, tool)  # the pool gives another when it is taken
        self.server = server
        self.tool = tool  # the server's own name for it
        self._description = description
        self._schema = schema
        self.link = link

    def description(self) -> str:
        return self._description or f"{self.tool}, a tool of the MCP server {self.server}"

    def parameters(self) -> dict[str, Any]:
        """The server's input schema, as it gave it. A function's parameters must be an
        object's: a schema that names no type (some servers leave `"type": "object"` out) is
        one, with its properties kept; one of another type becomes an object with none."""
        schema = {k: v for k, v in (self._schema or {}).items() if k != "$schema"}
        kind = schema.setdefault("type", "object")
        if kind != "object":
            return {"type": "object", "properties": {}}
        schema.setdefault("properties", {})
        return schema

    def title(self, args: McpArgs) -> str:
        return short_args(args.model_dump())

    def heading(self, args: McpArgs) -> str:
        return f"{self.server}: {self.tool}  {self.title(args)}".rstrip()

    def display(self, args: McpArgs) -> str:
        return f"🔌 {self.heading(args)}"

    def needs_permission(self, args: Any) -> bool:
        return True

    async def permission_details(self, args: McpArgs, ctx: ToolContext) -> str:
        """The call and every argument it sends, whole."""
        arguments = args.model_dump()
        if not arguments:
            return f"{self.server}: {self.tool} (no arguments)"
        sent = json.dumps(arguments, ensure_ascii=False, indent=2)
        return f"{self.server}: {self.tool}\n{truncate(sent, 4000)}"

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolResult:
        def progress(done: float, total: float | None, message: str | None) -> None:
            ctx.emit(
                ToolProgress(
                    call_id=ctx.call_id,
                    tool=self.name,
                    progress=done,
                    total=total,
                    message=message or "",
                )
            )

        outcome = await self.link.call(self.tool, args.model_dump(), progress)
        status = "error" if outcome.is_error else "ok"
        return ToolResult(truncate(outcome.text, ctx.settings.max_output), status=status)
