"""A child's session updates and permission requests, as this mm's own events (see the
package's docstring): the front ends and the model know mm's events, never ACP's."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import schema

from mm_tui.core import acp_meta as meta
from mm_tui.core.events import (
    Decision,
    Event,
    PermissionRequested,
    TextDelta,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolStatus,
)
from mm_tui.core.questions import Questions
from mm_tui.core.text import strip_agent

# The line mode's marks for a child's tool lines, as each tool's own `display` spells them.
DISPLAY_MARKS = {
    "bash": "🛠️  bash:",
    "read_file": "📄 read_file:",
    "write_file": "📝 write_file:",
    "edit_file": "✏️ edit_file:",
    "read_skill": "📖 read_skill:",
    "lsp": "🔎 lsp:",
    "fetch_content": "🌐 fetch_content:",
    "ask_agent": "🗣 ask_agent:",
}

Emit = Callable[[Event], None]


def _text_of(block: Any) -> str:
    text = getattr(block, "text", None)
    return text if isinstance(text, str) else ""


@dataclass
class _OpenTool:
    tool: str
    title: str
    started: float
    diff: str | None = None
    running: bool = False  # `ToolCallRunning` said


class AskCall:
    """One call's translation of the child's updates into events, its collected answer, and its
    watchdog: every update is a sign of life; a permission waiting for the person pauses it."""

    def __init__(
        self, name: str, emit: Emit, questions: Questions, yolo: bool, cwd: Path, timeout: float
    ) -> None:
        self.name = name
        self.cwd = cwd
        self.emit = emit
        self.questions = questions  # where the person's answers to the child's questions come
        self.yolo = yolo
        self.loop = asyncio.get_running_loop()
        self.answer: list[str] = []
        self.tools: dict[str, _OpenTool] = {}
        self.watchdog: asyncio.Timeout | None = None
        self.timeout = timeout  # seconds without a sign of life before the watchdog stops it
        self.waiting: set[str] = set()  # the ids of the child's calls that wait for the person

    # -- watchdog ---------------------------------------------------------------------------

    def alive(self) -> None:
        """A sign of life from the child: the watchdog starts counting again."""
        if self.watchdog is None or self.waiting:
            return
        with contextlib.suppress(RuntimeError):  # the call is already over
            self.watchdog.reschedule(self.loop.time() + self.timeout)

    def _pause(self) -> None:
        if self.watchdog is not None:
            with contextlib.suppress(RuntimeError):
                self.watchdog.reschedule(None)

    # -- updates ----------------------------------------------------------------------------

    def update(self, update: Any) -> None:
        self.alive()
        kind = getattr(update, "session_update", None)
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            # The text of an agent the child asked in turn (`_meta["mm"]["agent"]`) is not the
            # child's answer: it reaches the child as a tool result, and the child answers.
            if meta.get(update.field_meta).get("agent"):
                return
            text = _text_of(update.content)
            if not text:
                return
            if kind == "agent_message_chunk":
                self.answer.append(text)
                self.emit(TextDelta(text=text, agent=self.name))
            else:
                self.emit(ThoughtDelta(text=text, agent=self.name))
        elif kind == "tool_call":
            self._tool_started(update)
        elif kind == "tool_call_update":
            self._tool_updated(update)

    def _tool_started(self, update: Any) -> None:
        call_id = update.tool_call_id
        title = update.title or ""
        mine = meta.get(update.field_meta)
        tool = mine.get("tool")
        if not isinstance(tool, str) or not tool:
            tool = title.split("  ", 1)[0] if "  " in title else (update.kind or "tool")
        display = _display(tool, title)
        nested = mine.get("agent")  # a call of an agent the child asked: `<it> · <title>`
        if isinstance(nested, str) and nested:
            display = f"[{nested}] {_display(tool, strip_agent(title, nested))}"
        open_tool = _OpenTool(tool=tool, title=title, started=self.loop.time())
        open_tool.diff = _diff_of(update.content, self.cwd)
        self.tools[call_id] = open_tool
        raw = update.raw_input
        self.emit(
            ToolCallStarted(
                call_id=call_id,
                tool=tool,
                title=title,
                kind=update.kind or "other",
                arguments=dict(raw) if isinstance(raw, dict) else {},
                display=display,
                locations=tuple(loc.path for loc in update.locations or ()),
                agent=self.name,
                from_text=mine.get("from_text") is True,
            )
        )

    def _tool_updated(self, update: Any) -> None:
        call_id = update.tool_call_id
        open_tool = self.tools.get(call_id)
        if open_tool is None:
            return
        if update.title:
            open_tool.title = update.title
        diff = _diff_of(update.content, self.cwd)
        if diff:
            open_tool.diff = diff
        if update.status == "in_progress":
            self._running(call_id)
        if update.status not in ("completed", "failed"):
            return
        del self.tools[call_id]
        mine = meta.get(update.field_meta)
        status: ToolStatus = "ok" if update.status == "completed" else "error"
        if mine.get("status") in ("ok", "error", "rejected", "cancelled"):
            status = mine["status"]
        elapsed = mine.get("elapsed")
        if not isinstance(elapsed, int | float):
            elapsed = self.loop.time() - open_tool.started
        self.emit(
            ToolCallFinished(
                call_id=call_id,
                tool=open_tool.tool,
                status=status,
                output=_output_of(update),
                elapsed=float(elapsed),
                diff=open_tool.diff,
                agent=self.name,
            )
        )

    def close_tools(self) -> None:
        """The call is over: no tool line of the child may keep spinning."""
        for call_id, open_tool in list(self.tools.items()):
            self.emit(
                ToolCallFinished(
                    call_id=call_id,
                    tool=open_tool.tool,
                    status="cancelled",
                    output="",
                    elapsed=self.loop.time() - open_tool.started,
                    diff=open_tool.diff,
                    agent=self.name,
                )
            )
        self.tools.clear()

    # -- permissions ------------------------------------------------------------------------

    async def permission(self, tool_call: Any, options: list[Any]) -> Any:
        """The child asks: under yolo the answer is at once; else the person decides through
        this agent's front end (`PermissionRequested`, tagged with the agent's name)."""
        self.alive()
        if self.yolo:
            return _outcome(Decision.ALLOW_ONCE, options)
        call_id = tool_call.tool_call_id
        known = self.tools.get(call_id)
        title = tool_call.title or (known.title if known else "")
        tool = known.tool if known else (title.split("  ", 1)[0] or "tool")
        details = _diff_of(tool_call.content, self.cwd) or _text_contents(tool_call.content)
        if not details:
            raw = tool_call.raw_input
            command = raw.get("command") if isinstance(raw, dict) else None
            details = command if isinstance(command, str) else title
        future = self.questions.ask(self.name, call_id)
        self.waiting.add(call_id)
        self._pause()
        self.emit(
            PermissionRequested(
                call_id=call_id, tool=tool, title=title, details=details, agent=self.name
            )
        )
        try:
            decision = (await future).decision  # a child's rules are its own: a rule given
            # here for its call is not kept, and its box offers none (no pattern)
        except asyncio.CancelledError:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        finally:
            self.waiting.discard(call_id)
            self.questions.withdraw(self.name, call_id)
            self.alive()
        if decision.allows:  # the child says in_progress too; an agent that does not is heard
            self._running(call_id)
        return _outcome(decision, options)

    def _running(self, call_id: str) -> None:
        """The child's call runs: said once, whoever says it first (the child's in_progress, or
        the person's allowing answer)."""
        open_tool = self.tools.get(call_id)
        if open_tool is None or open_tool.running:
            return
        open_tool.running = True
        self.emit(ToolCallRunning(call_id=call_id, tool=open_tool.tool, agent=self.name))

    def withdraw(self) -> None:
        """The call ends: requests still waiting for the person are dropped."""
        for call_id in list(self.waiting):
            self.questions.withdraw(self.name, call_id)
        self.waiting.clear()


