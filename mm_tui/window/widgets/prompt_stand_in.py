"""What the window shows of the prompt until the engine is ready, and what the rest of the window
knows of it, without Textual's TextArea.

The prompt is a TextArea (`prompt.py`): importing it (its documents, its themes, tree-sitter's
binding) and mounting it (its eight component classes, its document and wrapping) cost 6% of a
bare Textual app's way to its first frame and a third of the way from there to ready, in
instructions (docs/performance.md). So the window starts with `PromptStandIn`, which paints
what the prompt paints (its border and title, a line of text, the cursor's cell) and takes
what is typed on one line: printable keys, Backspace, and Enter, which sends the request as the
prompt does. The main screen swaps the real prompt in once the engine is ready
(`MainScreen.take_prompt`), in the same place, with the text typed so far and the requests sent;
the app holds any other key and paste that comes meanwhile (a new line, an arrow, a key that
would not fit on the line), and every key after it, and hands them on in order once the prompt
is there (`MMApp.on_event`). The commands, the prompt's keys and its messages live here, so
that the app and the main screen name them without loading TextArea."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

COMMANDS = (
    "/new",
    "/compact",
    "/abort",
    "/ask",
    "/model",
    "/mode",
    "/undo",
    "/sessions",
    "/theme",
    "/help",
    "/quit",
)
COMPLETED_ARGUMENTS = ("/model", "/mode")  # commands whose argument completes from a list
BORDER_TITLE = "› Enter to send · Shift+Enter new line · /help"

BINDINGS: list[BindingType] = [
    # Not a priority binding: a priority binding runs at the app as the key arrives, before
    # the keys typed just ahead of it reach the prompt, so text and Enter in one burst (a
    # paste, SSH, `tmux send-keys "text" Enter`) sent nothing. `_on_key` takes Enter in turn.
    Binding("enter", "submit", "Send", show=True),
    Binding("shift+enter,alt+enter,ctrl+j", "newline", "New line", show=False, priority=True),
    Binding("tab", "complete", "Complete", show=False),
    # the prompt is a few lines high: paging it would do nothing, the transcript pages
    Binding("pageup", "transcript('page_up')", "Page up", show=False),
    Binding("pagedown", "transcript('page_down')", "Page down", show=False),
]
"""The prompt's keys; the stand-in has them too, for the key bar to show the same keys."""


class Submitted(Message, namespace="prompt"):
    """Enter in the prompt: `text` is the request."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ArgumentsWanted(Message, namespace="prompt"):
    """The person typed `command ` and its arguments are not known yet: whoever knows them
    sets `Prompt.arguments[command]` (then `update_suggestion`)."""

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command


class PromptStandIn(Widget, can_focus=True):
    """The prompt until the engine is ready. Its stylesheet is the prompt's and TextArea's,
    for what it shows: the box, a line of text, and the cursor's colours in a dark theme, a
    light one and ANSI colours (`tests/window/test_prompt_stand_in.py` holds it to the prompt's
    picture in seven themes). The app gives it the keys it takes (`take`); `text` and `past`
    (the requests sent from it) go to the prompt that replaces it."""

    DEFAULT_CSS = """
    PromptStandIn {
        width: 1fr;
        height: 3;
        border: round $accent 40%;
        background: $surface;
        color: $foreground;
        padding: 0 1;
        &:focus { border: round $accent; }
        & > .text-area--cursor { text-style: $input-cursor-text-style; }
        &:ansi > .text-area--cursor {
            color: $input-cursor-foreground;
            background: $input-cursor-background;
            text-style: reverse;
        }
        &:dark > .text-area--cursor {
            color: $input-cursor-foreground;
            background: $input-cursor-background;
        }
        &:light > .text-area--cursor {
            color: $text 90%;
            background: $foreground 70%;
        }
    }
    """
    COMPONENT_CLASSES = {"text-area--cursor"}
    BINDINGS = BINDINGS

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's spelling
        super().__init__(id=id)
        self.border_title = BORDER_TITLE
        self.text = ""
        self.past: list[str] = []
        self.closed = False  # the prompt is being swapped in: every key waits for it

    def take(self, event: events.Key) -> bool:
        """Type `event` in, if it is a key the stand-in knows: a printable key whose character
        fits on the line beside the cursor, Backspace, Enter. False leaves it to the prompt."""
        if self.closed or self.app.focused is not self:
            return False
        key, character = event.key, event.character
        if key == "enter":
            self.submit()
        elif key == "backspace":
            self.text = self.text[:-1]
        elif (
            event.is_printable
            and character
            and cell_len(self.text) + cell_len(character) < self.content_size.width
        ):
            self.text += character
        else:
            return False
        self.refresh()
        return True

    def clear(self) -> None:
        self.text = ""
        self.refresh()

    def submit(self) -> None:
        """Enter: the request goes as the prompt's would (`Prompt.action_submit`)."""
        text = self.text.strip()
        if not text:
            return
        remember(self.past, text)
        self.clear()
        self.post_message(Submitted(text))

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        base = self.rich_style
        if y:
            return Strip.blank(width, base)
        segments = [Segment(self.text, base)] if self.text else []
        used = cell_len(self.text)
        if self.has_focus:
            cursor: Style = self.get_component_rich_style("text-area--cursor")
            segments.append(Segment(" ", cursor))
            used += 1
        segments.append(Segment(" " * max(0, width - used), base))
        return Strip(segments, width)


def remember(past: list[str], text: str) -> None:
    """A request sent, in the prompt's history (Up walks it): once, if sent twice in a row."""
    if not past or past[-1] != text:
        past.append(text)
