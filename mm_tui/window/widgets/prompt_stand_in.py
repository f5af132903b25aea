"""What the first frame shows of the prompt, and what the rest of the window knows of it, without
Textual's TextArea.

The prompt is a TextArea (`prompt.py`): importing it (its documents, its themes, tree-sitter's
binding) and mounting it (its eight component classes, its document and wrapping) cost 6% of a
bare Textual app's way to its first frame, in instructions (docs/performance.md). So the first
frame draws `PromptStandIn`, which paints what the empty, focused prompt paints (its border and
title, the cursor's cell), and the main screen swaps the real prompt in right after the first
frame (`MainScreen.take_prompt`), in the same place; the app holds the keys and pastes that
come meanwhile and hands them on once the prompt is there (`MMApp.on_event`). The commands,
the prompt's keys and its messages live here, so that the app and the main screen name them
without loading TextArea."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
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
    """The empty prompt as the first frame shows it. Its stylesheet is the prompt's and
    TextArea's, for what an empty prompt shows: the box, and the cursor's colours in a dark
    theme, a light one and ANSI colours (`tests/window/test_prompt_stand_in.py` holds it to the
    prompt's picture in seven themes). It takes no key: the app holds them until the prompt is
    there."""

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

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        base = self.rich_style
        if y or not self.has_focus:
            return Strip.blank(width, base)
        cursor: Style = self.get_component_rich_style("text-area--cursor")
        return Strip([Segment(" ", cursor), Segment(" " * (width - 1), base)], width)
