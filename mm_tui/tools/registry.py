"""Which tools are declared (by the configuration's flags) and how a model's raw call becomes a
validated one. A model's mistakes (broken JSON, a missing or mistyped field, a tool that does not
exist) become a clear text result that names the problem, so the turn goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mm_tui.config import Settings, resolve_dir
from mm_tui.core.asking import RunnerFactory
from mm_tui.tools.base import Tool, ToolArgs


class ToolRegistry:
    def __init__(self, tools: list[Tool], warnings: list[str] | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools}
        # Lines for the banner: a configured tool that could not be declared, and why.
        self.warnings: list[str] = list(warnings or [])

    @classmethod
    def from_settings(
        cls, settings: Settings, cwd: Path, *, runners: RunnerFactory | None = None
    ) -> ToolRegistry:
        """The tools the configuration declares, in the order the reference lists them.
        `runners` starts asked agents for ask_agent (start-up gives the ACP client's pool)."""
        from mm_tui.tools.bash import BashTool
        from mm_tui.tools.edit_file import EditFileTool
        from mm_tui.tools.read_file import ReadFileTool
        from mm_tui.tools.read_skill import ReadSkillTool, find_skills
        from mm_tui.tools.write_file import WriteFileTool

        tools: list[Tool] = []
        warnings: list[str] = []
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
        """Stop what the tools keep running (language servers, asked agents) when mm exits."""
        for tool in self._tools.values():
            try:
                await tool.aclose()
            except Exception:  # noqa: BLE001 - closing must reach every tool
                pass

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def declarations(self) -> list[dict[str, Any]]:
        return [tool.declaration() for tool in self._tools.values()]

    def parse(self, name: str, raw: str) -> tuple[Tool, ToolArgs] | str:
        """The tool and its validated arguments, or the error text for the model."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return f'[error: there is no tool named "{name}" — the tools are: {known}]'
        text = raw.strip() if raw else ""
        try:
            data = json.loads(text) if text else {}
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
