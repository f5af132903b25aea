"""The todo tool: the model keeps a short list of the task's steps and their states, which the
person sees (the window under the header, line mode as a short block, ACP as `plan` updates).

The model sends the whole list every time (no ids to keep in step, which small models get wrong);
the result repeats it in a few lines, so that the model reads back what it wrote. The list lives
in the conversation itself: the last todo call of a resumed session is the list again
(`last_todo_list`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mm_tui.core.events import StepState, TodoStep, TodoUpdated
from mm_tui.core.text import one_line
from mm_tui.tools import schemas
from mm_tui.tools.base import Tool, ToolContext, ToolResult, lazy_args

if TYPE_CHECKING:
    from mm_tui.tools.args import TodoArgs

MAX_STEPS = 20
MAX_STEP = 200  # characters of a step, as shown and sent back
MARKS: dict[str, str] = {"done": "[x]", "in_progress": "[>]", "pending": "[ ]"}
DESCRIPTION = (
    "Keep the list of steps of a task of several steps, shown to the person: send the whole "
    "list when you plan the work and again each time a step starts or ends."
)


def steps_of(raw: Iterable[Mapping[str, Any]]) -> tuple[TodoStep, ...]:
    """The steps as the front ends show them: each on one line, cut to MAX_STEP."""
    return tuple(
        TodoStep(one_line(str(s.get("step", "")), MAX_STEP), _state(s.get("state"))) for s in raw
    )


def _state(value: Any) -> StepState:
    return value if value in ("pending", "in_progress", "done") else "pending"


def listed(steps: tuple[TodoStep, ...]) -> str:
    """The list as the model reads it back."""
    return "\n".join(f"{MARKS[s.state]} {s.step}" for s in steps)


def summary(steps: tuple[TodoStep, ...]) -> str:
    """`2/5 done · now: <step>`: the call's line, and the folded list."""
    done = sum(s.state == "done" for s in steps)
    now = next((s.step for s in steps if s.state == "in_progress"), None)
    return f"{done}/{len(steps)} done" + (f" · now: {now}" if now else "")


def last_todo_list(messages: Iterable[Mapping[str, Any]]) -> tuple[TodoStep, ...] | None:
    """The list of the last todo call in `messages` (the history, or a journal's messages), or
    None when the model never wrote one."""
    found: tuple[TodoStep, ...] | None = None
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or function.get("name") != TodoTool.name:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except (json.JSONDecodeError, TypeError):
                continue
            steps = arguments.get("steps") if isinstance(arguments, dict) else None
            if isinstance(steps, list) and all(isinstance(s, dict) for s in steps):
                found = steps_of(steps[:MAX_STEPS])
    return found


class TodoTool(Tool):
    name = "todo"
    kind = "think"
    Args = lazy_args("TodoArgs")
    parameters_schema = schemas.TODO

    def description(self) -> str:
        return DESCRIPTION

    def title(self, args: TodoArgs) -> str:
        return summary(steps_of(s.model_dump() for s in args.steps))

    def display(self, args: TodoArgs) -> str:
        return f"🛠️  todo: {self.title(args)}"

    async def run(self, args: TodoArgs, ctx: ToolContext) -> ToolResult:
        if len(args.steps) > MAX_STEPS:
            return ToolResult(
                f"[error: {len(args.steps)} steps — keep the list to {MAX_STEPS} at most]",
                status="error",
            )
        steps = steps_of(s.model_dump() for s in args.steps)
        if sum(s.state == "in_progress" for s in steps) > 1:
            return ToolResult(
                "[error: more than one step is in_progress — mark one, the one you do now]",
                status="error",
            )
        ctx.emit(TodoUpdated(steps=steps))
        return ToolResult(listed(steps) or "(the list is empty)", display=summary(steps))
