"""Unified diffs of a file's old and new text, plain and with line numbers.

The plain form travels to the window (coloured) and to ACP; the numbered form goes to the model,
which needs real line numbers to aim its next edit. Both come from one computation so that they
can never disagree. Lines are split on "\\n" only, as editors and `grep -n` count them (Python's
`splitlines` would also split on form feeds and other separators and shift the numbers).

Numbered format, one line per diff line, `w` the width of the largest number shown:

    @@ -3,3 +3,3 @@
    3   │ unchanged line          (context: its number in the new file)
    4 - │ removed line            (removed: its number in the old file)
    4 + │ added line              (added: its number in the new file)
        \\ No newline at end of file
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import NamedTuple

NO_EOL = "\\ No newline at end of file"


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each keeping its "\\n"; the last one may lack it."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def count_lines(text: str) -> int:
    """Lines as a person counts them: a last line without a newline still counts."""
    return len(split_lines(text))


class DiffLine(NamedTuple):
    sign: str  # " ", "-" or "+"
    old_no: int | None  # 1-based number in the old text, None for an added line
    new_no: int | None  # 1-based number in the new text, None for a removed line
    text: str  # without its newline
    eol: bool  # whether the line ended with a newline


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: list[DiffLine]

    def header(self) -> str:
        return (
            f"@@ -{_range(self.old_start, self.old_len)} +{_range(self.new_start, self.new_len)} @@"
        )


def _range(start: int, length: int) -> str:
    # The unified format's convention: an empty range names the line before it.
    if length == 1:
        return str(start)
    if length == 0:
        start -= 1
    return f"{start},{length}"


@dataclass(frozen=True)
class Diff:
    hunks: list[Hunk] = field(default_factory=list)
    added: int = 0
    deleted: int = 0
    created: bool = False  # the old text did not exist: a new-file diff

    @property
    def empty(self) -> bool:
        return not self.hunks

    @property
    def first_changed_line(self) -> int | None:
        """The first line that changed, numbered in the new text (where the model will look)."""
        for hunk in self.hunks:
            for line in hunk.lines:
                if line.sign == "+":
                    return line.new_no
                if line.sign == "-":
                    # a pure deletion: the line now standing where the removed one was
                    return max(1, line.old_no - hunk.old_start + hunk.new_start)  # type: ignore[operator]
        return None

    def unified(self, path: str) -> str:
        """The plain unified diff, git-style headers, ending with a newline (empty if no change)."""
        if self.empty:
            return ""
        out = [f"--- {'/dev/null' if self.created else 'a/' + path}", f"+++ b/{path}"]
        for hunk in self.hunks:
            out.append(hunk.header())
            for line in hunk.lines:
                out.append(line.sign + line.text)
                if not line.eol:
                    out.append(NO_EOL)
        return "\n".join(out) + "\n"

    def numbered(self) -> str:
        """The diff with line numbers, for the model; no trailing newline (empty if no change)."""
        if self.empty:
            return ""
        width = max(
            len(str(n))
            for hunk in self.hunks
            for line in hunk.lines
            for n in (line.old_no, line.new_no)
            if n is not None
        )
        out: list[str] = []
        for hunk in self.hunks:
            out.append(hunk.header())
            for line in hunk.lines:
                number = line.old_no if line.sign == "-" else line.new_no
                out.append(f"{number:>{width}} {line.sign} │ {line.text}")
                if not line.eol:
                    out.append(" " * (width + 3) + NO_EOL)
        return "\n".join(out)


def compute_diff(old: str | None, new: str, context: int = 3) -> Diff:
    """The diff from `old` (None: the file did not exist) to `new`, with `context` lines around
    each change."""
    a = split_lines(old or "")
    b = split_lines(new)
    hunks: list[Hunk] = []
    added = deleted = 0
    if not a or not b:  # a new, emptied or unchanged empty file: no matching to do
        groups = [[("replace", 0, len(a), 0, len(b))]] if a or b else []
    else:
        # autojunk (difflib's default) keeps very common lines (blank, "}") from making the
        # matching quadratic: 150 s instead of 0.1 s on a 20,000-line file without it.
        groups = difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(context)
    for group in groups:
        lines: list[DiffLine] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    t = b[j1 + k]
                    lines.append(
                        DiffLine(" ", i1 + k + 1, j1 + k + 1, t.rstrip("\n"), t.endswith("\n"))
                    )
                continue
            for k in range(i1, i2):
                t = a[k]
                lines.append(DiffLine("-", k + 1, None, t.rstrip("\n"), t.endswith("\n")))
            for k in range(j1, j2):
                t = b[k]
                lines.append(DiffLine("+", None, k + 1, t.rstrip("\n"), t.endswith("\n")))
            deleted += i2 - i1
            added += j2 - j1
        first, last = group[0], group[-1]
        hunks.append(
            Hunk(
                old_start=first[1] + 1,
                old_len=last[2] - first[1],
                new_start=first[3] + 1,
                new_len=last[4] - first[3],
                lines=lines,
            )
        )
    return Diff(hunks=hunks, added=added, deleted=deleted, created=old is None)
