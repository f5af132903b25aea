"""AgentHeader: `mm [title] · model @ provider` at the top of the window, with the working
folder, how full the model's context is (`ctx 1,234 / 4,096 (30%)`, once the window is known),
a `no answer` badge while the model server does not answer, and the mode's badge (`auto` or
`plan`; `ask` has none). (The same line,
`· asked by <parent>`, heads an asked agent's part of the transcript:
`window/transcript/renderers/child_header.py`.) The model and the provider come from a server: they
are drawn through `safe_display`, as the folder is."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from mm_tui.core.terminal_text import safe_display
from mm_tui.core.text import agent_header
from mm_tui.window.theme_style import theme_style


def cut_start(path: str, room: int) -> str:
    """`path` in at most `room` cells, its start given up for `…` (at a `/` when one is left):
    the last parts of a folder say most about it."""
    if cell_len(path) <= room:
        return path
    while path and cell_len(path) > room - 1:
        path = path[1:]
    slash = path.find("/")
    return "…" + (path[slash:] if slash > 0 else path)


NO_ANSWER = " no answer "
BADGES = {"auto": "warning", "plan": "accent"}  # the modes shown, and their badge's colour


class AgentHeader(Widget):
    """One widget drawing one line, not three Statics, for the first frame (docs/performance.md):
    the agent on the left, cut with an ellipsis when the window is narrow; the working folder,
    muted, in what the agent leaves (at most half the line, at least a quarter), cut from its
    start; the context's fill, muted, when the agent and the folder leave room for it whole
    (it is the first to go: it is also in every recap); the mode's badge at the right edge."""

    DEFAULT_CSS = """
    AgentHeader {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
    }
    """

    title_text: reactive[str] = reactive("mm")
    model: reactive[str] = reactive("…")
    provider: reactive[str] = reactive("…")
    cwd: reactive[str] = reactive("")
    mode: reactive[str] = reactive("ask")
    context: reactive[str] = reactive("")
    answering: reactive[bool] = reactive(True)

    def render(self) -> Text:
        width = self.content_size.width
        name, rest = agent_header(self.title_text, self.model, self.provider)
        agent = Text.assemble(" ", (safe_display(name), "bold"), safe_display(rest))
        right = self._right(width, agent.cell_len, self.context)
        if self.context and agent.cell_len + right.cell_len >= width:  # the agent comes first
            right = self._right(width, agent.cell_len, "")
        room = max(1, width - right.cell_len)
        agent.truncate(room - 1, overflow="ellipsis")
        agent.pad_right(room - agent.cell_len)
        agent.append_text(right)
        return agent

    def _right(self, width: int, agent: int, context: str) -> Text:
        """The folder, the context and the badge, the folder cut to what the others leave."""
        muted = theme_style(self, "text-muted")
        badge = (len(self.mode) + 2 if self.mode in BADGES else 0) + (
            0 if self.answering else len(NO_ANSWER)
        )
        ctx = Text(f" {context} ", muted) if context else Text()
        right = Text()
        if self.cwd:
            wanted = width - badge - ctx.cell_len - agent - 1
            room = max(min(wanted, width // 2), width // 4) - 2
            if room > 0:
                cwd = safe_display(self.cwd, exact=True)
                right.append(f" {cut_start(cwd, room)} ", muted)
        right.append_text(ctx)
        if not self.answering:
            right.append(NO_ANSWER, theme_style(self, "background", background="error"))
        if self.mode in BADGES:
            colour = BADGES[self.mode]
            right.append(f" {self.mode} ", theme_style(self, "background", background=colour))
        return right

    def show_mode(self, mode: str) -> None:
        """The session's mode changed (Shift+Tab)."""
        if mode != self.mode:
            self.set_reactive(AgentHeader.mode, mode)
            self.refresh()

    def show_context(self, text: str) -> None:
        """How full the model's context is (`ContextUsage.text`); "" shows nothing."""
        if text != self.context:
            self.set_reactive(AgentHeader.context, text)
            self.refresh()

    def show_server(self, answering: bool) -> None:
        """Mark the header while the model server does not answer (a dead server otherwise looks
        healthy here, and only a spinner says anything)."""
        if answering != self.answering:
            self.set_reactive(AgentHeader.answering, answering)
            self.refresh()

    def show_model(self, model: str) -> None:
        """`/model` switched: the requests go to `model` now."""
        if model != self.model:
            self.set_reactive(AgentHeader.model, model)
            self.refresh()

    def show(self, *, title: str, model: str, provider: str, cwd: str, mode: str) -> None:
        self.set_reactive(AgentHeader.title_text, title)
        self.set_reactive(AgentHeader.model, model)
        self.set_reactive(AgentHeader.provider, provider)
        self.set_reactive(AgentHeader.cwd, cwd)
        self.set_reactive(AgentHeader.mode, mode)
        self.refresh()
