"""The arguments of the built-in tools: pydantic models, which validate a model's call of a
tool (`ToolRegistry.parse`) and give the JSON schema of its declaration (`Tool.parameters`).

They live here, apart from their tools, so that making the tools and declaring them does not
import pydantic on the way to ready (see docs/performance.md): a tool names its class
(`Args = lazy_args("BashArgs")`), which this module makes at the first call (in window mode,
just after ready, in a thread: `mm_tui.tools.prepare`), and declares the JSON schema written out
in schemas.py (`Tool.parameters_schema`), from which the fields here take their descriptions;
tests/tools/test_tool_args.py checks that pydantic makes that same schema of them."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mm_tui.tools.schemas import (
    ASK_AGENT,
    BASH,
    EDIT_FILE,
    FIND_TOOL,
    READ_FILE,
    READ_SKILL,
    TODO,
    WRITE_FILE,
)


class ToolArgs(BaseModel):
    """Base of every tool's arguments. Extra keys a model invents are ignored, not refused."""

    model_config = ConfigDict(extra="ignore")


def _field(schema: dict[str, Any], name: str, **options: Any) -> Any:
    """A field as `schema` (a tool's, or its part for a nested object) declares it."""
    return Field(description=schema["properties"][name]["description"], **options)


def _array_sent_as_text(value: Any) -> Any:
    """Some models send an array as a JSON string: read it rather than refuse the call."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value  # refused by the validation, with its message
    return value


# -- bash -------------------------------------------------------------------------------------------


class BashArgs(ToolArgs):
    command: str = _field(BASH, "command")


# -- read_file --------------------------------------------------------------------------------------


class ReadFileArgs(ToolArgs):
    path: str = _field(READ_FILE, "path")
    start: int = _field(READ_FILE, "start", default=0)
    end: int = _field(READ_FILE, "end", default=0)
    numbered: bool = _field(READ_FILE, "numbered", default=False)


# -- write_file -------------------------------------------------------------------------------------


class WriteFileArgs(ToolArgs):
    path: str = _field(WRITE_FILE, "path")
    content: str = _field(WRITE_FILE, "content")


# -- edit_file --------------------------------------------------------------------------------------

_ONE_EDIT = EDIT_FILE["properties"]["edits"]["items"]


class Edit(BaseModel):
    model_config = ConfigDict(extra="ignore")

    old: str = _field(_ONE_EDIT, "old")
    new: str = _field(_ONE_EDIT, "new")


class EditFileArgs(ToolArgs):
    path: str = _field(EDIT_FILE, "path")
    edits: list[Edit] = _field(EDIT_FILE, "edits")
    dry_run: bool = _field(EDIT_FILE, "dry_run", default=False)

    @field_validator("edits", mode="before")
    @classmethod
    def _edits_sent_as_text(cls, value: Any) -> Any:
        return _array_sent_as_text(value)


# -- read_skill -------------------------------------------------------------------------------------


class ReadSkillArgs(ToolArgs):
    name: str = _field(READ_SKILL, "name")


# -- ask_agent --------------------------------------------------------------------------------------


class AskAgentArgs(ToolArgs):
    agent: str = _field(ASK_AGENT, "agent")
    prompt: str = _field(ASK_AGENT, "prompt")
    with_context: bool = _field(ASK_AGENT, "with_context", default=False)


# -- todo -------------------------------------------------------------------------------------------

_ONE_STEP = TODO["properties"]["steps"]["items"]


class Step(BaseModel):
    model_config = ConfigDict(extra="ignore")

    step: str = _field(_ONE_STEP, "step")
    state: Literal["pending", "in_progress", "done"] = _field(_ONE_STEP, "state")


class TodoArgs(ToolArgs):
    steps: list[Step] = _field(TODO, "steps")

    @field_validator("steps", mode="before")
    @classmethod
    def _steps_sent_as_text(cls, value: Any) -> Any:
        return _array_sent_as_text(value)


# -- find_tool --------------------------------------------------------------------------------------


class FindToolArgs(ToolArgs):
    query: str = _field(FIND_TOOL, "query")
