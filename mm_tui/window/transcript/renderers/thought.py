"""Thought: the model's reasoning, dimmed while it streams, folded to one line once the answer
starts (Enter or a click opens it again)."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.core.terminal_text import safe_display
from mm_tui.window.transcript.renderers.strips import strips, text_strip, wrapped_lines
from mm_tui.window.transcript.store import ThoughtItem


class Thought:
    margin_before = False
    draws_base = False

    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def render(self, item: ThoughtItem, width: int, selected: bool = False) -> list[Strip]:
        style = self.style("thought--text")
        text = safe_display(item.text).strip()
        if item.folded:
            lines = text.count("\n") + 1 if text else 0
            summary = Text(f"▸ Thought ({lines} line{'s' if lines != 1 else ''})", style=style)
            strip = text_strip(summary, width, self.console)
            return [strip.apply_style(self.style("tool--selected")) if selected else strip]
        head = Text("▾ Thought" if item.done else "Thinking…", style=style)
        out = [text_strip(head, width, self.console)]
        if selected:
            out[0] = out[0].apply_style(self.style("tool--selected"))
        out.extend(strips(self.console, Text(text, style=style), width))
        return out

    def estimate(self, item: ThoughtItem, width: int) -> int:
        return 1 if item.folded else 1 + wrapped_lines(item.text, width)
