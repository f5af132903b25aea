"""TrustScreen: the question about a project config whose keys only the person can allow, asked
in the window before the engine starts (the configuration loads after the first frame)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class TrustScreen(ModalScreen[str]):
    """Dismissed with one of config.TRUST_ANSWERS: `t` trust (remembered), `o` this time only,
    `i` (or Esc) ignore those keys. `lines` are already safe for a terminal; they are shown as
    text, never as markup."""

    DEFAULT_CSS = """
    TrustScreen { align: center middle; }
    TrustScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 80%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    TrustScreen #trust-title { color: $warning; text-style: bold; }
    TrustScreen VerticalScroll { height: auto; max-height: 20; }
    TrustScreen #trust-keys { color: $text-muted; padding-top: 1; }
    """
    BINDINGS = [
        Binding("t", "answer('trust')", "trust"),
        Binding("o", "answer('once')", "this time only"),
        Binding("i,escape", "answer('ignore')", "ignore those keys"),
    ]

    def __init__(self, path: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.path = path
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                Text(f"{self.path} sets what only you can allow:"),
                id="trust-title",
                markup=False,
            )
            with VerticalScroll():
                yield Static(Text("\n".join(self.lines)), id="trust-lines", markup=False)
            yield Static(
                Text.from_markup(
                    "[b]t[/b] trust (remember)   [b]o[/b] this time only   "
                    "[b]i[/b] ignore those keys"
                ),
                id="trust-keys",
            )

    def action_answer(self, answer: str) -> None:
        self.dismiss(answer)
