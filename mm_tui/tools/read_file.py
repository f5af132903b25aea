"""The read_file tool: a file's lines, or a range of them, optionally numbered.

Lines are counted on "\\n" only, as editors and `grep -n` count them, so that the numbers a model
reads here are the ones it finds everywhere else.

Numbered format: `<n> │ <line>`, the number right-aligned to the width of the last number shown
(`  9 │ x`, ` 10 │ y`), the same column edit_file's refusals and diff.py use.

Every failure is a one-line message returned to the model with status "error"; none raises:

- missing:        `<path> does not exist. Create it with write_file`
- a directory:    `<path> is a directory, not a file`
- unreadable:     `<path>: permission denied`
- not a file:     `<path> is not a regular file (a device, socket or pipe)`
- binary (a NUL byte): `<path> is a binary file (N bytes); read_file reads text files only`
- not UTF-8:      `<path> is not UTF-8 text (invalid byte at line L); read_file reads UTF-8 text only`
- empty file:     `<path> is empty` (status "ok")
- start too far:  `start line S is beyond the end of <path> (N lines)`
- end < start:    `end line E is before start line S`

An `end` beyond the last line simply reads to the end; a negative `start` or `end` counts as 0.

A file is read in blocks, only as far as the range goes (`read_lines`): line 1 of a file of
gigabytes costs one block, and memory stays a few blocks whatever the range (what exceeds
`maxOutput` is counted, not kept, for the truncation marker). "Binary" and "not UTF-8" are judged
on the first 10 MiB in any case, so a file up to that size gets the verdict a whole reading gave;
beyond, on the bytes the range needed.

Unless the `sandbox` setting is off, a file the sandbox's policy keeps from commands (a secret of
the deny list, a terminal), named outright or reached through a link, is refused before it is
opened: `[error: refused by mm's sandbox: <path> is a secret mm's commands and tools may not
read. …]` (`core/file_access.py`).
"""

from __future__ import annotations

import asyncio
import codecs
import os
import sys
from typing import TYPE_CHECKING, BinaryIO

from mm_tui.core import files
from mm_tui.tools import schemas
from mm_tui.tools.base import Tool, ToolContext, ToolResult, lazy_args

if TYPE_CHECKING:
    from mm_tui.core import file_access
    from mm_tui.tools.args import ReadFileArgs


# A file is read in blocks of this size, and only as far as the range asks (and the first
# CHECKED bytes in any case): line 1 of a file of gigabytes costs one block, not the whole file.
BLOCK = 1 << 20
# What is always read of a file to judge it (a NUL byte: binary; an invalid byte: not UTF-8),
# whatever the range: a file up to this size is judged whole, so its verdict never depends on
# the range asked. Beyond it, only the bytes read for the range are judged.
CHECKED = 10 << 20


def number_lines(lines: list[str], first: int, last: int | None = None) -> list[str]:
    """`<n> │ <line>`, the numbers right-aligned to the width of `last` (the number of the last
    line shown, which may be beyond `lines` when they are the kept part of a longer range)."""
    width = len(str(first + len(lines) - 1 if last is None else last))
    return [f"{first + i:>{width}} │ {line}" for i, line in enumerate(lines)]


class _Scan:
    """The lines `first` to `want` of a file read block by block (`want` 0: to the end), kept up
    to `keep` characters and only counted beyond: memory stays a few blocks for any file."""

    def __init__(self, first: int, want: int, keep: int) -> None:
        self.first = first
        self.want = want or sys.maxsize
        self.keep = keep
        self.line = 1  # the number of the line the next character belongs to
        self.last = ""  # the last character seen
        self.kept: list[str] = []  # the range's text from its first character, up to `keep`
        self.kept_chars = 0
        self.chars = 0  # the range's characters, line breaks between its lines excepted
        self.reached = False  # line `want` is complete (its line break seen)
        self.done = False  # ... and something follows it: the file has more lines than `want`

    def feed(self, text: str) -> None:
        if not text:
            return
        self.last = text[-1]
        if self.reached:  # after line `want`: only counted
            self.done = True
            self.line += text.count("\n")
            return
        i, n = 0, len(text)
        if self.line < self.first:
            breaks = text.count("\n")
            if self.line + breaks < self.first:
                self.line += breaks
                return
            # the start of line `first`: after its (first - line)th break
            rest = text.split("\n", self.first - self.line)[-1]
            i = n - len(rest)
            self.line = self.first
        # text[i:] starts in the range: it runs to line `want`'s break, or to its end
        needed = self.want - self.line + 1  # breaks still inside the range, `want`'s included
        breaks = text.count("\n", i)
        stop = n
        if breaks >= needed:
            rest = text[i:].split("\n", needed)[-1]
            stop = n - len(rest) - 1  # line `want`'s break
            breaks = needed
        inside = text[i:stop]
        self.chars += len(inside) - inside.count("\n")
        if self.kept_chars < self.keep:
            piece = inside[: self.keep - self.kept_chars]
            self.kept.append(piece)
            self.kept_chars += len(piece)
        self.line += breaks
        if stop < n:
            self.reached = True
            if stop + 1 < n:
                self.done = True
                self.line += text.count("\n", stop + 1)


