"""The transcript view's memory of its items at one width: each item's lines when rendered, its
height (measured, or estimated from its text), and the line of the content where it starts.

Why a cache with a budget: a session of ten thousand tool calls cannot hold every item's lines
(hundreds of MB), and need not, since only what is on screen is painted. Rendered lines are kept
for at most `budget` lines; beyond it the oldest-kept items give theirs back, keeping their
heights, and render again when they come back into view. Heights of items never rendered are
estimates, corrected when they are measured, so loading a long session, a resize and Ctrl+O
cost what the screen costs.

Plain data with no Textual: `Strip` is only the type of what is kept.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.strip import Strip

HELD_LINES = 4000  # rendered lines kept; beyond, the oldest items give theirs back


class LineCache:
    """Per item index (an item's `id - 1`), at the width the view last laid out: its lines or
    None (not rendered, or given back), the item version they show, whether its height is
    measured or estimated, its height, and its first line. The lists always have one entry
    per item the view knows of."""

    def __init__(self, budget: int = HELD_LINES) -> None:
        self.budget = budget
        self.lines: list[list[Strip] | None] = []
        self.versions: list[int] = []
        self.measured: list[bool] = []
        self.heights: list[int] = []
        self.offsets: list[int] = []
        self._held: OrderedDict[int, int] = OrderedDict()  # items holding lines, oldest first
        self._held_lines = 0

    def __len__(self) -> int:
        return len(self.heights)

    def clear(self) -> None:
        """Know of no item: the store was emptied."""
        self.restart([])

    def restart(self, heights: list[int]) -> None:
        """Every item unrendered, at the given estimated heights: the width changed."""
        count = len(heights)
        self.lines = [None] * count
        self.versions = [-1] * count
        self.measured = [False] * count
        self.heights = heights
        self.offsets = []
        self._held.clear()
        self._held_lines = 0

    def extend(self, heights: Iterable[int]) -> None:
        """Items added at the end, at estimated heights (offsets: `reflow` from the first)."""
        for height in heights:
            self.lines.append(None)
            self.versions.append(-1)
            self.measured.append(False)
            self.heights.append(height)

    def drop(self, index: int) -> None:
        """Forget an item's lines: it changed. Its height stays until measured or estimated
        again."""
        held = self._held.pop(index, None)
        if held is not None:
            self._held_lines -= held
        self.lines[index] = None
        self.measured[index] = False

    def keep(self, index: int, lines: list[Strip], version: int) -> None:
        """An item's lines, just rendered: its height is measured (`heights` takes it when the
        view lays out again). Gives back the oldest others' lines beyond the budget (their
        heights stay known)."""
        self.lines[index] = lines
        self.versions[index] = version
        self.measured[index] = True
        previous = self._held.pop(index, None)
        if previous is not None:
            self._held_lines -= previous
        self._held[index] = len(lines)
        self._held_lines += len(lines)
        while self._held_lines > self.budget and len(self._held) > 1:
            oldest, count = self._held.popitem(last=False)
            self._held_lines -= count
            self.lines[oldest] = None

    def reflow(self, start: int) -> None:
        """Offsets from item `start` on, after heights changed."""
        del self.offsets[start:]
        if start >= len(self.heights):
            return
        initial = self.offsets[start - 1] + self.heights[start - 1] if start > 0 else 0
        self.offsets.extend(itertools.accumulate(self.heights[start:-1], initial=initial))

    @property
    def total(self) -> int:
        """Lines of the whole content, as laid out."""
        return (self.offsets[-1] + self.heights[-1]) if self.heights else 0

    def index_at(self, y: int) -> int | None:
        """The item at a line of the content (the last one past the end); None when there are
        no items."""
        index = bisect_right(self.offsets, y) - 1
        return index if 0 <= index < len(self.offsets) else None

    def between(self, top: int, bottom: int) -> range:
        """Indices of the items that intersect the lines `top` to `bottom` (exclusive)."""
        if not self.offsets:
            return range(0)
        first = max(0, bisect_right(self.offsets, top) - 1)
        last = min(len(self.offsets), bisect_right(self.offsets, bottom))
        return range(first, max(first, last))
