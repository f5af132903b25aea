"""Where an edit's `old` lands in a file, and what its `new` becomes there.

Three passes, strictest first; the first pass that finds anything at all wins, so a file that
holds the text verbatim is never matched any other way:

1. exact: `old` byte for byte; `new` is written as sent.
2. edges: `old` without the whitespace around it (an indent kept on a single line, a leading or
   trailing newline). The same padding comes off `new` when `new` carries it, so a `new` that
   deliberately adds a blank line still adds it.
3. indent: an `old` of two lines or more, every line compared without its leading and trailing
   whitespace, whole lines only.

Uniqueness is never relaxed: two loose matches are ambiguous exactly as two exact ones are.

The relaxed passes re-indent `new` to the file's own indentation: each indent of `old` is paired
with the indent of the file line it matched, and a line of `new` whose indent is not one of
those is placed by levels (the model's unit converted to the file's: a tab, or N spaces). A blank
line stays empty. When a relaxed match deletes whole lines (an empty `new`), the line break goes
with them rather than leaving an empty line behind.

When nothing matches, `closest_region` looks for the lines that line up best (the same text
once stripped) and offers them only when at least half of `old`'s non-blank lines do.

Everything here is pure text work, safe to run in a thread; `Document` computes its line views
once, the first time a pass needs them, and shares them between the edits of one call.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from dataclasses import dataclass
from functools import cached_property

WHITESPACE = " \t\r\n\f\v"
INDENT = " \t"
SHOWN_LINES = 10  # line numbers listed in an ambiguity refusal
_COUNT_CAP = 100  # occurrences located one by one; beyond, str.count gives the total
_UNIT_WINDOW = 200  # lines on each side of a match read to learn the file's indent unit
_UNIT_SAMPLE = 10_000  # lines read when there is no indentation near the match


@dataclass(frozen=True)
class Match:
    start: int  # character range of the original text to replace
    end: int
    replacement: str
    line: int  # 1-based line of the matched text's first character
    relaxed: bool  # found by the edges or indent pass


@dataclass(frozen=True)
class Ambiguous:
    count: int
    lines: list[int]  # the first SHOWN_LINES line numbers, 1-based


@dataclass(frozen=True)
class NotFound:
    closest: tuple[int, list[str]] | None  # first line number and the lines, or None


class Document:
    """The file's text (line breaks "\\n"), with the line views the loose passes need."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def lines(self) -> list[str]:
        """`text.split("\\n")`: a file ending with a newline has an empty last item."""
        return self.text.split("\n")

    @cached_property
    def real_line_count(self) -> int:
        if not self.text:
            return 0
        return len(self.lines) - (1 if self.text.endswith("\n") else 0)

    @cached_property
    def stripped(self) -> list[str]:
        return [line.strip(WHITESPACE) for line in self.lines]

    @cached_property
    def stripped_text(self) -> str:
        """Every stripped line between newlines, so that one `find` locates whole lines."""
        return "\n" + "\n".join(self.stripped) + "\n"

    @cached_property
    def unit(self) -> str:
        """The indent unit of the file's beginning (four spaces when it shows none)."""
        return _unit_of(self.lines[:_UNIT_SAMPLE]) or "    "

    @cached_property
    def _line_starts(self) -> list[int]:
        starts = [0]
        for line in self.lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        return starts

    def line_start(self, index: int) -> int:
        """The offset of line `index` (0-based)."""
        return self._line_starts[index]

    def line_of(self, pos: int) -> int:
        """The 1-based line of the character at `pos`."""
        return self.text.count("\n", 0, pos) + 1


def locate(doc: Document, old: str, new: str) -> Match | Ambiguous | NotFound:
    """Where `old` (not empty) lands, by the first pass that finds anything."""
    for find in (_exact, _edges, _indented):
        found = find(doc, old, new)
        if found is not None:
            return found
    return NotFound(closest_region(doc, old))


def _occurrences(haystack: str, needle: str) -> tuple[list[int], int]:
    """The first positions of `needle` (overlapping ones count: "aa" is twice in "aaa") and
    how many there are in all."""
    positions: list[int] = []
    p = haystack.find(needle)
    while p != -1:
        if len(positions) == _COUNT_CAP:
            # a pathological `old` ("}" in a huge file): count the rest in C, without overlaps
            return positions, max(_COUNT_CAP + 1, haystack.count(needle))
        positions.append(p)
        p = haystack.find(needle, p + 1)
    return positions, len(positions)


def _lines_of(doc: Document, positions: list[int]) -> list[int]:
    lines: list[int] = []
    line, last = 1, 0
    for p in positions[:SHOWN_LINES]:
        line += doc.text.count("\n", last, p)
        last = p
        lines.append(line)
    return lines


def _exact(doc: Document, old: str, new: str) -> Match | Ambiguous | None:
    positions, count = _occurrences(doc.text, old)
    if count == 0:
        return None
    if count > 1:
        return Ambiguous(count, _lines_of(doc, positions))
    p = positions[0]
    return Match(p, p + len(old), new, doc.line_of(p), relaxed=False)


