"""TodoPanel: the model's task list (the todo tool) under the header, each step with its state;
a list longer than FOLD_AFTER steps folds to one line, its current step and how many are done.
Mounted by the main screen when the model first writes a list (nothing to draw before, so
nothing on the way to the first frame). The steps come from the model: they are drawn through
`safe_display`."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from mm_tui.core.events import TodoStep
from mm_tui.core.terminal_text import safe_display
from mm_tui.window.theme_style import theme_style

FOLD_AFTER = 5  # steps shown one a row; a longer list is one row
SYMBOLS = {"done": "✓", "in_progress": "▸", "pending": "○"}


class TodoPanel(Widget):
    DEFAULT_CSS = """
    TodoPanel {
        height: auto;
        max-height: 6;
        background: $panel;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's spelling
        super().__init__(id=id)
        self.steps: tuple[TodoStep, ...] = ()

    def show(self, steps: tuple[TodoStep, ...]) -> None:
        """The list as the model last wrote it; an empty list hides the panel."""
        self.steps = steps
        self.display = bool(steps)
        self.refresh(layout=True)

    def render(self) -> Text:
        steps = self.steps
        muted = theme_style(self, "text-muted")
        accent = theme_style(self, "accent")
        done = sum(s.state == "done" for s in steps)
        if len(steps) > FOLD_AFTER:
            now = next((s for s in steps if s.state == "in_progress"), None)
            line = Text.assemble((f"tasks {done}/{len(steps)} done", muted))
            if now is not None:
                line.append("  ▸ ", accent)
                line.append(safe_display(now.step), "bold")
            return line
        rows = Text()
        for n, step in enumerate(steps):
            if n:
                rows.append("\n")
            style = muted if step.state == "done" else "bold" if step.state == "in_progress" else ""
            rows.append(f"{SYMBOLS[step.state]} ", accent if step.state == "in_progress" else muted)
            rows.append(safe_display(step.step), style)
        return rows
