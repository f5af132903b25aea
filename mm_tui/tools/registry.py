"""Which tools are declared (by the configuration's flags) and how a model's raw call becomes a
validated one. A model's mistakes (broken JSON, a missing or mistyped field, a tool that does not
exist) become a clear text result that names the problem, so the turn goes on.

Besides the built-in tools, a registry holds sources of tools that come and go while mm runs:
the MCP servers (`tools/mcp/`), whose tools are declared once their server is ready and no
longer once it has stopped. `version` changes whenever what is declared may have."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mm_tui.config import Settings, resolve_dir
from mm_tui.core.asking import RunnerFactory
from mm_tui.core.events import Event
from mm_tui.tools.base import Tool

if TYPE_CHECKING:
    from mm_tui.tools.args import ToolArgs


class ToolSource(Protocol):
    """Tools that come and go (an MCP pool): those it declares now, and any it knows by name
    (a stopped server's tools still answer a call, with the error that says why)."""

    @property
    def version(self) -> int: ...

    def start(self) -> None: ...

    def tools(self) -> list[Tool]: ...

    def get(self, name: str) -> Tool | None: ...

    def listen(self, emit: Callable[[Event], None]) -> None: ...

    async def ready(self) -> None: ...

    async def aclose(self) -> None: ...


class ToolRegistry:
    def __init__(self, tools: list[Tool], warnings: list[str] | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools}
        # Lines for the banner: a configured tool that could not be declared, and why.
        self.warnings: list[str] = list(warnings or [])
        self._sources: list[tuple[ToolSource, bool]] = []  # (source, owned: closed with us)
        # Tools the engine declares itself when it chooses (find_tool), known by name here
        self._helpers: dict[str, Tool] = {}

    # -- sources of tools that come and go ------------------------------------------------

    def add_source(self, source: ToolSource, *, owned: bool = True) -> None:
        """Declare `source`'s tools as they become ready. An `owned` source is this registry's
        own (started, listened to and closed with it); another is shared (an ACP agent's
        configured MCP servers, which every session of the process uses)."""
        self._sources.append((source, owned))

    def start(self) -> None:
        """Start the owned sources in the background (MCP servers connect); returns at once."""
        for source, owned in self._sources:
            if owned:
                source.start()

    def listen(self, emit: Callable[[Event], None]) -> None:
        """Where the owned sources say what happens outside a turn (a server that did not
        start, or stopped): the front end's `emit`. What they said before is said now."""
        for source, owned in self._sources:
            if owned:
                source.listen(emit)

    async def ready(self) -> None:
        """Until every source has finished starting (each server bounded by its own start-up
        timeout): what `mm -p` and an ACP prompt wait for."""
        for source, _ in self._sources:
            await source.ready()

    @property
    def version(self) -> tuple[int, ...]:
        return tuple(source.version for source, _ in self._sources)

    def _declared(self) -> dict[str, Tool]:
        tools = dict(self._tools)
        for source, _ in self._sources:
            for tool in source.tools():
                tools.setdefault(tool.name, tool)  # a built-in tool's name wins
        return tools

    def declared_tools(self) -> list[tuple[Tool, bool]]:
        """The tools declared now, each with whether it comes from a source (an MCP server's):
        those a small window may leave to find_tool."""
        return [(tool, name not in self._tools) for name, tool in self._declared().items()]

    def add_helper(self, tool: Tool) -> None:
        """A tool the engine declares when it chooses (find_tool): called by name like any."""
        self._helpers[tool.name] = tool

    @classmethod
    def from_settings(
        cls, settings: Settings, cwd: Path, *, runners: RunnerFactory | None = None
    ) -> ToolRegistry:
        """The tools the configuration declares, in the order docs/tools.md lists them.
        `runners` starts asked agents for ask_agent (start-up gives the ACP client's pool)."""
        from mm_tui.tools.bash import BashTool
        from mm_tui.tools.edit_file import EditFileTool
        from mm_tui.tools.read_file import ReadFileTool
        from mm_tui.tools.read_skill import ReadSkillTool, find_skills
        from mm_tui.tools.write_file import WriteFileTool

        tools: list[Tool] = []
        warnings: list[str] = []
        if settings.bash_tool or settings.lsp.servers:
            from mm_tui.core.landlock_abi import startup_warning

            # said once, here: auto mode where commands cannot be confined
            sandbox = startup_warning(settings.sandbox, settings.sandbox_network)
            warnings.extend([sandbox] if sandbox else [])
        if settings.bash_tool:
            tools.append(BashTool())
        skills, refused = find_skills(resolve_dir(settings.skills_dir, cwd))
        warnings.extend(f'skill "{name}" is not offered: {why}' for name, why in refused.items())
        if skills:
            tools.append(ReadSkillTool(skills, refused))
        if settings.edit_tools:
            tools.append(ReadFileTool())
            tools.append(WriteFileTool())
            tools.append(EditFileTool())
        if settings.todo_tool:  # "auto" too: ContextKeeper declares it when the window allows
            from mm_tui.tools.todo import TodoTool

            tools.append(TodoTool())
        if settings.lsp.servers:
            from mm_tui.tools.lsp import LspTool

            lsp, lsp_warnings = LspTool.from_settings(settings, cwd)
            warnings.extend(lsp_warnings)
            if lsp is not None:
                tools.append(lsp)
        if settings.fetch_content_tool:
            from mm_tui.tools.fetch import FetchContentTool

            tools.append(FetchContentTool())
        if settings.mm_configs:
            from mm_tui.tools.ask_agent import AskAgentTool

            tools.append(AskAgentTool(settings.mm_configs, cwd, runners=runners))
        return cls(tools, warnings)

    async def aclose(self) -> None:
        """Stop what the tools keep running (language servers, asked agents, MCP servers) when
        mm exits."""
        for tool in self._tools.values():
            try:
                await tool.aclose()
            except Exception:  # noqa: BLE001 - closing must reach every tool
                pass
        for source, owned in self._sources:
            if owned:
                try:
                    await source.aclose()
                except Exception:  # noqa: BLE001 - as above
                    pass

    @property
    def names(self) -> list[str]:
        return list(self._declared())

    def get(self, name: str) -> Tool | None:
        tool = self._tools.get(name) or self._helpers.get(name)
        for source, _ in self._sources:
            if tool is not None:
                break
            tool = source.get(name)
        return tool

    def declarations(self) -> list[dict[str, Any]]:
        return [tool.declaration() for tool in self._declared().values()]

    def parse(self, name: str, raw: str) -> tuple[Tool, ToolArgs] | str:
        """The tool and its validated arguments, or the error text for the model."""
        tool = self.get(name)
        if tool is None:
            known = ", ".join(self.names) or "none"
            return f'[error: there is no tool named "{name}" — the tools are: {known}]'
        text = raw.strip() if raw else ""
        try:
            # strict=False: a newline or a tab written raw inside a string (small models do:
            # a file's content, a multi-line command) is the character it stands for
            data = json.loads(text, strict=False) if text else {}
        except json.JSONDecodeError as exc:
            return (
                f"[error: the arguments of {name} are not valid JSON ({exc}) — send one JSON "
                f"object with the fields: {_fields(tool)}]"
            )
        if not isinstance(data, dict):
            return (
                f"[error: the arguments of {name} must be a JSON object, not "
                f"{type(data).__name__} — send the fields: {_fields(tool)}]"
            )
        from pydantic import ValidationError  # loaded with the tool's Args

        try:
            return tool, tool.Args.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(_problem(err) for err in exc.errors())
            return f"[error: invalid arguments for {name}: {problems} — the fields are: {_fields(tool)}]"


def _problem(err: Any) -> str:
    where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
    if err.get("type") == "missing":
        return f'field "{where}" is missing'
    return f'field "{where}": {err.get("msg", "invalid")} (got {json.dumps(err.get("input"))[:60]})'


def _fields(tool: Tool) -> str:
    schema = tool.parameters()
    required = set(schema.get("required", []))
    parts = []
    for key, prop in schema.get("properties", {}).items():
        kind = prop.get("type", "value")
        parts.append(f"{key} ({kind}{', required' if key in required else ''})")
    return ", ".join(parts)
