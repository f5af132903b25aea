"""tools/snapshot_cells.py: the cell-by-cell comparison used to check that a snapshot change is
only a regrouping of the SVG's text."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from snapshot_cells import differences, grid  # noqa: E402

SNAPSHOTS = ROOT / "tests" / "snapshots"


def read(name: str) -> str:
    return (SNAPSHOTS / f"{name}.svg").read_text(encoding="utf-8")


def test_the_same_picture_has_no_differences_and_other_pictures_do() -> None:
    folded = read("test_tool_lines_folded")
    assert len(grid(folded)) > 2000  # every cell of a 100x30 screen, and then some
    assert differences(folded, folded) == []
    assert len(differences(folded, read("test_tool_lines_unfolded"))) > 100


def test_text_split_in_two_elements_is_the_same_picture_and_a_changed_letter_is_not() -> None:
    svg = read("test_welcome_on_the_demo_model")
    match = re.search(
        r'<text class="(terminal-r\d+)" x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)"([^>]*)>([^<&]{6,})</text>',
        svg,
    )
    assert match is not None
    cls, x, y, _length, rest, text = match.groups()
    half = len(text) // 2
    second_x = f"{float(x) + 12.2 * half:.1f}"
    split = (
        f'<text class="{cls}" x="{x}" y="{y}" textLength="{12.2 * half:.1f}"{rest}>{text[:half]}</text>'
        f'<text class="{cls}" x="{second_x}" y="{y}" textLength="1"{rest}>{text[half:]}</text>'
    )
    assert differences(svg, svg.replace(match.group(0), split, 1)) == []
    changed = match.group(0).replace(text, "X" + text[1:])
    ((_cell, before, after),) = differences(svg, svg.replace(match.group(0), changed, 1))
    assert before[0] == text[0] and after[0] == "X"
