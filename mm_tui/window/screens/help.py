"""HelpScreen: the keys, the slash commands, the project instructions read and the permission
decisions remembered so far."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from mm_tui.core.events import Decision
from mm_tui.core.terminal_text import safe_display

KEYS = (
    ("Enter", "send the request (while a turn runs, it waits for the turn's end)"),
    (
        "Shift+Enter, Alt+Enter, Ctrl+J",
        "a new line in the prompt (in tmux, Shift+Enter arrives as Enter unless tmux has "
        "`set -g extended-keys on`; Ctrl+J always works)",
    ),
    ("Up, Down", "walk the prompt's history"),
    ("PageUp, PageDown", "scroll the transcript (from the prompt too)"),
    (
        "Esc",
        "close this help or the keys panel; else take back the last queued request, else cancel the turn",
    ),
    (
        "Ctrl+C",
        "copy the text selected with the mouse; else cancel the turn; else clear the prompt; "
        "twice when idle: quit",
    ),
    ("Ctrl+O", "open or close every tool output"),
    ("Shift+Tab", "the mode: ask first, auto (nothing asks), plan (look and plan only)"),
    ("Tab", "move between the prompt and the transcript (typing there goes to the prompt)"),
    ("Up, Down, Enter (transcript)", "select a tool line, fold or unfold it"),
    ("Ctrl+P", "command palette"),
    ("a / s / r / n", "permission: allow once / for the session / reject / never"),
)
COMMANDS = (
    ("/new", "a new session: fresh history, loop detector reset, AGENTS.md read again"),
    ("/compact", "replace the history with a summary"),
    ("/abort", "cancel the turn"),
    ("/ask AGENT …", "hand a request to an agent of mmConfigs"),
    ("/model [NAME]", "switch the model; the conversation stays"),
    ("/mode [NAME]", "ask, auto or plan"),
    ("/undo [N]", "put back the files the last N turns changed; again: redo"),
    ("/sessions", "reopen an earlier session"),
    ("/theme [NAME]", "switch the theme"),
    ("/help", "this screen"),
    ("/quit", "leave mm"),
)

NO_INSTRUCTIONS = (
    "mm reads AGENTS.md (or CLAUDE.md) in each folder from the repository's root down to the "
    "working folder, and ~/.config/mm/AGENTS.md"
)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape,q,f1", "dismiss", "Close")]

    def __init__(
        self, standing: dict[str, Decision], instructions: Sequence[tuple[str, str]] = ()
    ) -> None:
        super().__init__()
        self.standing = standing
        self.instructions = instructions  # (path, size) per file read, ("", warning) per warning

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._content())

    def _content(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        table.add_row(Text("Keys", style="bold underline"), "")
        for key, what in KEYS:
            table.add_row(key, what)
        table.add_row("", "")
        table.add_row(Text("Commands", style="bold underline"), "")
        for command, what in COMMANDS:
            table.add_row(command, what)
        table.add_row("", "")
        table.add_row(Text("Project instructions", style="bold underline"), "")
        if not self.instructions:
            table.add_row("(no file)", NO_INSTRUCTIONS)
        for path, what in self.instructions:
            shown = escape(safe_display(path, exact=True))  # a cell's str is markup
            what = safe_display(what)
            table.add_row(shown, Text(what, style="yellow") if not path else escape(what))
        table.add_row("", "")
        table.add_row(Text("Decisions this session", style="bold underline"), "")
        if not self.standing:
            table.add_row("(none)", "")
        for tool, decision in sorted(self.standing.items()):
            table.add_row(
                escape(safe_display(tool)),
                "allowed for the session" if decision.allows else "never",
            )
        return table

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
