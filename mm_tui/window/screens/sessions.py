"""SessionsScreen: the sessions of this folder, newest first; Enter reopens one. They are read
from the session folders in order (mm's state folder, then the project's old `.mm/sessions`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mm_tui.core.terminal_text import safe_display
from mm_tui.core.text import counted
from mm_tui.engine.session_listing import list_sessions_in


class SessionsScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    SessionsScreen { align: center middle; }
    SessionsScreen > Vertical {
        width: 90%; max-width: 110; height: 80%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    SessionsScreen OptionList { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, folders: Path | Sequence[Path]) -> None:
        super().__init__()
        self.folders = [folders] if isinstance(folders, Path) else list(folders)
        self.folder = self.folders[0]

    def compose(self) -> ComposeResult:
        sessions = list_sessions_in(self.folders)
        with Vertical():
            folder = safe_display(str(self.folder), exact=True)
            yield Static(Text(f"Sessions in {folder}", style="bold"))
            options = [
                Option(
                    Text.assemble(
                        (info.updated[:16].replace("T", " "), "dim"),
                        "  ",
                        (safe_display(info.title) or "(empty)", "bold"),
                        (f"  {counted(info.message_count, 'message')}", "dim"),
                    ),
                    id=info.id,
                )
                for info in sessions
            ]
            if not options:
                yield Static("No session yet.")
            yield OptionList(*options)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss(self, result: str | None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
