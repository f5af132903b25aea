"""The ask_agent tool: hand a task to another agent of mmConfigs and return its answer.

The agent runs as a child `mm -acp`, through an `AgentRunner` (core/asking.py) that start-up gives:
the ACP client's pool (mm_tui/acp_client/), made at the first call, so that an mm without
agents never loads the ACP package. `/ask` and `mm --ask` use the same machinery through
`AskAgentTool.ask` (see `Engine.run_ask`).

What the model gets and what the person sees differ on purpose: the answer streams into the
front end as the child writes it, so the tool line only says `<agent> answered (N characters)`,
while the model gets the answer itself, truncated to maxOutput. A call that did not finish gives
both what was answered and `[ask_agent: … stopped before finishing: <reason>]`, as the reference
(docs/tools.md) has it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mm_tui.config import AgentRef
from mm_tui.core.asking import (
    BUILTIN_TITLE,
    DEPTH_VAR,
    MAX_DEPTH,
    AgentEntry,
    AgentRunner,
    Asked,
    RunnerFactory,
    current_depth,
)
from mm_tui.core.files import resolve_path
from mm_tui.core.text import ellipsize, one_line
from mm_tui.tools import schemas
from mm_tui.tools.base import (
    Tool,
    ToolCancelled,
    ToolContext,
    ToolResult,
    lazy_args,
    truncate,
)

if TYPE_CHECKING:
    from mm_tui.tools.args import AskAgentArgs


DESCRIPTION = (
    "Hand a task to another agent and get its answer back as this tool's result. Each agent "
    "below is a separate mm with its own model, instructions and tools, working in the same "
    "folder as you. It sees nothing of this conversation unless with_context is true, so the "
    "prompt must be complete and self-contained: what to do, on which files, and what to answer "
    "with. Ask an agent when its purpose fits the task better than doing it yourself, or for a "
    "second opinion; do not ask for what one or two of your own tool calls can do. Its answer "
    "is text: check what it says before relying on it."
)

NO_RUNNER = "this mm was started without a way to start agents"

CONTEXT_HEAD = (
    "The conversation so far between a person and the agent asking you, for context "
    "(tool outputs left out):"
)
TASK_HEAD = "Your task:"


def first_line(text: str, limit: int | None = 80) -> str:
    """The first non-empty line of a prompt (shortened to `limit`), for titles and line mode."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if limit is None else ellipsize(line, limit)


def split_ask(rest: str) -> tuple[str, str] | None:
    """What follows `/ask`: (AGENT, request), None when no agent is named."""
    parts = rest.strip().split(None, 1)
    if not parts:
        return None
    return parts[0], (parts[1].strip() if len(parts) > 1 else "")


def ask_usage(tool: Tool | None) -> str:
    """What `/ask` without an agent says: how to use it, and the agents there are (`tool`: the
    registry's ask_agent, None when no agent is configured)."""
    names = ", ".join(sorted(tool.agents)) if isinstance(tool, AskAgentTool) else "none configured"
    return f"usage: /ask AGENT request — hands the request to an agent of mmConfigs ({names})"


def context_text(history: Sequence[Mapping[str, Any]], limit: int) -> str:
    """The conversation for `with_context`: questions, answers and one line per tool call,
    never a tool's output nor the system prompt; at most `limit` characters, the newest kept
    (cut at a line start, so that no line arrives half)."""
    lines: list[str] = []
    for message in history:
        role = message.get("role")
        content = message.get("content")
        if role == "user" and content:
            lines.append(f"User: {content}")
        elif role == "assistant":
            if content:
                lines.append(f"Assistant: {content}")
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                arguments = one_line(str(function.get("arguments") or ""), 200)
                lines.append(f"Tool call: {function.get('name')} {arguments}".rstrip())
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    tail = text[len(text) - limit :]
    cut = tail.find("\n")
    return tail[cut + 1 :] if cut >= 0 else tail


def agent_file(ref: AgentRef, cwd: Path) -> Path:
    """An entry's agent file; a relative one is taken from the working folder."""
    return resolve_path(ref.config, cwd)


