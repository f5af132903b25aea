"""What streams in line mode and `-p`: the answer and the reasoning, printed as they arrive.

On a terminal the text breaks lines between words, never inside one (the terminal would cut a
word at its edge): a word is held until the blank or line end after it arrives.

The answer is Markdown. It streams as the model writes it, and on a terminal each block
(paragraphs, lists, code fences: what blank lines outside a fence separate) is drawn again as
Markdown once it ends: the cursor goes back up to where the block began, clears below and
prints it rendered, as the window draws it (Rich's Markdown; code in the terminal's own
colours). A block is left as it streamed when its rows cannot be known or reached: a word wider
than the line (the terminal cut it), a width that changed meanwhile, or more rows than the
screen holds. A pipe or a file gets the text exactly as it came, Markdown for Markdown. The
reasoning is not redrawn: it is notes, dimmed.

Typeahead is not echoed while a turn runs (`keys_not_echoed`) and nothing else prints while a
stream is open (any other event closes it first), so the rows counted are the rows written."""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment, Segments

from mm_tui.core.terminal_text import safe_display

_WORDS = re.compile(r"\n|[^\S\n]+|[^\s]+")
"""A stream's pieces for wrapping: a line end, a run of blanks, a run of anything else."""
_LINE_ENDS = re.compile(r"(\n)")
FENCES = ("```", "~~~")
CODE_THEME = "ansi_dark"  # the terminal's own palette: its background is not known here


class StreamPrinter:
    """One stream at a time: `write` its pieces, `close` it. `markdown` streams draw each
    finished block again as Markdown (on a terminal)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.style = ""
        self.markdown = False
        self.open = False
        self._held_cr = False  # the last piece ended on a CR (`_safe`)
        # word wrapping: the cells written on the current line, the word not ended yet
        self._column = 0
        self._word = ""
        # the block being streamed (`markdown` on a terminal): its text, its line still
        # arriving, the line ends written since it began (how far up it starts), whether a word
        # was cut (its rows unknown), the width it was written at, the fence it is inside
        self._block: list[str] = []
        self._line = ""
        self._rows = 0
        self._cut = False
        self._width = 0
        self._fence: str | None = None

    def start(self, *, style: str = "", markdown: bool = False) -> None:
        self.style, self.markdown, self.open = style, markdown, True

    def write(self, text: str) -> None:
        if not (self.markdown and self.console.is_terminal):
            self._print(text)
            return
        for piece in _LINE_ENDS.split(text):
            if piece == "\n":
                line, self._line = self._line, ""
                if self._fence is None and not line.strip():
                    self._end_block()  # a blank line: the block above it is whole
                    self._print("\n")
                    self._rows = 0  # the blank line belongs to no block
                    continue
                stripped = line.strip()
                if self._fence is None and stripped.startswith(FENCES):
                    self._fence = stripped[:3]
                elif self._fence is not None and stripped.startswith(self._fence):
                    self._fence = None
            elif piece:
                self._line += piece
            else:
                continue
            if not self._block:
                self._width = self.console.width
            self._block.append(piece)
            self._print(piece)

    def close(self) -> None:
        """End the stream's last line; its last block is drawn again first."""
        if not self.open:
            return
        if self._word:  # the last word, held for its end
            out: list[str] = []
            self._put_word(out, max(1, self.console.width))
            self._out("".join(out))
        redrawn = self.markdown and self.console.is_terminal and self._end_block()
        self._column = 0
        self._line, self._fence = "", None
        if self._held_cr:  # the stream ended on a lone CR
            self._held_cr = False
            if not redrawn:
                self.console.file.write(safe_display("\r"))
        if not redrawn:  # the rendered block ended its own line
            self.console.file.write("\n")
        self.console.file.flush()
        self.open = False

    # -- the block drawn again --------------------------------------------------------------

    def _end_block(self) -> bool:
        """Draw the finished block again as Markdown, where its rows are known and on the
        screen; whether it was. The cursor is on the block's last row."""
        text, rows = "".join(self._block), self._rows
        cut, width = self._cut, self._width
        self._block, self._rows, self._cut = [], 0, False
        if not text.strip() or cut or width != self.console.width:
            return False
        if rows >= self.console.height - 1:  # its top has scrolled out of reach
            return False
        lines = self._rendered(text)
        self.console.file.write((f"\x1b[{rows}A" if rows else "") + "\r\x1b[J")
        segments: list[Segment] = []
        for line in lines:
            segments += [*line, Segment.line()]
        self.console.print(Segments(segments), end="")
        self._column = 0
        return True

    def _rendered(self, text: str) -> list[list[Segment]]:
        """The block's rows as Markdown, without the blank rows Rich puts around a list or a
        code block: blocks are set apart by the blank lines of the stream."""
        from mm_tui.terminal.block_markdown import BlockMarkdown

        markdown = BlockMarkdown(safe_display(text), code_theme=CODE_THEME)
        lines = self.console.render_lines(markdown, pad=False)
        filled = [i for i, line in enumerate(lines) if "".join(s.text for s in line).strip()]
        return lines[filled[0] : filled[-1] + 1] if filled else []

    # -- writing and wrapping -------------------------------------------------------------

    def _print(self, text: str) -> None:
        self._out(self._wrapped(self._safe(text)))

    def _out(self, text: str) -> None:
        self._rows += text.count("\n")
        self.console.print(
            text, end="", style=self.style, markup=False, highlight=False, soft_wrap=True
        )

    def _safe(self, text: str) -> str:
        """A piece of the stream, safe to print. A CR that ends a piece waits for the next:
        followed by a newline it is a line end, not a lone CR shown as `\\r`."""
        if self._held_cr:
            text = "\r" + text
        self._held_cr = text.endswith("\r")
        return safe_display(text[:-1] if self._held_cr else text)

    def _wrapped(self, text: str) -> str:
        """`text` with a line break before each word that would not fit the rest of the line,
        on a terminal; a pipe or a file gets the text as it is."""
        if not self.console.is_terminal:
            return text
        width = max(1, self.console.width)
        out: list[str] = []
        for piece in _WORDS.findall(text):
            if piece == "\n":
                self._put_word(out, width)
                out.append("\n")
                self._column = 0
            elif piece.isspace():
                self._put_word(out, width)
                if self._column + cell_len(piece) > width:  # blanks at the edge: a line end
                    out.append("\n")
                    self._column = 0
                else:
                    out.append(piece)
                    self._column += cell_len(piece)
            else:
                self._word += piece
        return "".join(out)

    def _put_word(self, out: list[str], width: int) -> None:
        size = cell_len(self._word)
        if self._column and self._column + size > width:
            out.append("\n")
            self._column = 0
        out.append(self._word)
        self._column += size
        if self._column > width:  # a word longer than a line: the terminal cut it
            self._column %= width
            self._cut = True
        self._word = ""
