"""How line mode, `mm -p` and `mm --ask` print the engine's events (`LinePrinter`), with Rich,
as the terminal-display lines of the reference (docs/tools.md): `🛠️  bash: …`, the `🔐`
prompt, the recap, and `🗣 ask_agent: …` above what an asked agent writes. What mm does to keep
the conversation in the model's context (outputs shortened, the history compacted) is a dim line
of its own.

A diff (the permission prompt's of edit_file and write_file, and the numbered diff in the
preview of their result) is coloured when the terminal has colours: added lines green, removed
red, hunk headers cyan, file headers bold; the text stays the same.

Every text that comes from a model, a tool, a server, a page or a file goes through
`safe_display` before it is printed (commands, paths and the permission question through its
`exact` form): an escape sequence shows as `\\x1b[…`, it never reaches the terminal.

The REPL that reads requests and answers is `repl.py`; the one-shot runs `one_shot.py`; the
trust question before anything starts `trust.py`; line editing and the history `history.py`."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import assert_never

from rich.console import Console
from rich.text import Text

from mm_tui.core.events import (
    FROM_TEXT,
    AgentFinished,
    AgentStarted,
    ComposingToolCall,
    ContextUsage,
    EngineError,
    Event,
    FilesRestored,
    HistoryCompacted,
    HistoryShortened,
    ModeChanged,
    ModelChanged,
    ModelProbed,
    ModelRetrying,
    PermissionRequested,
    RuleAdded,
    ServerFinishing,
    ServerState,
    TextDelta,
    Thinking,
    ThoughtDelta,
    TodoUpdated,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolProgress,
    TurnEnded,
    TurnStarted,
)
from mm_tui.core.terminal_text import safe_display
from mm_tui.core.text import agent_header, agent_title
from mm_tui.engine.turn import Engine
from mm_tui.line.stream import StreamPrinter

# Tools whose output is not echoed: a skill is for the model, not the screen.
SILENT_TOOLS = {"read_skill"}

DETAILS_LINES = 40  # lines of a permission request's details printed above the question


def preview(output: str, lines: int, diff: bool = False) -> list[str]:
    """Up to `lines` lines of a tool's output, or `(no output)`, safe to print. Split at
    newlines only (`splitlines` would also split at, and so hide, a lone CR, a form feed and
    the other breaks `safe_display` shows). `diff`: a result whose lines after its headline
    are a numbered diff: the lines shown start one line before the first change, so that the
    `-`/`+` lines are not cut for the context above them."""
    output = safe_display(output).rstrip("\n")
    shown = output.split("\n") if output else []
    if not shown:
        return ["(no output)"]
    if len(shown) <= lines:
        return shown
    if diff:
        changes = [i for i, line in enumerate(shown) if _is_change(line)]
        if changes:
            start = max(1, changes[0] - 1)  # the headline, then from just above the change
            kept = [shown[0], *shown[start : start + lines - 1]]
            rest = len(shown) - len(kept)
            return kept + [f"… {rest} more line{'s' if rest != 1 else ''}"]
    rest = len(shown) - lines
    return shown[:lines] + [f"… {rest} more line{'s' if rest != 1 else ''}"]


def _is_change(line: str) -> bool:
    match = NUMBERED_LINE.match(line)
    return match is not None and match[1] != " "


DIFF_ADDED = "green"
DIFF_REMOVED = "red"
DIFF_HUNK = "cyan"
DIFF_FILE = "bold"
# A line of diff.py's numbered diff (the tool result's preview): `  12 + │ text`.
NUMBERED_LINE = re.compile(r"\s*\d+ ([-+ ]) │ ")


def is_unified_diff(text: str) -> bool:
    """Whether a permission request's details are a unified diff (edit_file, write_file) rather
    than a command or a message, which must never be coloured as one."""
    lines = text.split("\n", 2)
    return len(lines) >= 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ ")


def unified_diff_styles(lines: list[str], plain: str) -> list[str]:
    """The style of each line of a unified diff; `plain` for context lines and the rest, so the
    lines that are not changes look as they did before diffs had colours."""
    from mm_tui.tools.diff import unified_line_kinds

    styles = {"hunk": DIFF_HUNK, "header": DIFF_FILE, "added": DIFF_ADDED, "removed": DIFF_REMOVED}
    return [styles.get(kind, plain) for kind in unified_line_kinds(lines)]


def numbered_diff_style(line: str, plain: str) -> str:
    """The style of one line of a tool result's numbered diff (its headline and the `… N more
    lines` mark keep `plain`)."""
    if line.startswith("@@"):
        return DIFF_HUNK
    match = NUMBERED_LINE.match(line)
    if match is None or match[1] == " ":
        return plain
    return DIFF_ADDED if match[1] == "+" else DIFF_REMOVED


def has_colour(console: Console) -> bool:
    """Whether diff colours can show: not on a console without colours (a pipe, TERM=dumb), and
    not under NO_COLOR, where the lines keep exactly the styles they had before."""
    return console.color_system is not None and not console.no_color


class LinePrinter:
    """Turns events into printed lines. `ask` answers a permission request (line mode reads the
    keyboard; `-p` rejects)."""

    def __init__(
        self,
        console: Console,
        preview_lines: int,
        ask: Callable[[PermissionRequested], None],
    ) -> None:
        self.console = console
        self.preview_lines = preview_lines
        self.ask = ask
        # ("text" or "thought", the agent writing it) while one streams: an asked agent's
        # answer and this agent's own never share a line
        self._mode: tuple[str, str | None] | None = None
        self.stream = StreamPrinter(console)
        self.last_end: TurnEnded | None = None

    def _close_stream(self) -> None:
        self.stream.close()
        self._mode = None

    def __call__(self, event: Event) -> None:
        c = self.console
        if isinstance(event, TextDelta):
            if self._mode != ("text", event.agent):
                self._close_stream()
                self._mode = ("text", event.agent)
                self.stream.start(markdown=True)
            self.stream.write(event.text)
            return
        if isinstance(event, ThoughtDelta):
            if self._mode != ("thought", event.agent):
                self._close_stream()
                self._mode = ("thought", event.agent)
                self.stream.start(style="dim italic")
            self.stream.write(event.text)
            return
        self._close_stream()
        prefix = f"[{safe_display(event.agent)}] " if event.agent else ""
        match event:
            case ToolCallStarted():
                if event.display:  # ask_agent has none: its line comes with AgentStarted
                    line = Text(prefix + safe_display(event.display, exact=True))
                    if event.from_text:
                        line.append(f"  · {FROM_TEXT}", style="dim")
                    c.print(line)
            case PermissionRequested():
                if event.details and event.details not in event.title:
                    lines = safe_display(event.details, exact=True).rstrip("\n").split("\n")
                    cut = len(lines) - DETAILS_LINES
                    lines = lines[:DETAILS_LINES]
                    if has_colour(c) and is_unified_diff(event.details):
                        styles = unified_diff_styles(lines, "dim")
                    else:
                        styles = ["dim"] * len(lines)
                    for line, style in zip(lines, styles, strict=True):
                        c.print(Text("    " + line, style=style))
                    if cut > 0:  # never cut silently: what is below may be what matters
                        more = f"… {cut} more line{'s' if cut != 1 else ''} not shown"
                        c.print(Text(f"    {more}", style="yellow"))
                self.ask(event)
            case ToolCallFinished():
                if event.tool in SILENT_TOOLS and event.status == "ok":
                    return
                style = "dim" if event.status == "ok" else "dim red"
                diff = bool(event.diff) and has_colour(c)
                for line in preview(event.output, self.preview_lines, bool(event.diff)):
                    line_style = numbered_diff_style(line, style) if diff else style
                    c.print(Text("    " + line, style=line_style))
            case EngineError():
                say(c, prefix + safe_display(event.message), "bold red")
            case AgentStarted():
                if event.asked_by is None:
                    name, rest = agent_header(event.title, event.model, event.provider)
                    c.print(Text.assemble((safe_display(name), "bold"), safe_display(rest)))
                else:
                    c.print(Text(safe_display(asked_line(event)), style="bold"))
            case HistoryShortened():
                say(c, prefix + safe_display(event.message), "dim")
            case HistoryCompacted():
                say(c, prefix + safe_display(event.title), "dim")
            case ModelChanged() | ModeChanged() | ModelProbed():
                say(c, prefix + safe_display(event.text), "dim")
            case TodoUpdated():
                from mm_tui.tools.todo import MARKS

                for step in event.steps:
                    style = (
                        "dim" if step.state == "done" else "bold" if step.state != "pending" else ""
                    )
                    say(c, f"{prefix}  {MARKS[step.state]} {safe_display(step.step)}", style)
            case FilesRestored():
                say(c, prefix + safe_display(event.text), "dim")
            case RuleAdded():
                say(c, prefix + safe_display(event.text), "yellow" if event.warning else "dim")
            case ModelRetrying():
                say(c, prefix + safe_display(event.text), "yellow")
            case ServerFinishing():  # the wait that follows would look like a hang
                say(c, prefix + safe_display(event.text), "yellow")
            case TurnEnded():
                if event.agent is None:
                    self.last_end = event
                    c.print(Text(safe_display(event.recap(token_detail=True)), style="cyan"))
            case ServerState():
                pass  # a dead server is said by the retries and the error; no header here
            case AgentFinished():
                pass  # the stream it wrote is closed above
            case ContextUsage():
                pass  # the recap that ends the turn says how full the context is
            case (
                TurnStarted()
                | Thinking()
                | ComposingToolCall()
                | ToolCallRunning()
                | ToolProgress()
            ):
                pass  # the request was typed on the line above; no spinner in line mode
            case _:
                assert_never(event)


def asked_line(event: AgentStarted) -> str:
    """`🗣 ask_agent: <agent> (<provider>/<model>) — <first line of the prompt>`."""
    from mm_tui.tools.ask_agent import first_line

    return (
        f"🗣 ask_agent: {event.name} ({event.provider}/{event.model}) — "
        f"{first_line(event.prompt, limit=None)}"
    )


def permission_title(request: PermissionRequested) -> str:
    """The call a permission request is about, safe to print with every control character
    visible (`exact`: the question must show what will run); an asked agent's calls name the
    agent."""
    return safe_display(agent_title(request.agent, request.title), exact=True)


def say(console: Console, text: str, style: str) -> None:
    """A sentence for the person (a note, an error, a notice): on a terminal it wraps between
    words, as the answer does; a pipe gets it on one line. Commands and outputs are printed
    as they are, never reflowed."""
    console.print(Text(text, style=style), soft_wrap=not console.is_terminal)


def banner(console: Console, engine: Engine, notes: list[str]) -> None:
    client = engine.client
    name, rest = agent_header(engine.settings.acp.title, client.model, client.provider)
    header = Text.assemble((safe_display(name), "bold"), safe_display(rest))
    if engine.permissions.yolo:
        header.append(" · ").append(" yolo ", style="reverse")
    console.print(header)
    console.print(Text(safe_display(str(engine.cwd), exact=True), style="dim"))
    for note in notes:
        say(console, safe_display(note), "yellow")


def stdout_console() -> Console:
    return Console(file=sys.stdout, highlight=False, soft_wrap=True)