def _edges(doc: Document, old: str, new: str) -> Match | Ambiguous | None:
    core = old.strip(WHITESPACE)
    if not core or core == old:
        return None
    positions, count = _occurrences(doc.text, core)
    if count == 0:
        return None
    if count > 1:
        return Ambiguous(count, _lines_of(doc, positions))
    p = positions[0]
    text = doc.text
    start, end = p, p + len(core)
    lead = old[: len(old) - len(old.lstrip(WHITESPACE))]
    trail = old[len(lead) + len(core) :]
    cut = lead.rfind("\n") + 1
    lead_breaks, lead_indent = lead[:cut], lead[cut:]

    rep = new
    if lead_breaks and rep.startswith(lead_breaks):
        rep = rep[len(lead_breaks) :]
    for pad in dict.fromkeys((trail, trail.lstrip(INDENT), trail.rstrip(INDENT))):
        if pad and rep.endswith(pad):
            rep = rep[: -len(pad)]
            break

    line_start = text.rfind("\n", 0, p) + 1
    file_indent = text[line_start:p]
    if lead_indent and lead_indent.strip(INDENT) == "" and file_indent.strip(INDENT) == "":
        # The model wrote this line's indent: the match takes the file's indent too, and `new`
        # is re-indented from the model's indentation to the file's. A `new` that does not
        # carry the indent at all keeps the file's.
        start = line_start
        if rep and rep[0] not in INDENT:
            rep = lead_indent + rep
        pairs = [(lead_indent, file_indent)]
        pairs += [
            (_indent_of(line), _indent_of(line)) for line in core.split("\n")[1:] if line.strip()
        ]
        rep_lines = rep.split("\n")
        model_lines = [lead_indent + core.split("\n")[0], *core.split("\n")[1:], *rep_lines]
        first = doc.line_of(p) - 1
        rep = "\n".join(reindent(rep_lines, pairs, model_lines, doc, first))
    elif lead_indent and rep.startswith(lead_indent):
        rep = rep[len(lead_indent) :]  # spaces before a piece of a line: padding like the rest
    return _finish(doc, start, end, rep, doc.line_of(p))


def _indented(doc: Document, old: str, new: str) -> Match | Ambiguous | None:
    old_lines = old.split("\n")
    nonblank = [k for k, line in enumerate(old_lines) if line.strip(WHITESPACE)]
    if not nonblank:
        return None
    lo, hi = nonblank[0], nonblank[-1]
    if hi == lo:  # one line: the edges pass already forgave what can be forgiven
        return None
    body = old_lines[lo : hi + 1]
    key = [line.strip(WHITESPACE) for line in body]
    needle = "\n" + "\n".join(key) + "\n"
    haystack = doc.stripped_text
    positions, count = _occurrences(haystack, needle)
    if count == 0:
        return None
    # a position is the newline before the first line: the newlines before it number the line
    if count > 1:
        lines: list[int] = []
        line, last = 0, 0
        for p in positions[:SHOWN_LINES]:
            line += haystack.count("\n", last, p)
            last = p
            lines.append(line + 1)
        return Ambiguous(count, lines)
    first = haystack.count("\n", 0, positions[0])
    last_line = first + len(body) - 1
    start = doc.line_start(first)
    end = doc.line_start(last_line) + len(doc.lines[last_line])

    # the padding of `old` (blank lines around it) comes off `new` when `new` carries it
    rep_lines = new.split("\n")
    for _ in range(lo):
        if len(rep_lines) > 1 and not rep_lines[0].strip(WHITESPACE):
            rep_lines.pop(0)
    for _ in range(len(old_lines) - 1 - hi):
        if rep_lines and not rep_lines[-1].strip(WHITESPACE):
            rep_lines.pop()
    pairs = [
        (_indent_of(body[k]), _indent_of(doc.lines[first + k])) for k in range(len(body)) if key[k]
    ]
    rep_lines = reindent(rep_lines, pairs, body + rep_lines, doc, first)
    return _finish(doc, start, end, "\n".join(rep_lines), first + 1)


def _finish(doc: Document, start: int, end: int, rep: str, line: int) -> Match:
    """A relaxed match; one that deletes whole lines takes a line break with it."""
    text = doc.text
    if not rep:
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line_end = len(text) if line_end == -1 else line_end
        if not text[line_start:start].strip(INDENT) and not text[end:line_end].strip(INDENT):
            start, end = line_start, line_end
            if end < len(text):
                end += 1
            elif start > 0:
                start -= 1
    return Match(start, end, rep, line, relaxed=True)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(INDENT))]


