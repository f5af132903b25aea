"""Compare two Textual snapshot SVGs cell by cell: the character, its colour and weight, and the
background of every cell.

Why: a change that only regroups the text of an SVG (one widget drawing what three drew, say)
rewrites every snapshot file, and the pictures look alike to the eye; this says whether a single
cell differs, and which. Exit status 1 when any does.

Run: .venv/bin/python tools/snapshot_cells.py OLD.svg NEW.svg
"""

from __future__ import annotations

import html
import re
import sys

CELL_WIDTH, LINE_HEIGHT, BASELINE = 12.2, 24.4, 20  # Textual's SVG export geometry

Cell = dict[str, str | None]

RECT = re.compile(
    r'<rect fill="(#[0-9a-f]+)" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" '
    r'height="[\d.]+" shape-rendering="crispEdges"/>'
)
TEXT = re.compile(
    r'<text class="(terminal-r\d+)" x="([\d.]+)" y="([\d.]+)" textLength="[\d.]+"[^>]*>([^<]*)</text>'
)
STYLE = re.compile(r"\.(terminal-r\d+) \{ ([^}]*)\}")


def grid(svg: str) -> dict[tuple[int, int], Cell]:
    """Every cell the SVG draws, by (row, column)."""
    styles = dict(STYLE.findall(svg))
    cells: dict[tuple[int, int], Cell] = {}
    for fill, x, y, width in RECT.findall(svg):
        row = round(float(y) / LINE_HEIGHT)
        first = round(float(x) / CELL_WIDTH)
        for column in range(first, first + round(float(width) / CELL_WIDTH)):
            cells.setdefault((row, column), {})["bg"] = fill
    for cls, x, y, text in TEXT.findall(svg):
        row = round((float(y) - BASELINE) / LINE_HEIGHT)
        first = round(float(x) / CELL_WIDTH)
        for offset, char in enumerate(html.unescape(text)):
            cell = cells.setdefault((row, first + offset), {})
            cell["ch"] = char
            cell["fg"] = styles.get(cls)
    return cells


def shown(cell: Cell) -> tuple[str, str | None, str | None]:
    """What a person sees in a cell: a space's colour does not show."""
    char = (cell.get("ch") or " ").replace("\xa0", " ")
    return char, cell.get("fg") if char != " " else None, cell.get("bg")


def differences(old: str, new: str) -> list[tuple[tuple[int, int], tuple, tuple]]:
    a, b = grid(old), grid(new)
    found = []
    for key in sorted(set(a) | set(b)):
        before, after = shown(a.get(key, {})), shown(b.get(key, {}))
        if before != after:
            found.append((key, before, after))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as old, open(argv[1], encoding="utf-8") as new:
        found = differences(old.read(), new.read())
    print(f"{len(found)} cells differ")
    for (row, column), before, after in found[:20]:
        print(f"  row {row}, column {column}: {before} -> {after}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
