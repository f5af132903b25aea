"""The edit_file tool: replace pieces of an existing file, each found once, all or nothing.

Every edit is resolved against the original text (never against the result of another edit),
by the passes of edit_match.py; then, when none is refused and no two touch the same text, all
of them are applied at once and the file is written atomically (write_file's writer).

Output to the model, a headline then the diff with line numbers (diff.py):

    edited <path>: 2 edits applied, +3 -1 lines, first changed line 12 · 1 matched ignoring whitespace
    dry run, nothing written — <path>: 2 edits would apply, +3 -1 lines, first changed line 12
    <path> unchanged: the edits change nothing

(the ` · N matched ignoring whitespace` part only when a relaxed pass was needed). Refusals, each
with status "error", the file left untouched:

    <path>: edit #1: old text appears 2 times (lines 11, 20) — to change ONE of them, ...
    <path>: edit #1: old text not found — it must match the file exactly, ...   (+ the old text,
        and the closest region of the file when half of old's lines line up with it)
    <path>: edit #2: old text is empty — ...
    <path>: edits #1 and #2 overlap (lines 3-5 and lines 4-7) — ...
    <path>: edit #2 lies inside edit #1 (line 4 within lines 3-6) — ...
    <path>: edits #1 and #2 change the same text (line 4) — send each change once
    <path> does not exist. Create it with write_file
    <path> is a binary file (N bytes); edit_file edits text files only
    <path> is not UTF-8 text (invalid byte at line L); edit_file edits UTF-8 text only
    <path> is too large to edit (N bytes; edit_file edits files up to 64 MiB) — change it
        with a command instead, or read_file a range

A refusal in a call of several edits lists every refused edit, then ends with
`nothing was written: the edits are applied all together or not at all`.

`ToolResult.diff` is the plain unified diff of what was written (None for a dry run, which
changes nothing and so asks no permission either); `permission_details` is that diff, or the
refusal the call would get.

Files as people have them: a file whose every line ends with CRLF is matched and diffed with
"\\n" and written back with CRLF (the model's `old` and `new` may use either); a UTF-8 byte-order
mark is kept; a file without a final newline keeps none unless an edit adds one.

The sandbox's policy holds as for write_file (`core/file_access.py`): a file the tools may not
read or may not write is refused, `[error: refused by mm's sandbox: …]`, before it is read.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

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
from mm_tui.tools.write_file import (
    Refused,
    TooLarge,
    file_gate,
    read_regular,
    refused_text,
    save,
)

if TYPE_CHECKING:
    from mm_tui.tools.args import EditFileArgs
    from mm_tui.tools.diff import Diff
    from mm_tui.tools.edit_match import Ambiguous, Document, Match, NotFound


BOM = "\ufeff"
# The largest file edit_file takes: it holds the file, its matching index and the new text in
# memory at once; a source file of tens of megabytes (generated code) is edited, a log or a
# disk image of gigabytes is refused before it is read.
LIMIT = 64 << 20
GUTTER = "  │ "
SAME_TEXT = (
    "every edit is resolved against the original file, so no two may change the same text: "
    "merge them into one edit"
)


@mutable
class _Plan:
    mode: int
    content: str  # what to write, with the file's line endings and byte-order mark
    diff: Diff
    edits: int
    relaxed: int  # edits found by a relaxed pass
    unchanged: bool


def _read(ctx: ToolContext, path: str) -> tuple[bytes, int]:
    """The file's bytes and mode; only a regular file (a pipe would block, /dev/zero never end),
    only one the sandbox's policy lets the tools read and write (`SandboxRefusal`), only one of
    at most LIMIT bytes (never more is read)."""
    try:
        with file_gate(ctx).place(path, write=True) as place:
            found = read_regular(path, place, limit=LIMIT)
    except FileNotFoundError:  # its folder does not exist
        found = None
    except TooLarge as exc:
        raise Refused(
            f"{path} is too large to edit ({exc.size} bytes; edit_file edits files up to "
            f"{LIMIT >> 20} MiB) — change it with a command instead, or read_file a range"
        ) from None
    if found is None:
        raise Refused(f"{path} does not exist. Create it with write_file")
    return found


def _decode(path: str, data: bytes) -> str:
    if b"\0" in data:
        raise Refused(
            f"{path} is a binary file ({len(data)} bytes); edit_file edits text files only"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise Refused(
            f"{path} is not UTF-8 text (invalid byte at line {line}); "
            "edit_file edits UTF-8 text only"
        ) from exc


def _plan(ctx: ToolContext, args: EditFileArgs) -> _Plan:
    # Imported at the first call, not when the tools are made (docs/performance.md).
    from mm_tui.tools.diff import apply_replacements
    from mm_tui.tools.edit_match import Ambiguous, Document, Match, locate

    path = args.path
    data, mode = _read(ctx, path)
    if not args.edits:
        raise Refused(f"{path}: no edits — send at least one {{old, new}} pair")
    text = _decode(path, data)
    bom = BOM if text.startswith(BOM) else ""
    text = text[len(bom) :]
    newlines = text.count("\n")
    crlf = newlines > 0 and text.count("\r\n") == newlines
    if crlf:
        text = text.replace("\r\n", "\n")

    doc = Document(text)
    problems: list[str] = []
    matches: list[tuple[int, Match]] = []
    for number, edit in enumerate(args.edits, 1):
        old, new = edit.old, edit.new
        if crlf:
            old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        if not old:
            problems.append(
                f"{path}: edit #{number}: old text is empty — quote the text to replace; to add "
                "lines, quote the line next to them in old and repeat it in new"
            )
            continue
        found = locate(doc, old, new)
        if isinstance(found, Match):
            matches.append((number, found))
        elif isinstance(found, Ambiguous):
            problems.append(_ambiguous(path, number, found))
        else:
            problems.append(_not_found(path, number, old, found))
    if not problems:
        problems = _conflicts(path, doc, matches)
    if problems:
        if len(args.edits) > 1:
            problems.append("nothing was written: the edits are applied all together or not at all")
        raise Refused("\n".join(problems))

    ordered = sorted((m for _, m in matches), key=lambda m: m.start)
    new_text, diff = apply_replacements(text, [(m.start, m.end, m.replacement) for m in ordered])
    content = bom + (new_text.replace("\n", "\r\n") if crlf else new_text)
    return _Plan(
        mode=mode,
        content=content,
        diff=diff,
        edits=len(matches),
        relaxed=sum(1 for m in ordered if m.relaxed),
        unchanged=new_text == text,
    )


def _ambiguous(path: str, number: int, found: Ambiguous) -> str:
    shown = ", ".join(str(n) for n in found.lines)
    if found.count > len(found.lines):
        shown += ", …"
    return (
        f"{path}: edit #{number}: old text appears {found.count} times (lines {shown}) — to "
        "change ONE of them, include its surrounding lines in old until the text is unique; to "
        "change several, send one edit per place…"
    )


def _not_found(path: str, number: int, old: str, found: NotFound) -> str:
    echoed = old[:-1] if old.endswith("\n") else old
    out = [
        f"{path}: edit #{number}: old text not found — it must match the file exactly, "
        "including indentation and line breaks:"
    ]
    out += [GUTTER + line for line in echoed.split("\n")]
    if found.closest is not None:
        first, lines = found.closest
        width = len(str(first + len(lines) - 1))
        out.append("the closest the file comes to it — copy these lines:")
        out += [f"{GUTTER}{first + k:>{width}} │ {line}" for k, line in enumerate(lines)]
    return "\n".join(out)


def _lines(doc: Document, match: Match) -> str:
    last = match.line + doc.text.count("\n", match.start, max(match.start, match.end - 1))
    return f"line {match.line}" if last == match.line else f"lines {match.line}-{last}"


def _conflicts(path: str, doc: Document, matches: list[tuple[int, Match]]) -> list[str]:
    """Two edits that overlap, nest or repeat: each pair met while sweeping in file order."""
    problems: list[str] = []
    widest: tuple[int, Match] | None = None  # the edit reaching furthest so far
    for number, match in sorted(matches, key=lambda nm: (nm[1].start, -nm[1].end, nm[0])):
        if widest is not None and match.start < widest[1].end:
            a, b = widest, (number, match)
            first, second = sorted((a, b), key=lambda nm: nm[0])
            if (a[1].start, a[1].end) == (b[1].start, b[1].end):
                problems.append(
                    f"{path}: edits #{first[0]} and #{second[0]} change the same text "
                    f"({_lines(doc, match)}) — send each change once"
                )
            elif match.end <= widest[1].end:
                problems.append(
                    f"{path}: edit #{number} lies inside edit #{widest[0]} "
                    f"({_lines(doc, match)} within {_lines(doc, widest[1])}) — {SAME_TEXT}"
                )
            else:
                problems.append(
                    f"{path}: edits #{first[0]} and #{second[0]} overlap "
                    f"({_lines(doc, first[1])} and {_lines(doc, second[1])}) — {SAME_TEXT}"
                )
        if widest is None or match.end > widest[1].end:
            widest = (number, match)
    return problems


def _headline(path: str, plan: _Plan, dry_run: bool) -> str:
    diff = plan.diff
    edits = f"{plan.edits} edit{'s' if plan.edits != 1 else ''}"
    changes = f"+{diff.added} -{diff.deleted} lines, first changed line {diff.first_changed_line}"
    if dry_run:
        headline = f"dry run, nothing written — {path}: {edits} would apply, {changes}"
    else:
        headline = f"edited {path}: {edits} applied, {changes}"
    if plan.relaxed:
        headline += f" · {plan.relaxed} matched ignoring whitespace"
    return headline


class EditFileTool(Tool):
    name = "edit_file"
    kind = "edit"
    counter = "file_ops"
    Args = lazy_args("EditFileArgs")
    parameters_schema = schemas.EDIT_FILE

    def description(self) -> str:
        return (
            "Change an existing file by replacing pieces of it: each `old` must appear exactly "
            "once in the file (whitespace around it and indentation are forgiven when the text "
            "is otherwise exact) and is replaced by `new`. All edits are resolved against the "
            "original file and applied together, or none is. Set `dry_run` to see the diff "
            "without writing. To create a file or rewrite it whole, use write_file."
        )

    def title(self, args: EditFileArgs) -> str:
        return args.path

    def display(self, args: EditFileArgs) -> str:
        return f"✏️ edit_file: {args.path}"

    def needs_permission(self, args: EditFileArgs) -> bool:
        return not args.dry_run  # a dry run only reads

    def locations(self, args: EditFileArgs, ctx: ToolContext) -> tuple[str, ...]:
        return (ctx.location(args.path),)

    async def permission_details(self, args: EditFileArgs, ctx: ToolContext) -> str:
        try:
            plan = await asyncio.to_thread(_plan, ctx, args)
        except (Refused, OSError):
            raise NothingToAsk from None
        if plan.unchanged:
            raise NothingToAsk
        return plan.diff.unified(args.path)

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        # here: the sandbox loads at the first call, not at start-up
        from mm_tui.core.file_access import SandboxRefusal

        path = args.path
        try:
            # in threads: matching and writing a large file must not freeze the window
            plan = await asyncio.to_thread(_plan, ctx, args)
            if plan.unchanged:
                return ToolResult(f"{path} unchanged: the edits change nothing")
            if not args.dry_run:
                await asyncio.to_thread(save, file_gate(ctx), path, plan.content, plan.mode)
        except Refused as exc:
            return ToolResult(truncate(str(exc), ctx.settings.max_output), status="error")
        except SandboxRefusal as exc:
            return refused_text(exc)
        except PermissionError:
            return ToolResult(f"{path}: permission denied", status="error")
        except OSError as exc:
            return ToolResult(f"{path}: cannot write: {exc.strerror or exc}", status="error")
        output = f"{_headline(path, plan, args.dry_run)}\n{plan.diff.numbered()}"
        return ToolResult(
            truncate(output, ctx.settings.max_output),
            diff=None if args.dry_run else plan.diff.unified(path),
        )