def reindent(
    lines: list[str], pairs: list[tuple[str, str]], model_lines: list[str], doc: Document, near: int
) -> list[str]:
    """`lines` of `new`, moved from the model's indentation to the file's.

    `pairs` maps each indent of `old` to the indent of the file line it matched; `model_lines`
    (old and new) teach the model's unit, the file around line `near` (0-based) the file's."""
    if not pairs:
        return lines
    mapping: dict[str, str] = {}
    for m, f in pairs:
        mapping.setdefault(m, f)
    file_unit = _file_unit(doc, near)
    file_width = len(file_unit) if file_unit != "\t" else 4
    model_unit = (
        _paired_unit(pairs, file_width)
        or _space_unit([_indent_of(line) for line in model_lines if line.strip(WHITESPACE)])
        or file_width
    )
    base_model, base_file = min(pairs, key=lambda pair: _level(pair[0], model_unit)[0])
    offset = _level(base_file, file_width)[0] - _level(base_model, model_unit)[0]
    out: list[str] = []
    for line in lines:
        body = line.lstrip(INDENT)
        if not body.strip(WHITESPACE):
            out.append("")
            continue
        indent = line[: len(line) - len(body)]
        if indent in mapping:
            out.append(mapping[indent] + body)
            continue
        level, rest = _level(indent, model_unit)
        out.append(file_unit * max(0, level + offset) + " " * rest + body)
    return out


def _paired_unit(pairs: list[tuple[str, str]], file_width: int) -> int | None:
    """The model's space unit as the matched lines show it: four more spaces in old where the
    file has one more level make a unit of four. The surest evidence, when old has two levels."""
    spaced = sorted({(len(m), _level(f, file_width)[0]) for m, f in pairs if "\t" not in m})
    votes: Counter[int] = Counter()
    for (width, level), (next_width, next_level) in zip(spaced, spaced[1:], strict=False):
        if next_level > level and (next_width - width) % (next_level - level) == 0:
            votes[(next_width - width) // (next_level - level)] += 1
    if not votes:
        return None
    return min(votes, key=lambda unit: (-votes[unit], unit))


def _level(indent: str, unit: int) -> tuple[int, int]:
    """(levels, spaces left over): a tab is a level, and so are `unit` spaces."""
    tabs = indent.count("\t")
    spaces = len(indent) - tabs
    return tabs + spaces // unit, spaces % unit


def _space_unit(indents: list[str]) -> int | None:
    """The unit of space indents, from the steps between consecutive lines: their greatest
    common divisor (a jump of two levels then still reads as two), or, when alignment makes it
    1, the most common step (ties: the smaller)."""
    steps: Counter[int] = Counter()
    previous: int | None = None
    for indent in indents:
        if "\t" in indent:
            previous = None
            continue
        width = len(indent)
        if previous is not None and width > previous:
            steps[width - previous] += 1
        previous = width
    if not steps:
        return None
    divisor = math.gcd(*steps)
    if divisor >= 2:
        return divisor
    return min(steps, key=lambda step: (-steps[step], step))


def _file_unit(doc: Document, near: int) -> str:
    """The file's indent unit near line `near` (0-based); when no line there is indented, the
    unit of the file's beginning; four spaces when that shows none either."""
    return _unit_of(doc.lines[max(0, near - _UNIT_WINDOW) : near + _UNIT_WINDOW]) or doc.unit


def _unit_of(lines: list[str]) -> str | None:
    """A tab when the indented lines mostly start with one, else the spaces of their step."""
    indents = [_indent_of(line) for line in lines if line.strip(WHITESPACE)]
    tabs = sum(1 for indent in indents if indent.startswith("\t"))
    spaces = sum(1 for indent in indents if indent.startswith(" "))
    if not tabs and not spaces:
        return None
    if tabs >= spaces:
        return "\t"
    return " " * (_space_unit(indents) or 4)


def closest_region(doc: Document, old: str) -> tuple[int, list[str]] | None:
    """The file lines that come closest to `old`, as (first line number, lines), when at least
    half of `old`'s non-blank lines line up with them (the same text once stripped)."""
    old_lines = old.split("\n")
    key = [line.strip(WHITESPACE) for line in old_lines]
    nonblank = [k for k, text in enumerate(key) if text]
    if not nonblank:
        return None
    lo, hi = nonblank[0], nonblank[-1]
    key = key[lo : hi + 1]
    wanted: dict[str, list[int]] = {}
    for k, text in enumerate(key):
        if text:
            wanted.setdefault(text, []).append(k)
    votes: Counter[int] = Counter()
    for j, text in enumerate(doc.stripped):
        offsets = wanted.get(text)
        if offsets:
            for k in offsets:
                votes[j - k] += 1
    if not votes:
        return None
    best = max(votes.values())
    if best * 2 < len(nonblank):
        return None
    ties = sorted(start for start, n in votes.items() if n == best)[:50]
    start = ties[0]
    if len(ties) > 1:
        # the same number of lines line up in several places: the closest by the other lines
        def likeness(s: int) -> float:
            total = 0.0
            for k, text in enumerate(key):
                j = s + k
                if 0 <= j < len(doc.stripped):
                    total += difflib.SequenceMatcher(None, text, doc.stripped[j]).ratio()
            return total

        start = max(ties, key=likeness)
    first = max(0, start)
    last = min(doc.real_line_count, start + len(key))
    return first + 1, doc.lines[first:last]