class AskAgentTool(Tool):
    name = "ask_agent"
    kind = "other"
    Args = lazy_args("AskAgentArgs")
    parameters_schema = schemas.ASK_AGENT

    def __init__(
        self,
        agents: Mapping[str, AgentRef],
        cwd: Path,
        *,
        command: Sequence[str] | None = None,
        runners: RunnerFactory | None = None,
    ) -> None:
        """`command` replaces `python -m mm_tui.cli` as the child's program (tests wrap it);
        `runners` makes the runner at the first call (start-up gives the ACP client's pool;
        without one, a call says that this mm cannot start agents)."""
        self.agents = dict(agents)
        self.configs = {name: agent_file(ref, cwd) for name, ref in self.agents.items()}
        self.command = list(command) if command else None
        self.runners = runners
        self._purposes = {name: self._purpose(name) for name in self.agents}
        self._pool: AgentRunner | None = None

    def _purpose(self, name: str) -> str:
        description = self.agents[name].description
        if description and description.strip():
            return " ".join(description.split())
        title = _agent_file_title(self.configs[name])
        if title and title != BUILTIN_TITLE:
            return title
        return "(no description)"

    # -- declaration and display -----------------------------------------------------------

    def description(self) -> str:
        lines = [f"  {name} — {self._purposes[name]}" for name in sorted(self.agents)]
        return DESCRIPTION + "\n\nAgents:\n" + "\n".join(lines)

    def short_description(self) -> str:
        return f"Hand a task to another agent: {', '.join(sorted(self.agents))}."

    def title(self, args: AskAgentArgs) -> str:
        return f"{args.agent} — {first_line(args.prompt)}"

    def display(self, args: AskAgentArgs) -> str:
        """Empty: line mode prints the `🗣 ask_agent:` line when the agent starts, once it has
        said which model and provider it runs on."""
        return ""

    def needs_permission(self, args: Any) -> bool:
        return True

    async def permission_details(self, args: AskAgentArgs, ctx: ToolContext) -> str:
        sent = " (with this conversation)" if args.with_context else ""
        return f"ask {args.agent}{sent}:\n{args.prompt}"

    # -- the call --------------------------------------------------------------------------

    def check(self, agent: str, prompt: str) -> str | None:
        """The refusals docs/tools.md quotes, before any process starts."""
        if agent not in self.agents:
            return (
                f'[ask_agent: unknown agent "{agent}" — agents: {", ".join(sorted(self.agents))}]'
            )
        if not prompt.strip():
            return f"[ask_agent: the prompt is empty — say what {agent} must do]"
        depth = current_depth()
        if depth >= MAX_DEPTH:
            return (
                f"[ask_agent: cannot ask {agent}: asked agents nest at most {MAX_DEPTH} levels "
                f"deep and this agent is already at level {depth} ({DEPTH_VAR}={depth}) — do "
                "the task yourself]"
            )
        return None

    async def ask(
        self, agent: str, prompt: str, ctx: ToolContext, *, with_context: bool = False
    ) -> Asked:
        """One call to `agent` through its child; the child's events go to `ctx.emit`."""
        refusal = self.check(agent, prompt)
        if refusal is not None:
            return Asked(name=agent, error=refusal)
        if self._pool is None:
            if self.runners is None:
                return Asked(name=agent, error=f"[ask_agent: {agent} failed: {NO_RUNNER}]")
            self._pool = self.runners(
                {
                    name: AgentEntry(name, self.configs[name], ref.yolo)
                    for name, ref in self.agents.items()
                },
                self.command,
            )
        text = prompt
        if with_context:
            conversation = context_text(ctx.history, ctx.settings.max_output)
            if conversation:
                text = f"{CONTEXT_HEAD}\n\n{conversation}\n\n{TASK_HEAD}\n\n{prompt}"
        entry_yolo = self.agents[agent].yolo
        return await self._pool.ask(
            agent,
            text,
            shown_prompt=prompt,
            cwd=ctx.cwd,
            emit=ctx.emit,
            questions=ctx.questions,
            asked_by=ctx.settings.acp.title,
            yolo=ctx.settings.yolo if entry_yolo is None else entry_yolo,
            watchdog=ctx.settings.watchdog_timeout,
        )

    @staticmethod
    def result_text(asked: Asked, max_output: int) -> str:
        """What the model gets: the answer truncated to maxOutput, then the error if any."""
        answer = truncate(asked.answer, max_output) if asked.answer else ""
        if asked.error is None:
            return answer
        if not answer:
            return asked.error
        return f"{answer}{'' if answer.endswith(chr(10)) else chr(10)}{asked.error}"

    @staticmethod
    def shown_text(asked: Asked) -> str | None:
        """What the tool line shows: the answer already streamed, so only how long it was."""
        if not asked.answer:
            return None  # the error alone: the person has not seen it yet
        shown = f"{asked.name} answered ({len(asked.answer)} characters)"
        return shown if asked.error is None else f"{shown}\n{asked.error}"

    async def run(self, args: AskAgentArgs, ctx: ToolContext) -> ToolResult:
        asked = await self.ask(args.agent, args.prompt, ctx, with_context=args.with_context)
        output = self.result_text(asked, ctx.settings.max_output)
        if asked.cancelled:
            raise ToolCancelled(output, display=self.shown_text(asked))
        return ToolResult(
            output=output,
            status="ok" if asked.error is None else "error",
            display=self.shown_text(asked),
        )

    async def aclose(self) -> None:
        """mm exits: every child it started stops."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.release()

    def pid(self, agent: str) -> int | None:
        """The process id of an agent's running child, None when there is none."""
        if self._pool is None:
            return None
        child = self._pool.children.get(agent)
        return child.pid if child is not None else None


def _agent_file_title(path: Path) -> str | None:
    """The agent file's own acp.title (read directly: no other configuration layer)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    section = data.get("acp") if isinstance(data, dict) else None
    title = section.get("title") if isinstance(section, dict) else None
    return title if isinstance(title, str) and title.strip() else None
