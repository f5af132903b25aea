"""A server's WorkspaceEdit, turned into new file contents and written to disk.

Servers shape the same rename very differently: one TextEdit per occurrence under `changes`, the
same under `documentChanges`, or (pylsp) one edit replacing the whole file. Counting the edits
as sent would tell the model "1 edit" for a rename that touched ten places, so the count is of
the places that really changed: the identifier-level differences between old and new text.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mm_tui.core.files import read_text, write_target
from mm_tui.tools.lsp.client import uri_to_path
from mm_tui.tools.lsp.positions import UTF16, Document
from mm_tui.tools.write_file import encode, write_text

if TYPE_CHECKING:
    from mm_tui.core.file_access import Gate

_TOKENS = re.compile(r"[\w$]+|\s+|[^\w$\s]")


class EditError(Exception):
    """A WorkspaceEdit that cannot be applied as it stands."""


@dataclass
class FileChange:
    path: Path
    old: str
    new: str
    edits: int  # the places that changed


def text_edits(edit: dict[str, Any]) -> dict[Path, list[dict[str, Any]]]:
    """The TextEdits of a WorkspaceEdit per file, from `documentChanges` when present (the
    protocol says it wins) and from `changes` otherwise."""
    per_file: dict[Path, list[dict[str, Any]]] = {}
    document_changes = edit.get("documentChanges")
    if isinstance(document_changes, list):
        for change in document_changes:
            if not isinstance(change, dict):
                continue
            if "kind" in change:  # create, rename or delete: not declared, not expected
                raise EditError(f"the server asked for a file operation ({change.get('kind')})")
            uri = (change.get("textDocument") or {}).get("uri")
            path = uri_to_path(uri) if isinstance(uri, str) else None
            if path is None:
                continue
            per_file.setdefault(path, []).extend(
                e for e in change.get("edits") or [] if isinstance(e, dict)
            )
        return per_file
    changes = edit.get("changes")
    if isinstance(changes, dict):
        for uri, edits in changes.items():
            path = uri_to_path(uri)
            if path is None or not isinstance(edits, list):
                continue
            per_file.setdefault(path, []).extend(e for e in edits if isinstance(e, dict))
    return per_file


def apply_text_edits(text: str, edits: list[dict[str, Any]], encoding: str = UTF16) -> str:
    """Apply TextEdits (UTF-16 ranges) to `text`. Ranges are resolved against the original text
    and applied from the end, so earlier ones keep their offsets; edits at the same place keep
    the server's order, as the protocol asks."""
    document = Document(text, encoding)
    spans = []
    for order, edit in enumerate(edits):
        rng = edit.get("range") or {}
        start = document.offset(rng.get("start") or {})
        end = document.offset(rng.get("end") or {})
        if end < start:
            raise EditError("an edit's range ends before it starts")
        spans.append((start, end, order, str(edit.get("newText", ""))))
    return _splice(text, spans)


def _splice(text: str, spans: list[tuple[int, int, int, str]]) -> str:
    spans.sort(key=lambda s: (s[0], s[1], s[2]))
    for (_, end_a, _, _), (start_b, _, _, _) in zip(spans, spans[1:], strict=False):
        if start_b < end_a:
            raise EditError("the server's edits overlap")
    out = []
    cursor = 0
    for start, end, _, new_text in spans:
        out.append(text[cursor:start])
        out.append(new_text)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def count_changes(old: str, new: str) -> int:
    """The places where `new` differs from `old`: the changed lines found first (cheap on a
    whole file), then the identifier-level runs inside them."""
    if old == new:
        return 0
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    count = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag == "equal":
            continue
        ta = _TOKENS.findall("".join(a[i1:i2]))
        tb = _TOKENS.findall("".join(b[j1:j2]))
        matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
        count += max(1, sum(1 for op in matcher.get_opcodes() if op[0] != "equal"))
    return max(1, count)


def plan(
    edit: dict[str, Any], read: Callable[[Path], str], encoding: str = UTF16
) -> list[FileChange]:
    """The new contents of every file the edit changes; `read(path)` gives a file's current
    text. Files whose text would not change are left out. Each edit is counted on its own
    (one per occurrence for most servers), a whole-file edit by the places it changes."""
    changes = []
    for path, edits in text_edits(edit).items():
        old = read(path)
        new = apply_text_edits(old, edits, encoding)
        if new == old:
            continue
        document = Document(old, encoding)
        count = 0
        for e in edits:
            rng = e.get("range") or {}
            start = document.offset(rng.get("start") or {})
            end = document.offset(rng.get("end") or {})
            count += count_changes(old[start:end], str(e.get("newText", "")))
        changes.append(FileChange(path, old, new, max(1, count)))
    changes.sort(key=lambda c: str(c.path))
    return changes


def write_in_place(path: Path, text: str, gate: Gate | None = None) -> None:
    """A renamed file keeps its mode, and a symbolic link stays a link to the file rewritten.
    With `gate`, under the sandbox's policy, race-free (`core/file_access.py`): the files of an
    edit are named by the server, which runs the project's code."""
    if gate is not None:
        gate.rewrite(path, encode(text))
        return
    target = write_target(path)
    write_text(target, text, stat.S_IMODE(os.stat(target).st_mode))


async def apply_workspace_edit(
    edit: dict[str, Any], encoding: str, gate: Gate | None = None
) -> bool:
    """A server's own workspace/applyEdit (mm runs no command that asks for one); with `gate`,
    a file the sandbox's policy does not let the tools write refuses the whole edit."""
    read = read_text if gate is None else gate.read_for_writing
    try:
        changes = await asyncio.to_thread(plan, edit, read, encoding)
        for change in changes:
            await asyncio.to_thread(write_in_place, change.path, change.new, gate)
    except (OSError, EditError):
        return False
    return True
