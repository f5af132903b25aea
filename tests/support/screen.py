"""What a terminal shows after some output: the few controls line mode writes (line ends,
CR, cursor up, clear below, colours skipped) played on a grid of `width` columns that wraps as a
terminal does (a character past the last column starts the next row)."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"\x1b\[([\d;]*)([A-Za-z])|\n|\r|[^\x1b\n\r]")


def screen(output: str, width: int) -> list[str]:
    """The rows `output` leaves, their trailing blanks dropped."""
    rows: list[list[str]] = [[]]
    row = column = 0
    for match in _CONTROL.finditer(output):
        text, number, final = match.group(0), match.group(1), match.group(2)
        if text == "\n":
            row, column = row + 1, 0
        elif text == "\r":
            column = 0
        elif final == "A":
            row = max(0, row - int(number or 1))
        elif final == "J":
            del rows[row + 1 :]
            del rows[row][column:]
        elif final:
            continue  # colours and the like
        else:
            if column >= width:  # the deferred wrap of the last column
                row, column = row + 1, 0
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (column - len(line)))
            line[column : column + 1] = [text]
            column += 1
        while len(rows) <= row:
            rows.append([])
    return ["".join(line).rstrip() for line in rows]
