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

Unless the `sandbox` setting is off, a file the sandbox's policy keeps from commands (a secret of
the deny list, a terminal), named outright or reached through a link, is refused before it is
opened: `[error: refused by mm's sandbox: <path> is a secret mm's commands and tools may not
read. …]` (`core/file_access.py`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from mm_tui.core import file_access, files
from mm_tui.tools import schemas
from mm_tui.tools.base import Tool, ToolContext, ToolResult, lazy_args, truncate

if TYPE_CHECKING:
    from mm_tui.tools.args import ReadFileArgs


def number_lines(lines: list[str], first: int) -> list[str]:
    width = len(str(first + len(lines) - 1))
    return [f"{first + i:>{width}} │ {line}" for i, line in enumerate(lines)]


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
        path = args.path
        gate = file_access.gate(ctx.settings.sandbox_config(), ctx.cwd)
        try:
            # in a thread: a large file must not freeze the window, which shares this loop
            data = (await asyncio.to_thread(gate.read, path)).data
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

        if b"\0" in data:
            return _error(
                f"{path} is a binary file ({len(data)} bytes); read_file reads text files only"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            return _error(
                f"{path} is not UTF-8 text (invalid byte at line {line}); "
                "read_file reads UTF-8 text only"
            )
        if not text:
            return ToolResult(f"{path} is empty")

        lines = text.split("\n")
        final_newline = lines[-1] == ""
        if final_newline:
            lines.pop()
        total = len(lines)
        start = max(args.start, 0) or 1
        end = max(args.end, 0) or total
        if start > total:
            from mm_tui.core.text import counted

            lines = counted(total, "line")
            return _error(f"start line {start} is beyond the end of {path} ({lines})")
        if end < start:
            return _error(f"end line {end} is before start line {start}")
        end = min(end, total)

        shown = lines[start - 1 : end]
        if args.numbered:
            shown = number_lines(shown, start)
        output = "\n".join(shown)
        if end == total and final_newline:
            output += "\n"
        return ToolResult(truncate(output, ctx.settings.max_output))


def _error(message: str) -> ToolResult:
    return ToolResult(message, status="error")
