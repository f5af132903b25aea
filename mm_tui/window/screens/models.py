"""ModelsScreen: `/model` without a name. The models the server offers, each with its context
window when the server says it, the one in use marked; Enter switches to one. The list is asked
once the screen shows (a server may take a moment to say each model's window); names and
windows come from the server and are drawn through `safe_display`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mm_tui.core.terminal_text import safe_display
from mm_tui.engine.model_choice import OfferedModel

ASKING = "Asking the server for its models…"


class ModelsScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    ModelsScreen { align: center middle; }
    ModelsScreen > Vertical {
        width: 90%; max-width: 90; height: 80%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    ModelsScreen OptionList { height: 1fr; }
    """
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, current: str, offered: Callable[[], Awaitable[list[OfferedModel]]]) -> None:
        super().__init__()
        self.current = current
        self._offered = offered

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Models", style="bold"))
            yield Static(ASKING, id="models-said")
            yield OptionList()

    def on_mount(self) -> None:
        self.load()

    @work(exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        said = self.query_one("#models-said", Static)
        try:
            models = await self._offered()
        except Exception as exc:  # noqa: BLE001 - said on the screen; Esc closes it
            said.update(Text(safe_display(f"The server's models cannot be listed: {exc}")))
            return
        said.update(Text("Enter switches to a model; the conversation stays.", style="dim"))
        options = self.query_one(OptionList)
        options.add_options([self._option(model) for model in models])
        ids = [model.id for model in models]
        if self.current in ids:
            options.highlighted = ids.index(self.current)
        options.focus()

    def _option(self, model: OfferedModel) -> Option:
        mark = "● " if model.id == self.current else "  "
        window = f"  ctx {model.window:,}" if model.window else ""
        label = Text.assemble(mark, (safe_display(model.id), "bold"), (window, "dim"))
        return Option(label, id=model.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss(self, result: str | None = None) -> None:  # type: ignore[override]
        self.dismiss(result)
