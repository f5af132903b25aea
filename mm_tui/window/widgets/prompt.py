"""Prompt: where the person types. Multi-line; Enter sends, Shift+Enter, Alt+Enter or Ctrl+J add
a line; Up and Down walk the history from the first and last lines; a slash command completes as
it is typed (the rest shows dimmed; Tab or Right takes it), and so does a model's name after
`/model ` (the names are asked of the server the first time one is typed: `ArgumentsWanted`).

A paste is text from anywhere (a web page, a terminal's scrollback): its control characters go
in in their visible form (`safe_display`: ESC as `\\x1b`), so that the prompt never sends them
to the terminal, and shows what the request will say.

The window starts with a stand-in for it (`prompt_stand_in.py`, which says why); this module is
imported once the engine is ready."""

from __future__ import annotations

from textual import events
from textual.widgets import TextArea

from mm_tui.core.terminal_text import safe_display
from mm_tui.window.widgets.prompt_stand_in import (
    BINDINGS,
    BORDER_TITLE,
    COMMANDS,
    COMPLETED_ARGUMENTS,
    ArgumentsWanted,
    Submitted,
    remember,
)


class Prompt(TextArea):
    DEFAULT_CSS = """
    Prompt {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: round $accent 40%;
        background: $surface;
        padding: 0 1;
    }
    Prompt:focus { border: round $accent; }
    Prompt > .text-area--cursor-line { background: $surface; }
    """
    BINDINGS = BINDINGS
    Submitted = Submitted  # the messages live beside the stand-in, which names them too
    ArgumentsWanted = ArgumentsWanted

    def action_transcript(self, action: str) -> None:
        """PageUp/PageDown while typing: the transcript scrolls, the prompt keeps the focus."""
        view = self.screen.query("TranscriptView").first()
        getattr(view, f"action_{action}")()

    def __init__(
        self,
        *,
        id: str | None = None,  # noqa: A002 - Textual's spelling
        text: str = "",
        past: list[str] | None = None,
    ) -> None:
        """`text` and `past`: what was typed and sent in its stand-in (`prompt_stand_in.py`)."""
        super().__init__(
            text,
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            highlight_cursor_line=False,
            tab_behavior="focus",
        )
        # A steady cursor: a blinking one is a timer that wakes an idle window twice a second
        # (0.8% of a core measured by bench/bench_window_idle.py, on the cores the model needs).
        self.cursor_blink = False
        self.past: list[str] = past if past is not None else []
        # what a command's argument completes from (`/model`: the server's model names)
        self.arguments: dict[str, list[str]] = {"/mode": ["ask", "auto", "plan"]}
        self._wanted: set[str] = set()  # arguments asked for once already
        self._position: int | None = None  # index into history while walking it
        self._draft = ""

    def on_mount(self) -> None:
        self.border_title = BORDER_TITLE

    def update_suggestion(self) -> None:
        text = self.text
        if text.startswith("/") and " " not in text and "\n" not in text and text != "/":
            match = next((c for c in COMMANDS if c.startswith(text) and c != text), None)
            self.suggestion = match[len(text) :] if match else ""
        elif text.startswith("/") and "\n" not in text:
            command, _, typed = text.partition(" ")
            self.suggestion = self._argument(command, typed) if " " not in typed else ""
        else:
            self.suggestion = ""

    def _argument(self, command: str, typed: str) -> str:
        """The rest of the argument `typed` begins, from the command's list; asked for the
        first time it is wanted."""
        if command not in COMPLETED_ARGUMENTS:
            return ""
        names = self.arguments.get(command)
        if names is None:
            if command not in self._wanted:
                self._wanted.add(command)
                self.post_message(self.ArgumentsWanted(command))
            return ""
        if not typed:
            return ""
        match = next((name for name in names if name.startswith(typed) and name != typed), "")
        return match[len(typed) :]

    def action_complete(self) -> None:
        if self.suggestion:
            self.insert(self.suggestion)
        else:
            self.screen.focus_next()

    def action_submit(self) -> None:
        text = self.text.strip()
        if not text:
            return
        remember(self.past, text)
        self._position = None
        self.clear()
        self.post_message(self.Submitted(text))

    def action_newline(self) -> None:
        self.insert("\n")

    async def _on_paste(self, event: events.Paste) -> None:
        event.prevent_default()  # TextArea's own handler would insert the raw text
        if self.read_only:
            return
        result = self.replace(safe_display(event.text), *self.selection)
        self.move_cursor(result.end_location)
        self.focus()

    async def _on_key(self, event: events.Key) -> None:
        focused = self.app.focused  # now: `has_focus` follows a moment later, by a message
        if focused is not None and focused is not self:
            # Keys that arrived in one burst behind a Tab (fast typing over SSH, `tmux
            # send-keys Tab Up Enter`) were handed to the prompt, focused when they arrived,
            # before the Tab moved the focus: they belong where the focus is now, in order
            # (Up and Enter re-sent the last request).
            event.prevent_default()
            event.stop()
            self.app.post_message(events.Key(event.key, event.character))
            return
        if event.key == "tab":  # here, not as the bubbling binding: the focus moves now
            event.prevent_default()
            event.stop()
            self.action_complete()
            return
        if event.key == "enter":
            event.prevent_default()
            event.stop()
            self.action_submit()
            return
        row, _ = self.cursor_location
        if event.key == "up" and row == 0 and self.past:
            event.prevent_default()
            event.stop()
            self._walk(-1)
            return
        if (
            event.key == "down"
            and row == self.document.line_count - 1
            and self._position is not None
        ):
            event.prevent_default()
            event.stop()
            self._walk(1)
            return
        await super()._on_key(event)

    def _walk(self, step: int) -> None:
        if self._position is None:
            if step > 0:
                return
            self._draft = self.text
            self._position = len(self.past)
        self._position += step
        if self._position >= len(self.past):
            self._position = None
            self.load_text(self._draft)
        else:
            self._position = max(0, self._position)
            self.load_text(self.past[self._position])
        self.move_cursor(self.document.end)
