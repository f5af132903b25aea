"""The rename action: planned from the server's answer before anything is written, then written.

The person allowing a rename sees its diff first, so the plan (every file's new text) is worked
out while asking, kept, and written as shown once allowed; it is asked for again only when the
call or a file changed in between.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import mm_tui.tools.lsp.edits as edit_ops
from mm_tui.core.file_access import SandboxRefusal
from mm_tui.core.files import read_text
from mm_tui.tools.base import ToolContext, ToolResult
from mm_tui.tools.diff import compute_diff
from mm_tui.tools.lsp.args import Call
from mm_tui.tools.lsp.asking import CallFailed, Opened, ask, show_path
from mm_tui.tools.lsp.manager import Server
from mm_tui.tools.write_file import file_gate


@dataclass
class RenamePlan:
    key: tuple[Any, ...]
    changes: list[edit_ops.FileChange]
    server: Server


def rename_key(call: Call, ctx: ToolContext) -> tuple[Any, ...]:
    return (
        str(call.path),
        call.symbol,
        call.new_name,
        call.line,
        call.column,
        call.hint,
        str(ctx.cwd),
    )


def needs_new_name(call: Call) -> CallFailed:
    fields: dict[str, Any] = {"action": "rename", "path": call.raw_path}
    if call.symbol:
        fields["symbol"] = call.symbol
    if call.line:
        fields["line"] = call.line
    if call.column:
        fields["column"] = call.column
    shown = ", ".join(
        f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()
    )
    return CallFailed(
        f'[lsp: rename needs new_name — call lsp again with {{{shown}, "new_name": '
        '"<the new identifier>"}; do not use edit_file for a rename]'
    )


def check_new_name(call: Call) -> None:
    """Before any server is started: a rename without a new name, or to the same one, cannot
    be right."""
    if not call.new_name:
        raise needs_new_name(call)
    if call.new_name == call.symbol:
        raise CallFailed(
            f'[lsp: the new name is the same as the symbol "{call.symbol}": nothing to rename]'
        )


async def plan_rename(call: Call, ctx: ToolContext, opened: Opened) -> RenamePlan:
    server = opened.server
    result, (line, column) = await ask(
        call,
        opened,
        "textDocument/rename",
        {"newName": call.new_name},
        lambda r: isinstance(r, dict) and bool(r.get("changes") or r.get("documentChanges")),
    )
    # Each file the server named judged as a write of the tools: refused before it is shown.
    read = file_gate(ctx).read_for_writing
    try:
        changes = await asyncio.to_thread(edit_ops.plan, result, read, opened.client.encoding)
    except edit_ops.EditError as exc:
        raise CallFailed(f"[lsp: {server.config.name}: rename failed: {exc}]") from None
    except SandboxRefusal as exc:
        raise CallFailed(f"[lsp: {server.config.name}: rename failed: {exc.reason}]") from None
    except OSError as exc:
        raise CallFailed(f"[lsp: {server.config.name}: rename failed: {exc}]") from None
    if not changes:
        raise CallFailed(
            f"[lsp: {server.config.name}: rename changed nothing at "
            f"{call.raw_path}:{line + 1}:{column + 1}]"
        )
    return RenamePlan(rename_key(call, ctx), changes, server)


async def still_planned(plan: RenamePlan, call: Call, ctx: ToolContext) -> bool:
    """Whether the plan shown is the one to write: made for this call, and every file still
    as it was read then."""
    return plan.key == rename_key(call, ctx) and await asyncio.to_thread(
        _still_current, plan.changes
    )


def _still_current(changes: list[edit_ops.FileChange]) -> bool:
    try:
        return all(read_text(c.path) == c.old for c in changes)
    except OSError:
        return False


async def write_changes(
    changes: list[edit_ops.FileChange], ctx: ToolContext
) -> list[edit_ops.FileChange]:
    """The files written, in order; a failure says how many were already written."""
    written: list[edit_ops.FileChange] = []
    gate = file_gate(ctx)
    for change in changes:
        try:
            await asyncio.to_thread(edit_ops.write_in_place, change.path, change.new, gate)
        except OSError as exc:
            done = f" ({len(written)} file(s) already written)" if written else ""
            why = exc.reason if isinstance(exc, SandboxRefusal) else exc.strerror or exc
            raise CallFailed(
                f"[lsp: rename failed: cannot write {show_path(change.path, ctx)}: {why}{done}]"
            ) from None
        written.append(change)
    return written


def renamed(call: Call, written: list[edit_ops.FileChange], ctx: ToolContext) -> ToolResult:
    total = sum(c.edits for c in written)
    lines = [f"renamed to {call.new_name}: {total} edit(s) in {len(written)} file(s)"]
    lines += [f"{show_path(c.path, ctx)}: {c.edits} edit(s)" for c in written]
    return ToolResult("\n".join(lines), diff=rename_diff(written, ctx))


def rename_diff(changes: list[edit_ops.FileChange], ctx: ToolContext) -> str:
    return "".join(compute_diff(c.old, c.new).unified(show_path(c.path, ctx)) for c in changes)
