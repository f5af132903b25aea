"""ToolLine: one tool call as one line, `‣ bash  <command>`, its status mark and elapsed time at
the right (a call mm read from the answer's text says so after the title, dim), and its output (a coloured diff for the tools that change files) folded beneath. A
command of several lines shows its first and how many more; unfolded, the rest above the output.
The title (a command, a path) and the output are drawn through `safe_display`: an escape
sequence from the model or the command shows as `\\x1b[…`."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from mm_tui.core.terminal_text import safe_display
from mm_tui.window.transcript.renderers.strips import (
    format_elapsed,
    right_aligned,
    strips,
    wrapped_lines,
)
from mm_tui.window.transcript.store import ToolItem

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
MARKS = {"ok": "✓", "error": "✗", "rejected": "⊘", "cancelled": "⊘"}
STATE_TEXT = {"fetch_content": "Fetching"}
OUTPUT_INDENT = "    "


def spinner_frame(now: float) -> str:
    return SPINNER[int(now * 10) % len(SPINNER)]


def split_title(title: str) -> tuple[str, list[str]]:
    """A title's first line, and the lines after it: a command with a newline (a heredoc, a
    script), which the header shows as its first line and a count, and the unfolded call in
    full above its output."""
    first, *rest = title.split("\n")
    return first, rest


def more_lines(count: int) -> str:
    return f" … +{count} line" if count == 1 else f" … +{count} lines"


class ToolLine:
    """Renders a `ToolItem`. `style(name)` gives the theme's style of a component class
    (`tool--ok`, `tool--error`, ...). A running call's header row the view draws itself, live
    (`header`): its spinner and time move. A finished call's is drawn once, with its output,
    and kept with the item's lines: a long turn's frames do not build every finished row again."""

    margin_before = False
    draws_base = False

    def __init__(self, console: Console, style: Callable[[str], Style]) -> None:
        self.console = console
        self.style = style

    def header(self, item: ToolItem, width: int, now: float, selected: bool = False) -> Strip:
        title_style = self.style("tool--title")
        title, rest = split_title(safe_display(item.title, exact=True))
        left = Text.assemble(("‣ ", self.style("tool--bullet")), (title, title_style))
        if rest:
            left.append(more_lines(len(rest)), style=self.style("tool--time"))
        if item.from_text:  # the events module is not loaded before the first frame
            from mm_tui.core.events import FROM_TEXT

            left.append(f"  · {FROM_TEXT}", style=self.style("tool--time"))
        if item.running:
            elapsed = now - item.started
            if item.waiting:
                right = Text.assemble(("waiting for a/s/r/n ", self.style("tool--waiting")))
            else:
                state = STATE_TEXT.get(item.tool)
                right = Text(spinner_frame(now), style=self.style("tool--running"))
                if state:
                    right = Text.assemble((f"{state} ", self.style("tool--running")), right)
            right.append(f" {format_elapsed(elapsed)}", style=self.style("tool--time"))
        else:
            mark = MARKS.get(item.status, "?")
            right = Text(mark, style=self.style(f"tool--{item.status}"))
            if item.timed:  # a compaction's line has no time of its own
                elapsed = format_elapsed(item.elapsed or 0.0)
                right.append(f" {elapsed}", style=self.style("tool--time"))
        strip = right_aligned(left, right, width, self.console)
        if selected:
            strip = strip.apply_style(self.style("tool--selected"))
        return strip

    def render(self, item: ToolItem, width: int) -> list[Strip]:
        """The header (a blank row while the call runs: the view draws it live), then the
        output unless folded."""
        lines = [Strip.blank(width) if item.running else self.header(item, width, 0.0)]
        if not item.folded:
            lines.extend(self.body(item, width))
        return lines

    def estimate(self, item: ToolItem, width: int) -> int:
        """Exact when folded, close otherwise."""
        if item.folded:
            return 1
        body = item.diff if item.diff and item.status == "ok" else item.output
        rest = split_title(item.title)[1]
        inner = width - len(OUTPUT_INDENT)
        return 2 + wrapped_lines("\n".join([*rest, body or ""]), inner)

    def body(self, item: ToolItem, width: int) -> list[Strip]:
        """The unfolded output, indented; a diff coloured line by line."""
        inner = max(1, width - len(OUTPUT_INDENT))
        if item.tool == "compact" and item.output:  # the model's summary: Markdown, as answers
            from mm_tui.terminal.block_markdown import BlockMarkdown

            summary = BlockMarkdown(safe_display(item.output))
            indent = Strip.blank(len(OUTPUT_INDENT))
            drawn = strips(self.console, summary, inner, self.style("tool--output"))
            return [Strip.join([indent, line]) for line in drawn]
        text = Text(no_wrap=False, end="")
        rest = split_title(safe_display(item.title, exact=True))[1]
        if rest:  # the command's lines after the first, which the header does not show
            text.append("\n".join(rest) + "\n", style=self.style("tool--title"))
        if item.diff and item.status == "ok":
            headline = safe_display(item.output.split("\n", 1)[0])
            text.append(headline + "\n", style=self.style("tool--output"))
            # here, not at the top: the tools' modules are not loaded before the first frame
            from mm_tui.tools.diff import unified_line_kinds

            lines = safe_display(item.diff).rstrip("\n").split("\n")
            for line, kind in zip(lines, unified_line_kinds(lines), strict=True):
                style = self.style("tool--output" if kind == "other" else f"diff--{kind}")
                text.append(line + "\n", style=style)
        else:
            output = safe_display(item.output).rstrip("\n") or "(no output)"
            style = self.style("tool--output" if item.status == "ok" else "tool--output-error")
            text.append(output, style=style)
        text.rstrip()
        lines = strips(self.console, text, inner)
        pad = Strip([], 0)
        indent = Strip.blank(len(OUTPUT_INDENT))
        return [Strip.join([indent, line]) if line.cell_length else pad for line in lines]
