"""AgentHeader: `mm [title] · model @ provider` at the top of the window, with the working
folder and a `yolo` badge; the same line, `· asked by <parent>`, heads an asked agent's part of
the transcript."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from mm_tui.agent_title import header_text
from mm_tui.transcript import AgentHeaderItem
from mm_tui.widgets.render import strips


class AgentHeader(Widget):
    DEFAULT_CSS = """
    AgentHeader {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
        layout: horizontal;
    }
    AgentHeader > #agent { width: 1fr; height: 1; padding: 0 1; }
    AgentHeader > #cwd { width: auto; max-width: 50%; height: 1; color: $text-muted; padding: 0 1; }
    AgentHeader > #yolo { width: auto; height: 1; background: $warning; color: $background; padding: 0 1; display: none; }
    AgentHeader.-yolo > #yolo { display: block; }
    """

    title_text: reactive[str] = reactive("mm")
    model: reactive[str] = reactive("…")
    provider: reactive[str] = reactive("…")
    cwd: reactive[str] = reactive("")
    yolo: reactive[bool] = reactive(False)

    def compose(self) -> ComposeResult:
        yield Static(id="agent", markup=False)
        yield Static(id="cwd", markup=False)
        yield Static("yolo", id="yolo")

    def _update(self) -> None:
        if not self.is_mounted:
            return
        self.query_one("#agent", Static).update(
            header_text(self.title_text, self.model, self.provider)
        )
        self.query_one("#cwd", Static).update(self.cwd)
        self.set_class(self.yolo, "-yolo")

    def on_mount(self) -> None:
        self._update()

    def watch_title_text(self) -> None:
        self._update()

    def watch_model(self) -> None:
        self._update()

    def watch_provider(self) -> None:
        self._update()

    def watch_cwd(self) -> None:
        self._update()

    def watch_yolo(self) -> None:
        self._update()

    def show(self, *, title: str, model: str, provider: str, cwd: str, yolo: bool) -> None:
        with self.app.batch_update():
            self.set_reactive(AgentHeader.title_text, title)
            self.set_reactive(AgentHeader.model, model)
            self.set_reactive(AgentHeader.provider, provider)
            self.set_reactive(AgentHeader.cwd, cwd)
            self.set_reactive(AgentHeader.yolo, yolo)
            self._update()


class ChildHeader:
    """An asked agent's header inside the transcript."""

    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def render(self, item: AgentHeaderItem, width: int) -> list[Strip]:
        text = header_text(item.title, item.model, item.provider, item.asked_by)
        text.stylize(self.style("child--header"))
        return strips(self.console, text, width)