def _outcome(decision: Decision, options: list[Any]) -> schema.RequestPermissionResponse:
    wanted = meta.OPTION_KINDS[decision]
    chosen = next((o for o in options if o.kind == wanted), None)
    if chosen is None:  # an agent that offers fewer options: the nearest one
        prefix = "allow" if decision.allows else "reject"
        chosen = next((o for o in options if str(o.kind).startswith(prefix)), None)
    if chosen is None:
        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
    return schema.RequestPermissionResponse(
        outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen.option_id)
    )


def _display(tool: str, title: str) -> str:
    """The line mode's line for a child's call, as the tool itself would print it."""
    rest = title[len(tool) + 2 :] if title.startswith(f"{tool}  ") else title
    mark = DISPLAY_MARKS.get(tool, f"⚙ {tool}:")
    return f"{mark} {rest}".rstrip()


def _diff_of(content: Any, cwd: Path) -> str | None:
    """The diff contents the child sent (old and new text, one per hunk from mm) as one unified
    diff for the window to colour; the hunks' line numbers count from each hunk's start."""
    from mm_tui.tools.diff import compute_diff

    parts: list[str] = []
    for item in content or ():
        if getattr(item, "type", None) != "diff":
            continue
        path = Path(item.path)
        with contextlib.suppress(ValueError):
            path = path.relative_to(cwd)
        diff = compute_diff(item.old_text, item.new_text).unified(str(path).lstrip("/"))
        if parts:  # one header for the file
            diff = "".join(diff.splitlines(keepends=True)[2:])
        parts.append(diff)
    return "".join(parts) or None


def _text_contents(content: Any) -> str:
    return "".join(
        _text_of(item.content) for item in content or () if getattr(item, "type", None) == "content"
    )


def _output_of(update: Any) -> str:
    text = _text_contents(update.content)
    if not text and isinstance(update.raw_output, str):
        text = update.raw_output
    return text
