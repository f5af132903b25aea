"""The built-in tools' arguments: each tool writes out the JSON schema it declares, and its
pydantic class (tools/args.py, loaded at the first call) makes that same schema, so what the
model is told and what is checked cannot drift apart; neither making the tools nor declaring them
imports pydantic."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from mm_tui.tools.ask_agent import AskAgentTool
from mm_tui.tools.base import Tool
from mm_tui.tools.bash import BashTool
from mm_tui.tools.edit_file import EditFileTool
from mm_tui.tools.read_file import ReadFileTool
from mm_tui.tools.read_skill import ReadSkillTool
from mm_tui.tools.todo import TodoTool
from mm_tui.tools.write_file import WriteFileTool

BUILT_IN = [
    BashTool,
    ReadFileTool,
    WriteFileTool,
    EditFileTool,
    ReadSkillTool,
    AskAgentTool,
    TodoTool,
]


def pydantic_schema(tool: type[Tool]) -> dict[str, Any]:
    """What `Tool.parameters` made of `Args` before the schemas were written out: pydantic's
    schema without its titles, a nested object written in place of its `$ref`."""
    schema = tool.Args.model_json_schema()
    defs = schema.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return clean(defs[ref.removeprefix("#/$defs/")])
            return {k: clean(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    return clean(schema)


@pytest.mark.parametrize("tool", BUILT_IN, ids=lambda tool: tool.name)
def test_the_declared_schema_is_the_one_pydantic_makes_of_the_args(tool: type[Tool]) -> None:
    declared = tool.parameters(tool.__new__(tool))
    # the same text, keys in the same order: what the model reads, and the context meter counts
    assert json.dumps(declared) == json.dumps(pydantic_schema(tool))


def test_a_tools_args_is_its_class_in_args_py() -> None:
    from mm_tui.tools.args import BashArgs

    assert BashTool.Args is BashArgs and BashTool().Args is BashArgs


def test_making_and_declaring_the_tools_imports_no_pydantic() -> None:
    """A call's arguments are validated with pydantic; the tools are made and declared (the
    window's context meter measures the declarations at ready) without it."""
    code = (
        "import sys; from pathlib import Path; "
        "from mm_tui.config import load_settings; from mm_tui.tools.registry import ToolRegistry; "
        "settings = load_settings(cwd=Path.cwd(), home=Path.cwd(), environ={}); "
        "registry = ToolRegistry.from_settings(settings, Path.cwd()); "
        "assert registry.declarations(); "
        "before = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')); "
        "registry.parse('bash', '{\"command\": \"ls\"}'); "
        "print(before, 'pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] True"
