"""The events tests write by hand most, made as the engine makes them, for the tests that feed a
front end (the transcript store, the window, line mode's printer) without a model:

    app.main.emit(tool_started("bash", {"command": "ls"}))  # ‣ bash  ls
    app.main.emit(text_delta("Done."))

A call's arguments are validated and dumped by the tool's own class, and its title (`bash  ls`),
ACP kind and display line (`🛠️  bash: ls`) are what the built-in tool makes of them
(`Tool.heading`, `kind_for`, `display`), as `engine/tool_calls.py` does; a call that no tool
would make (a title without its arguments) is written as the event itself.
"""

from __future__ import annotations

from typing import Any

from mm_tui.core.events import TextDelta, ToolCallStarted
from mm_tui.tools.ask_agent import AskAgentTool
from mm_tui.tools.base import Tool
from mm_tui.tools.bash import BashTool
from mm_tui.tools.edit_file import EditFileTool
from mm_tui.tools.fetch.tool import FetchContentTool
from mm_tui.tools.read_file import ReadFileTool
from mm_tui.tools.read_skill import ReadSkillTool
from mm_tui.tools.write_file import WriteFileTool

# One of each built-in tool whose calls tests write, made without its state (its agents, its
# skills, its timeout): the methods that name a call read only the call's arguments.
TOOLS: dict[str, Tool] = {
    cls.name: cls.__new__(cls)
    for cls in (
        AskAgentTool,
        BashTool,
        EditFileTool,
        FetchContentTool,
        ReadFileTool,
        ReadSkillTool,
        WriteFileTool,
    )
}


def text_delta(text: str, *, agent: str | None = None) -> TextDelta:
    """The next piece of the answer's text (of the asked agent `agent`, when given)."""
    return TextDelta(text=text, agent=agent)


def tool_started(
    tool: str = "bash",
    arguments: dict[str, Any] | None = None,
    call_id: str = "c1",
    *,
    agent: str | None = None,
) -> ToolCallStarted:
    """A call of a built-in tool (by default `bash ls`) as the engine starts it: its arguments
    as the tool's class reads them, its title, kind and display line as the tool makes them. No
    locations: no test that writes a call by hand reads them."""
    made = TOOLS[tool]
    args = made.Args.model_validate({"command": "ls"} if arguments is None else arguments)
    return ToolCallStarted(
        call_id=call_id,
        tool=tool,
        title=made.heading(args),
        kind=made.kind_for(args),
        arguments=args.model_dump(),
        display=made.display(args),
        agent=agent,
    )