def read_lines(
    f: BinaryIO,
    path: str,
    args: ReadFileArgs,
    limit: int,
    *,
    block: int = BLOCK,
    checked: int = CHECKED,
) -> ToolResult:
    """The result of read_file for the open file `f`, read as far as needed (see BLOCK) and
    truncated to `limit` characters."""
    first = max(args.start, 0) or 1
    last = max(args.end, 0)
    # to say "end is before start" the line `first` must be known to exist or not
    scan = _Scan(first, max(last, first) if last else 0, limit + 1)
    carry = b""  # the start of a character cut by the end of a block
    read = 0
    nul = False
    bad: int | None = None  # the line of the first byte that is not UTF-8
    ended = False
    while not ((scan.done or bad is not None) and read >= checked):
        data = f.read(block)
        if not data:
            ended = True
            break
        read += len(data)
        if b"\0" in data:
            nul = True
            break
        if bad is not None:
            continue  # only a NUL byte can still change the verdict
        data = carry + data
        try:
            text, used = codecs.utf_8_decode(data, "strict", False)
        except UnicodeDecodeError as exc:
            bad = scan.line + data.count(b"\n", 0, exc.start)
            continue
        carry = data[used:]
        scan.feed(text)
    if ended and carry and bad is None:
        bad = scan.line  # a character cut by the end of the file

    if nul:
        size = os.fstat(f.fileno()).st_size
        return _error(f"{path} is a binary file ({size} bytes); read_file reads text files only")
    if bad is not None:
        return _error(
            f"{path} is not UTF-8 text (invalid byte at line {bad}); read_file reads UTF-8 text only"
        )
    if ended and read == 0:
        return ToolResult(f"{path} is empty")

    final_newline = scan.last == "\n"
    total = (scan.line - 1 if final_newline else scan.line) if ended else sys.maxsize
    if first > total:
        from mm_tui.core.text import counted

        return _error(f"start line {first} is beyond the end of {path} ({counted(total, 'line')})")
    if last and last < first:
        return _error(f"end line {last} is before start line {first}")
    end = min(last or total, total)

    count = end - first + 1
    lines = "".join(scan.kept).split("\n")[:count]
    shown_newline = end == total and final_newline
    size = scan.chars + count - 1 + (1 if shown_newline else 0)
    if args.numbered:
        lines = number_lines(lines, first, end)
        size += count * len(f"{end} │ ")
    output = "\n".join(lines)
    if size <= limit:
        return ToolResult(output + ("\n" if shown_newline else ""))
    # as base.truncate words it, counted on the whole output
    return ToolResult(
        output[:limit] + f"\n[... output truncated: {size - limit} more characters ...]"
    )


def _read(gate: file_access.Gate, path: str, args: ReadFileArgs, limit: int) -> ToolResult:
    with gate.open(path) as f:
        return read_lines(f, path, args, limit)


class ReadFileTool(Tool):
    name = "read_file"
    kind = "read"
    counter = "file_ops"
    Args = lazy_args("ReadFileArgs")
    parameters_schema = schemas.READ_FILE

    def description(self) -> str:
        return (
            "Read a text file, whole or from line `start` to line `end` (1-based, inclusive). "
            "Set `numbered` to see line numbers. Long output is truncated: read large files in "
            "ranges."
        )

    def title(self, args: ReadFileArgs) -> str:
        return args.path

    def display(self, args: ReadFileArgs) -> str:
        return f"📄 read_file: {args.path}"

    def locations(self, args: ReadFileArgs, ctx: ToolContext) -> tuple[str, ...]:
        return (ctx.location(args.path),)

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        # here: the sandbox loads at the first call, not at start-up
        from mm_tui.core import file_access

        path = args.path
        gate = file_access.gate(ctx.settings.sandbox_config(), ctx.cwd)
        try:
            # in a thread: a large file must not freeze the window, which shares this loop
            return await asyncio.to_thread(_read, gate, path, args, ctx.settings.max_output)
        except file_access.SandboxRefusal as exc:
            return _error(exc.text)
        except FileNotFoundError:
            return _error(f"{path} does not exist. Create it with write_file")
        except IsADirectoryError:
            return _error(f"{path} is a directory, not a file")
        except PermissionError:
            return _error(f"{path}: permission denied")
        except files.NotRegularFile:
            return _error(f"{path} is not a regular file (a device, socket or pipe)")
        except OSError as exc:
            return _error(f"{path}: cannot read: {exc.strerror or exc}")


def _error(message: str) -> ToolResult:
    return ToolResult(message, status="error")
