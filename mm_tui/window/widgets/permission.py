"""PermissionBox: a tool call waiting for the person's decision, docked above the prompt.

It shows the tool, its title and what the call will do (the command; the diff for write_file
and edit_file; the URL and the file for fetch_content) and waits for a (allow once), s (allow
this tool for the session), r (reject this call) or n (never this tool this session). The title
and the a/s/r/n line are docked: in a small terminal the details scroll between them, and the
choices are always on screen.

Typing is not answering. A box that opens while the person types their next request would
otherwise take its letters as answers (`yes` allowing bash for the session by its `s`): what
is typed while it is up goes to the prompt, and a/s/r/n answers only when pressed on its own,
`ARMED_AFTER` after the box opened and after the last key typed to the prompt. Esc cancels
at once, as it always did.

What it shows is exactly what will run: the title and the details go through `safe_display`'s
`exact` form, so an escape sequence, a carriage return, a bidirectional override or an
invisible character in a command or a path shows as `\\x1b`, `\\r`, `\\u202e`, and cannot erase
or reorder what the question says. The details are never cut: a long command or diff scrolls
in the box, with its scrollbar."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from mm_tui.core.terminal_text import safe_display
from mm_tui.core.text import agent_title

if TYPE_CHECKING:  # the engine's events load after the first frame
    from mm_tui.core.events import Decision, PermissionRequested


DIFF_TOOLS = {"write_file", "edit_file", "lsp"}
ANSWER_KEYS = "asrn"
ARMED_AFTER = 0.5
"""Seconds of quiet (since the box opened, since the last key typed to the prompt) before
a/s/r/n answers: a key within them is taken for typing, and goes to the prompt."""


def details_text(tool: str, details: str) -> Text:
    """The call's details, every control character visible; a diff coloured line by line."""
    text = Text()
    lines = safe_display(details, exact=True).rstrip("\n").split("\n")
    diff = tool in DIFF_TOOLS and any(line.startswith(("@@", "+++", "---")) for line in lines)
    for line in lines:
        style = ""
        if diff:
            if line.startswith(("+++", "---")):
                style = "bold"
            elif line.startswith("+"):
                style = "green"
            elif line.startswith("-"):
                style = "red"
            elif line.startswith("@@"):
                style = "cyan"
        text.append(line + "\n", style=style)
    text.rstrip()
    return text


class PermissionBox(Widget, can_focus=True):
    DEFAULT_CSS = """
    PermissionBox {
        height: auto;
        max-height: 60%;
        border: round $warning;
        background: $surface;
        padding: 0 1;
        display: none;
    }
    PermissionBox.-open { display: block; }
    PermissionBox > #title { color: $warning; text-style: bold; height: auto; dock: top; }
    PermissionBox > #details { height: auto; max-height: 16; color: $text; }
    PermissionBox > #keys { color: $text-muted; height: auto; dock: bottom; padding-top: 1; }
    """
    BINDINGS = [
        Binding("a", "decide('a')", "allow once"),
        Binding("s", "decide('s')", "allow for the session"),
        Binding("r", "decide('r')", "reject"),
        Binding("n", "decide('n')", "never"),
    ]

    class Answered(Message):
        def __init__(self, request: PermissionRequested, decision: Decision) -> None:
            super().__init__()
            self.request = request
            self.decision = decision

    class Typed(Message):
        """A character typed while the box is up, for the prompt: not an answer."""

        def __init__(self, character: str) -> None:
            super().__init__()
            self.character = character

    def __init__(
        self,
        *,
        id: str | None = None,  # noqa: A002 - Textual's spelling
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(id=id)
        self.request: PermissionRequested | None = None
        self._shown: tuple[Static, Static, Static] | None = None
        self.clock = clock
        self._quiet_since = 0.0  # when the box opened, or the last key went to the prompt

    def _parts(self) -> tuple[Static, Static, Static]:
        """The title, details and keys, mounted at the first request: a box most sessions
        never open costs nothing before the first frame."""
        if self._shown is None:
            self._shown = (
                Static(id="title", markup=False),
                Static(id="details-text", markup=False),
                Static(id="keys"),
            )
            title, details, keys = self._shown
            self.mount(title, VerticalScroll(details, id="details"), keys)
        return self._shown

    def ask(self, request: PermissionRequested) -> None:
        self.request = request
        self.border_title = "permission"
        title = request.title
        if request.details and title.endswith(request.details):
            title = request.tool  # bash: the command is in the details, shown once, whole
        title = agent_title(request.agent, title)
        title_part, details_part, keys_part = self._parts()
        title_part.update(Text(f"🔐 {safe_display(title, exact=True)}"))
        details_part.update(details_text(request.tool, request.details))
        tool = safe_display(request.tool, exact=True)  # an MCP server names its tools
        keys_part.update(
            Text.assemble(
                ("a", "bold"),
                " allow once   ",
                ("s", "bold"),
                f" allow {tool} for the session   ",
                ("r", "bold"),
                " reject   ",
                ("n", "bold"),
                f" never {tool}",
            )
        )
        self.add_class("-open")
        self.focus()
        self._quiet_since = self.clock()

    def close(self) -> None:
        self.request = None
        self.remove_class("-open")

    def on_key(self, event: events.Key) -> None:
        """Every printable key is handled here, before the a/s/r/n bindings: an answer when it
        comes on its own, else a character for the prompt."""
        character = event.character
        if self.request is None or not event.is_printable or not character:
            return
        event.stop()
        event.prevent_default()
        if character in ANSWER_KEYS and self._armed():
            self.answer(character)
            return
        self._quiet_since = self.clock()
        self.post_message(self.Typed(character))

    def _armed(self) -> bool:
        return self.clock() - self._quiet_since >= ARMED_AFTER

    def action_decide(self, key: str) -> None:
        """a/s/r/n through its binding (the key bar's click): an answer when armed."""
        if self._armed():
            self.answer(key)

    def answer(self, key: str) -> None:
        """Decide the call: `a`, `s`, `r` or `n`, unguarded."""
        request = self.request
        if request is None:
            return
        from mm_tui.core.events import Decision

        decision = Decision(key)
        self.close()
        self.post_message(self.Answered(request, decision))
