"""UndoScreen: `/undo [N]` asks before it changes the files. The plan, a line a path (what is
restored, brought back, deleted, and what is left as it is and why), and y or Enter to go on,
n or Esc to keep the files as they are. Paths come from the project (a command may have named
a file anything) and are drawn through `safe_display`."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from mm_tui.core.terminal_text import safe_display
from mm_tui.engine.undo.snapshots import UndoPlan

_STYLES = {"restore": "yellow", "bring back": "green", "delete": "red", "left": "dim"}


class UndoScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    UndoScreen { align: center middle; }
    UndoScreen > Vertical {
        width: 90%; max-width: 100; height: auto; max-height: 80%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    UndoScreen VerticalScroll { height: auto; max-height: 20; }
    """
    BINDINGS = [
        Binding("y,enter", "answer(True)", "Undo"),
        Binding("n,escape,q", "answer(False)", "Keep the files"),
    ]

    def __init__(self, plan: UndoPlan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(safe_display(self.plan.title), style="bold"))
            with VerticalScroll():
                yield Static(self._lines(), id="undo-plan")
            yield Static(
                Text("y or Enter: change the files · n or Esc: keep them", style="dim"),
                id="undo-keys",
            )

    def _lines(self) -> Text:
        text = Text()
        for line in self.plan.lines():
            verb = line[:10].strip()
            text.append(safe_display(line[:10]), style=_STYLES.get(verb, ""))
            text.append(safe_display(line[10:]) + "\n")
        if not self.plan.changes:
            text.append("nothing to change\n", style="dim")
        text.rstrip()
        return text

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
