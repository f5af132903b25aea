"""What every tool is: its declaration to the model, its arguments, how it is shown, and its run.

A tool never raises for an ordinary failure: it returns the failure text as its output, and that
text goes to the model. Only cancellation escapes, as `ToolCancelled` (carrying whatever output
was collected) or as a plain `asyncio.CancelledError`.
"""

from __future__ import annotations

import copy
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from mm_tui.config import Settings
from mm_tui.core.events import Event
from mm_tui.core.files import resolve_path
from mm_tui.core.frozen import mutable
from mm_tui.core.questions import Questions

if TYPE_CHECKING:
    from mm_tui.tools.args import ToolArgs


class _LazyArgs:
    """A tool's `Args`, the pydantic model of its arguments in args.py, made at the first use."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type) -> type[ToolArgs]:
        from mm_tui.tools import args

        return getattr(args, self.name)


def lazy_args(name: str) -> type[ToolArgs]:
    """`Args = lazy_args("BashArgs")`: the class of args.py named so, imported when first asked
    for (see args.py: making the tools does not import pydantic)."""
    return cast(Any, _LazyArgs(name))


@mutable
class ToolContext:
    cwd: Path
    settings: Settings
    emit: Callable[[Event], None] = field(default=lambda event: None)
    # The conversation as the turn started (its question included, none of its tool calls):
    # what ask_agent's with_context sends along.
    history: Sequence[dict[str, Any]] = ()
    call_id: str = ""  # the call being run: what a tool's own events (`ToolProgress`) name
    # Where an asked agent's permission questions wait for the person's answer (the engine's,
    # so that `Engine.answer` reaches them).
    questions: Questions = field(default_factory=Questions)

    def resolve(self, path: str) -> Path:
        """A path the model gave, relative to the working folder unless absolute."""
        return resolve_path(path, self.cwd)

    def location(self, path: str) -> str:
        """A path the model gave, absolute (`..` folded, no link followed): what a call reports
        it touches, for ACP."""
        return os.path.abspath(self.resolve(path))


@mutable
class ToolResult:
    output: str
    status: Literal["ok", "error"] = "ok"
    diff: str | None = None  # a unified diff, for the tools that change files
    # What the front ends show instead of `output`, when the person has already seen the
    # output (ask_agent's answer streamed as it came: the line says `<agent> answered (N …)`).
    display: str | None = None


class ToolCancelled(Exception):  # noqa: N818 - it is a signal, not an error
    """Raised by a tool that was cancelled after it collected some output; `output` already ends
    with the tool's cancellation marker (`[error: cancelled]`, or ask_agent's own). `display`
    as in `ToolResult`."""

    def __init__(self, output: str, display: str | None = None):
        super().__init__(output)
        self.output = output
        self.display = display


CANCELLED = "[error: cancelled]"


class NothingToAsk(Exception):  # noqa: N818 - it is a signal, not an error
    """Raised by `permission_details` when the call can change nothing (its preview already
    fails, or changes nothing): the engine runs it without asking, and the model gets the same
    failure the preview met. Asking a person to approve an edit that cannot apply wastes their
    attention and teaches them to press `a` without reading."""


def truncate(text: str, limit: int) -> str:
    """Keep the first `limit` characters; say how much was cut so the model knows it saw a part."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... output truncated: {len(text) - limit} more characters ...]"


class Tool(ABC):
    name: str  # a class attribute of each built-in tool; an MCP tool's own (`<server>__<tool>`)
    kind: ClassVar[str] = "other"  # the ACP kind: execute, read, edit, fetch, think, other
    counter: ClassVar[str | None] = None  # the Counters field this tool's responses count in
    Args: ClassVar[type[ToolArgs]]
    # The JSON schema of the arguments as the tool declares it, written out for the built-in
    # tools (schemas.py): their declarations need no pydantic. None: made from `Args`.
    parameters_schema: ClassVar[dict[str, Any] | None] = None

    @abstractmethod
    def description(self) -> str: ...

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments, without pydantic's titles (noise for a model)."""
        if self.parameters_schema is not None:  # a copy: the caller may change its own
            return copy.deepcopy(self.parameters_schema)
        schema = self.Args.model_json_schema()

        def strip(node: Any) -> Any:
            if isinstance(node, dict):
                return {k: strip(v) for k, v in node.items() if k != "title"}
            if isinstance(node, list):
                return [strip(v) for v in node]
            return node

        return strip(schema)

    def declaration(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description(),
                "parameters": self.parameters(),
            },
        }

    def short_description(self) -> str:
        """The description's first sentence: what a small window has room for. A tool whose
        description lists what it offers (skills, agents) keeps the names."""
        from mm_tui.tools.short_forms import first_sentence

        return first_sentence(self.description())

    def short_declaration(self) -> dict[str, Any]:
        """The declaration in its short form (tools/short_forms.py)."""
        from mm_tui.tools.short_forms import short_declaration

        return short_declaration(self.name, self.short_description(), self.parameters())

    @abstractmethod
    def title(self, args: Any) -> str:
        """What the call does in a few words: the command, the path. Shown as `‣ <tool>  <title>`."""

    def heading(self, args: Any) -> str:
        """The call's line and the permission box's title, `<tool>  <title>` (`bash  ls`); an
        MCP tool names its server there (`files: read  notes.txt`)."""
        return f"{self.name}  {self.title(args)}"

    @abstractmethod
    def display(self, args: Any) -> str:
        """The terminal-display line docs/tools.md gives, e.g. `🛠️  bash: <command>`."""

    def kind_for(self, args: Any) -> str:
        """The ACP kind of this call; a tool whose calls differ (lsp: rename edits, the rest
        reads) overrides it."""
        return self.kind

    def needs_permission(self, args: Any) -> bool:
        """Whether this call asks before running when yolo is off."""
        return False

    async def permission_details(self, args: Any, ctx: ToolContext) -> str:
        """What the call will do, for the permission prompt: the command, or the diff."""
        return self.title(args)

    def rejection(self) -> str:
        return f"[{self.name} rejected by the user]"

    def locations(self, args: Any, ctx: ToolContext) -> tuple[str, ...]:
        """Absolute paths the call touches, for ACP."""
        return ()

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolResult: ...

    async def aclose(self) -> None:
        """Stop whatever the tool keeps between calls (a language server, a child agent)."""
        return None
