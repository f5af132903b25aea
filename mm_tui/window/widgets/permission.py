"""PermissionBox: a tool call waiting for the person's decision, docked above the prompt.

It shows the tool, its title and what the call will do (the command; the diff for write_file
and edit_file; the URL and the file for fetch_content) and waits for a (allow once), s (allow
this tool for the session), p (allow calls like it from now on: a rule, as suggested or edited,
kept in the project's or the person's config), r (reject this call), t (reject, and tell the
model why) or n (never this tool this session). p and t open a line for their words
(`permission_entry.py`). The title and the keys' line are docked: in a small terminal the
details scroll between them, and the choices are always on screen.

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
from typing import TYPE_CHECKING, Any

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
    from mm_tui.core.events import Answer, PermissionRequested
    from mm_tui.window.widgets.permission_entry import PermissionEntry


DIFF_TOOLS = {"write_file", "edit_file", "lsp"}
ANSWER_KEYS = "asprtn"
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


class _Choices:
    """The answers' line: laid out at the width it gets, breaking between answers, never
    inside one (`t say / why…`)."""

    def __init__(self, choices: list[Text]) -> None:
        self.choices = choices

    def __rich_console__(self, console: Any, options: Any) -> Any:
        width = options.max_width
        line = Text()
        for choice in self.choices:
            if line and line.cell_len + 2 + choice.cell_len > width:
                yield line
                line = Text()
            if line:
                line.append("  ")
            line.append_text(choice)
        yield line

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        widest = max((c.cell_len for c in self.choices), default=0)
        return Measurement(widest, sum(c.cell_len + 2 for c in self.choices))

    def __str__(self) -> str:
        return "  ".join(c.plain for c in self.choices)


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
    PermissionBox > #entry-label { color: $text-muted; height: 1; margin-top: 1; }
    """
    BINDINGS = [
        Binding("a", "decide('a')", "allow once"),
        Binding("s", "decide('s')", "allow for the session"),
        # p and t are in the box's own line of keys; the key bar keeps the four it always had,
        # which still fit at 60 columns
        Binding("p", "decide('p')", "allow a rule", show=False),
        Binding("r", "decide('r')", "reject"),
        Binding("t", "decide('t')", "reject, say why", show=False),
        Binding("n", "decide('n')", "never"),
    ]

    class Answered(Message):
        def __init__(self, request: PermissionRequested, answer: Answer) -> None:
            super().__init__()
            self.request = request
            self.answer = answer

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
        keys_part.update(self._keys_text())
        self.add_class("-open")
        self.focus()
        self._quiet_since = self.clock()

    def _keys_text(self) -> _Choices:
        request = self.request
        assert request is not None
        tool = safe_display(request.tool, exact=True)  # an MCP server names its tools
        keys: list[tuple[str, str]] = [("a", "allow once"), ("s", f"allow {tool} this session")]
        if request.pattern:
            keys.append(("p", f'rule "{safe_display(request.pattern, exact=True)}"…'))
        keys += [("r", "reject"), ("t", "say why…"), ("n", f"never {tool}")]
        return _Choices([Text.assemble((key, "bold"), f" {words}") for key, words in keys])

    def _entry_hint(self, entry: PermissionEntry) -> _Choices:
        from mm_tui.window.widgets.permission_entry import PLACES

        if entry.kind == "reason":
            keys = [("enter", "reject with this reason"), ("esc", "back")]
        else:
            other = "user" if entry.place == "project" else "project"
            keys = [
                ("enter", f"allow in {PLACES[entry.place]}"),
                ("tab", f"{PLACES[other].split(' (')[0]} instead"),
                ("esc", "back"),
            ]
        return _Choices([Text.assemble((key, "bold"), f" {words}") for key, words in keys])

    def _open_entry(self, kind: str) -> None:
        from mm_tui.window.widgets.permission_entry import PermissionEntry

        request = self.request
        assert request is not None
        self._close_entry()
        tool = safe_display(request.tool, exact=True)
        label = (
            f"allow the {tool} calls this rule matches:"
            if kind == "rule"
            else "why you reject it (the model reads this):"
        )
        entry = PermissionEntry(kind, request.pattern if kind == "rule" else "", id="entry")
        _, _, keys = self._parts()
        self.mount(Static(label, id="entry-label", markup=False), entry, before=keys)
        keys.update(self._entry_hint(entry))
        entry.focus()

    def _close_entry(self) -> None:
        for part in self.query("#entry, #entry-label"):
            part.remove()

    def on_permission_entry_switched(self, message: Message) -> None:
        from mm_tui.window.widgets.permission_entry import PermissionEntry

        message.stop()
        for entry in self.query(PermissionEntry):
            self._parts()[2].update(self._entry_hint(entry))

    def on_permission_entry_back(self, message: Message) -> None:
        message.stop()
        self._close_entry()
        if self.request is not None:
            self._parts()[2].update(self._keys_text())
            self.focus()
            self._quiet_since = self.clock()

    def on_input_submitted(self, message: Message) -> None:
        from mm_tui.core.events import Answer, Decision, RuleToSave
        from mm_tui.window.widgets.permission_entry import PermissionEntry

        message.stop()
        entry = getattr(message, "input", None)
        request = self.request
        if request is None or not isinstance(entry, PermissionEntry):
            return
        words = entry.value.strip()
        if entry.kind == "rule":
            if not words:
                return  # a rule needs a pattern
            rule = RuleToSave(tool=request.tool, pattern=words, place=entry.place)  # type: ignore[arg-type]
            answer = Answer(Decision.ALLOW_ONCE, rule=rule)
        else:
            answer = Answer(Decision.REJECT, reason=words)
        self.close()
        self.post_message(self.Answered(request, answer))

    def close(self) -> None:
        self._close_entry()
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
        """Decide the call: `a`, `s`, `r` or `n`, unguarded; `p` and `t` open the line for
        their words."""
        request = self.request
        if request is None:
            return
        if key == "p" and request.pattern:
            self._open_entry("rule")
            return
        if key == "t":
            self._open_entry("reason")
            return
        if key == "p":
            return  # nothing certain to offer as a rule
        from mm_tui.core.events import Answer, Decision

        self.close()
        self.post_message(self.Answered(request, Answer(Decision(key))))
