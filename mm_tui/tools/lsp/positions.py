"""Positions: 1-based lines and columns in characters for the model, 0-based UTF-16 on the wire.

The protocol counts a line's columns in UTF-16 code units: an emoji (outside the Basic
Multilingual Plane) is two units, an accented letter one, whatever its UTF-8 length. A model
counts characters. Converting both ways, with the text of the line at hand, is what makes a
position after `"héllo 👋 "` land on the identifier the model meant.

A server may say it counts otherwise (`positionEncoding` in its capabilities: utf-8 or utf-32);
it is then taken at its word. pylsp says nothing and counts code points (utf-32): jedi's columns
go out as they are.

Lines are split the way the protocol splits them: at `\\n`, `\\r\\n` and `\\r` only (Python's
`splitlines` would also split at form feeds and Unicode separators and shift every line after).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EOL = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their line endings; a final line ending starts an empty line,
    as in an editor (the protocol may put a position there)."""
    return _EOL.split(text)


UTF16 = "utf-16"
ENCODINGS = ("utf-8", "utf-16", "utf-32")


def _units(ch: str, encoding: str) -> int:
    if encoding == "utf-32":
        return 1
    if encoding == "utf-8":
        return len(ch.encode("utf-8", errors="surrogatepass"))
    return 2 if ord(ch) > 0xFFFF else 1


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def char_to_utf16(line: str, column: int, encoding: str = UTF16) -> int:
    """The offset, in the encoding's code units (UTF-16 unless told), of the 0-based character
    `column` of `line` (clamped to its end)."""
    head = line[: max(0, column)]
    if encoding == "utf-32":
        return len(head)
    if encoding == "utf-8":
        return len(head.encode("utf-8", errors="surrogatepass"))
    return utf16_len(head)


def utf16_to_char(line: str, offset: int, encoding: str = UTF16) -> int:
    """The 0-based character index of an offset in code units into `line`; an offset inside a
    character (a surrogate pair, a UTF-8 sequence) or past the end lands on the next character
    or the end."""
    if offset <= 0:
        return 0
    if encoding == "utf-32":
        return min(offset, len(line))
    units = 0
    for index, ch in enumerate(line):
        if units >= offset:
            return index
        units += _units(ch, encoding)
    return len(line)


@dataclass
class Document:
    """A file's text with its lines, for converting positions and quoting source lines."""

    text: str
    encoding: str = UTF16  # how the server counts columns

    def __post_init__(self) -> None:
        self.lines = split_lines(self.text)
        self._offsets: list[int] | None = None

    @property
    def line_count(self) -> int:
        """Lines as a person counts them: a final newline does not start one more."""
        n = len(self.lines)
        if n > 1 and self.lines[-1] == "":
            n -= 1
        return n

    def line(self, index: int) -> str:
        """Line `index` (0-based), empty past the end."""
        return self.lines[index] if 0 <= index < len(self.lines) else ""

    def to_wire(self, line: int, column: int) -> dict[str, int]:
        """A 0-based (line, character) position as the protocol's UTF-16 position."""
        return {"line": line, "character": char_to_utf16(self.line(line), column, self.encoding)}

    def from_wire(self, position: dict[str, int]) -> tuple[int, int]:
        """A protocol position as 0-based (line, character)."""
        line = int(position.get("line", 0))
        offset = int(position.get("character", 0))
        return line, utf16_to_char(self.line(line), offset, self.encoding)

    def offset(self, position: dict[str, int]) -> int:
        """The index into `text` of a protocol position (clamped to the document), for applying
        edits."""
        if self._offsets is None:
            offsets = [0]
            for match in _EOL.finditer(self.text):
                offsets.append(match.end())
            self._offsets = offsets
        line = int(position.get("line", 0))
        if line < 0:
            return 0
        if line >= len(self._offsets):
            return len(self.text)
        _, char = self.from_wire(position)
        return self._offsets[line] + min(char, len(self.line(line)))
