"""The write_file tool: replace a file's whole content, or create it with its folders.

The model's output is a one-line headline and the diff with line numbers (diff.py):

- `created <path> (N lines)` for a new file, then the diff of every line added;
- `wrote <path>: +A -D lines` for an existing file, then the diff;
- `<path> unchanged: the content is identical` when there is nothing to write (nothing is).

`ToolResult.diff` carries the plain unified diff, for the window and ACP.

The write goes to a temporary file in the same folder, flushed to disk, then renamed over the
target: a crash at any moment leaves either the old file or the new one, never half of one. The
original file's mode is kept; a new file gets the usual mode the umask allows. Writing through a
symbolic link writes the file it points to and keeps the link.

Unless the `sandbox` setting is off, the file must lie where the sandbox lets commands write and
in no denied item, judged where it really is (`core/file_access.py`); else nothing is read or
written, no permission is asked, and the model gets `[error: refused by mm's sandbox: …]`.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from mm_tui.core import files
from mm_tui.core.frozen import mutable
from mm_tui.tools import schemas
from mm_tui.tools.base import (
    NothingToAsk,
    Tool,
    ToolContext,
    ToolResult,
    lazy_args,
    truncate,
)

if TYPE_CHECKING:
    from mm_tui.core.file_access import Gate, Place, SandboxRefusal
    from mm_tui.tools.args import WriteFileArgs
    from mm_tui.tools.diff import Diff


def encode(content: str) -> bytes:
    """UTF-8, with a lone surrogate (JSON allows "\\ud800") turned into "?" rather than a crash."""
    return content.encode("utf-8", errors="replace")


class Refused(Exception):  # noqa: N818 - a message for the model, not an error of mm's
    """A failure worth a message to the model rather than a traceback."""


class TooLarge(Exception):  # noqa: N818 - a file over a tool's limit, for its own message
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def read_regular(
    path: str, target: Path | Place, *, limit: int | None = None
) -> tuple[bytes, int] | None:
    """The bytes and mode of a regular file, None when it does not exist; `Refused` for a
    folder, a device, a pipe (reading one would block, /dev/zero never end) or no permission;
    `TooLarge` for a file of more than `limit` bytes, of which no more than that is read.
    `path` is the name the model gave, for the messages; `target` the file, or its checked
    `Place` (`core/file_access.py`). Other OSErrors are raised."""
    # here: the sandbox loads at the first call, not at start-up
    from mm_tui.core.file_access import Place

    try:
        if isinstance(target, Place):
            if not target.exists:
                return None
            if limit is None:
                return target.read()
            opened = files.open_regular(target.name, dir_fd=target.folder)
        elif limit is None:
            return files.read_regular(target)
        else:
            opened = files.open_regular(target)
        with opened as f:
            info = os.fstat(f.fileno())
            if info.st_size > limit:
                raise TooLarge(info.st_size)
            data = f.read(limit + 1)  # a file that grew since
            if len(data) > limit:
                raise TooLarge(max(len(data), os.fstat(f.fileno()).st_size))
            return data, stat.S_IMODE(info.st_mode)
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise Refused(f"{path}: permission denied") from exc
    except IsADirectoryError as exc:
        raise Refused(f"{path} is a directory, not a file") from exc
    except files.NotRegularFile as exc:
        raise Refused(f"{path} is not a regular file (a device, socket or pipe)") from exc


def file_gate(ctx: ToolContext) -> Gate:
    """The way of the file tools to their files in this context: under the sandbox's policy
    unless the `sandbox` setting is off (`core/file_access.py`)."""
    # here: the sandbox loads at the first call, not at start-up
    from mm_tui.core.file_access import gate

    return gate(ctx.settings.sandbox_config(), ctx.cwd)


def refused_text(exc: SandboxRefusal) -> ToolResult:
    return ToolResult(exc.text, status="error")


@mutable
class _Plan:
    old: str | None  # None: the file does not exist yet
    mode: int | None  # the mode to keep, None for a new file
    diff: Diff
    unchanged: bool = False


def _plan(ctx: ToolContext, path: str, content: str) -> _Plan:
    from mm_tui.tools.diff import compute_diff  # at the first call: not needed to start

    try:
        with file_gate(ctx).place(path, write=True) as place:
            found = read_regular(path, place)
    except FileNotFoundError:  # its folder does not exist yet (a refusal was said before)
        found = None
    if found is None:
        return _Plan(None, None, compute_diff(None, content))
    data, mode = found
    # bytes that are not UTF-8 show as U+FFFD in the diff; the comparison stays on bytes
    old = data.decode("utf-8", errors="replace")
    unchanged = data == encode(content)
    return _Plan(old, mode, compute_diff(old, content), unchanged)


def write_text(target: Path, content: str, mode: int | None) -> None:
    """`content` written to `target` in one step (`core.files.write_atomically`), its missing
    folders created first; `mode` the bits to keep, None for a new file's usual ones. For mm's
    own edits (a language server's rename, already judged); a tool's write is `save`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomically(target, encode(content), mode=mode)


def save(gate: Gate, path: str, content: str, mode: int | None) -> None:
    """`content` written in one step to the file `path` leads to (a symbolic link followed and
    kept), its missing folders made first, all under the gate's policy and race-free
    (`Gate.place`); `mode` the bits to keep, None for a new file's usual ones. Raises
    `SandboxRefusal` for what the policy refuses."""
    with gate.place(path, write=True, make_folders=True) as place:
        place.write(encode(content), mode)


class WriteFileTool(Tool):
    name = "write_file"
    kind = "edit"
    counter = "file_ops"
    Args = lazy_args("WriteFileArgs")
    parameters_schema = schemas.WRITE_FILE

    def description(self) -> str:
        return (
            "Create a file, or replace the whole content of an existing one, with `content`. "
            "Missing folders are created. The result shows the diff with line numbers."
        )

    def title(self, args: WriteFileArgs) -> str:
        return args.path

    def display(self, args: WriteFileArgs) -> str:
        return f"📝 write_file: {args.path}"

    def needs_permission(self, args: WriteFileArgs) -> bool:
        return True

    def locations(self, args: WriteFileArgs, ctx: ToolContext) -> tuple[str, ...]:
        return (ctx.location(args.path),)

    async def permission_details(self, args: WriteFileArgs, ctx: ToolContext) -> str:
        try:
            plan = await asyncio.to_thread(_plan, ctx, args.path, args.content)
        except (Refused, OSError):
            raise NothingToAsk from None
        if plan.unchanged:
            raise NothingToAsk
        if plan.diff.empty:  # a new, empty file: a diff of nothing says nothing
            return f"--- /dev/null\n+++ b/{args.path}\n"
        return plan.diff.unified(args.path)

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        # here: the sandbox loads at the first call, not at start-up
        from mm_tui.core.file_access import SandboxRefusal

        path = args.path
        try:
            plan = await asyncio.to_thread(_plan, ctx, path, args.content)
            if plan.unchanged:
                return ToolResult(f"{path} unchanged: the content is identical")
            await asyncio.to_thread(save, file_gate(ctx), path, args.content, plan.mode)
        except Refused as exc:
            return ToolResult(str(exc), status="error")
        except SandboxRefusal as exc:
            return refused_text(exc)
        except PermissionError:
            return ToolResult(f"{path}: permission denied", status="error")
        except OSError as exc:
            return ToolResult(f"{path}: cannot write: {exc.strerror or exc}", status="error")

        diff = plan.diff
        if plan.old is None:
            from mm_tui.core.text import counted
            from mm_tui.tools.diff import count_lines

            headline = f"created {path} ({counted(count_lines(args.content), 'line')})"
            unified = diff.unified(path) or f"--- /dev/null\n+++ b/{path}\n"
        else:
            headline = f"wrote {path}: +{diff.added} -{diff.deleted} lines"
            unified = diff.unified(path)
        numbered = diff.numbered()
        output = f"{headline}\n{numbered}" if numbered else headline
        return ToolResult(truncate(output, ctx.settings.max_output), diff=unified)
