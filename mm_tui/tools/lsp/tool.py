"""The lsp tool: definition, references, hover, symbols, diagnostics and rename, answered by the
language servers the configuration lists.

A small model navigates code far better with a server's answers than with grep, provided it
never has to speak the protocol: it names a file and a symbol as written in the code, and gets
back `path:line:column  <source line>` lines, the hover text, an outline, the diagnostics, or a
rename carried out on disk. Everything that can go wrong (no server for that file, a symbol not
in it, a server that crashed or does not answer) comes back as one line of text the model can
act on; the tool never raises for it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

import mm_tui.tools.lsp.edits as edit_ops
from mm_tui.config import LspServer, Settings
from mm_tui.core.files import read_text, write_target
from mm_tui.tools.base import Tool, ToolArgs, ToolContext, ToolResult, truncate
from mm_tui.tools.diff import compute_diff
from mm_tui.tools.lsp.client import (
    INITIALIZE_TIMEOUT,
    REQUEST_TIMEOUT,
    LspClient,
    LspError,
    LspTimeout,
    ResponseError,
    ServerExited,
    path_to_uri,
    uri_to_path,
)
from mm_tui.tools.lsp.manager import Server, ServerManager, describe, normalize_extension
from mm_tui.tools.lsp.positions import Document
from mm_tui.tools.lsp.symbols import (
    clean_symbol,
    format_symbols,
    occurrences,
    split_rename,
    symbol_from_words,
    symbol_tree,
)
from mm_tui.tools.write_file import Refused, read_regular, write_text

ACTIONS = ("definition", "references", "hover", "symbols", "diagnostics", "rename")
_ALIASES = {
    "definitions": "definition",
    "goto_definition": "definition",
    "reference": "references",
    "find_references": "references",
    "symbol": "symbols",
    "document_symbols": "symbols",
    "outline": "symbols",
    "diagnostic": "diagnostics",
}
DIAGNOSTICS_WAIT = 3.0  # seconds the diagnostics action waits for the server's publication
SETTLE_GRACE = 0.3  # seconds after the first opened file for a server to announce its indexing
SETTLE_TIMEOUT = 20.0  # seconds, at most, waited for that indexing before a cross-file question
OTHERS_WAIT = 2.0  # seconds, at most, for a server to digest the other files that changed
MAX_TRIES = 20  # occurrences of a symbol tried, at most, before giving up
_SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}
_NEEDS_POSITION = ("definition", "references", "hover", "rename")


class LspArgs(ToolArgs):
    action: str = Field(
        description=("definition, references, hover, symbols, diagnostics or rename."),
        json_schema_extra={"enum": list(ACTIONS)},
    )
    path: str = Field(
        description="File path, relative to the working directory. Its extension picks the server."
    )
    symbol: str = Field(
        "",
        description=(
            "The identifier, as written in the code (`Greet`, `person.Greet`). Its occurrences "
            "in the file are tried in order. For definition, references, hover, rename."
        ),
    )
    line: int = Field(
        0,
        description=(
            "1-based line. With symbol: restricts the search to that line. With column: the "
            "exact position."
        ),
    )
    column: int = Field(
        0,
        description=(
            "1-based column, in characters, pointing inside the identifier. Only needed "
            "without symbol."
        ),
    )
    new_name: str = Field(default="", description="The new identifier, for rename.")


@dataclass
class _Call:
    """One call's arguments, cleaned: the action, the file, and what to point at."""

    action: str
    raw_path: str
    path: Path
    symbol: str
    new_name: str
    line: int
    column: int
    hint: tuple[int, int] | None = None  # line, column found inside a several-word rename symbol


class _Fail(Exception):
    """A failure whose text goes to the model as it is; `gone` when the server died under it,
    `stuck` (the server that did not answer in time) when it must be stopped."""

    def __init__(self, text: str, gone: bool = False, stuck: Server | None = None) -> None:
        super().__init__(text)
        self.gone = gone
        self.stuck = stuck


STOPPED = " — the server was stopped; the next call starts it again"


def _failed(server: Server, action: str, exc: Exception) -> _Fail:
    if isinstance(exc, LspTimeout):
        # A server that does not answer in time is stuck more often than slow: stopped, so
        # that the next call gets a fresh one instead of waiting on the same again.
        return _Fail(f"[lsp: {server.config.name}: {action} failed: {exc}{STOPPED}]", stuck=server)
    return _Fail(
        f"[lsp: {server.config.name}: {action} failed: {exc}]", isinstance(exc, ServerExited)
    )


@dataclass
class _Opened:
    """A call's server, ready, and its file as just told to it."""

    server: Server
    client: LspClient
    document: Document
    changed: bool  # the sync told the server something new
    serial_before: int  # the client's publication count before that sync
    candidates: list[tuple[int, int]]  # the 0-based positions to try, for the actions that point


@dataclass
class _RenamePlan:
    key: tuple[Any, ...]
    changes: list[edit_ops.FileChange]
    server: Server


def _normalize_action(action: str) -> str:
    a = action.strip().lower().replace("-", "_").replace(" ", "_")
    return _ALIASES.get(a, a)


def _prepare(args: LspArgs, ctx: ToolContext) -> _Call:
    action = _normalize_action(args.action)
    if action == "rename":
        symbol = clean_symbol(args.symbol) if len(args.symbol.split()) < 2 else ""
        new_name = clean_symbol(args.new_name)
        hint = None
        if len(args.symbol.split()) >= 2:
            first, last, numbers = split_rename(args.symbol)
            symbol = first
            if not new_name:
                new_name = last
            if numbers and args.line <= 0:
                hint = (numbers[0], numbers[1] if len(numbers) > 1 else 0)
    else:
        symbol = symbol_from_words(args.symbol)
        new_name = clean_symbol(args.new_name)
        hint = None
    return _Call(
        action=action,
        raw_path=args.path,
        path=ctx.resolve(args.path),
        symbol=symbol,
        new_name=new_name,
        line=max(0, args.line),
        column=max(0, args.column),
        hint=hint,
    )


class LspTool(Tool):
    name = "lsp"
    kind = "read"
    counter = "lsp_calls"
    Args = LspArgs

    def __init__(
        self,
        servers: list[LspServer],
        cwd: Path,
        request_timeout: float = REQUEST_TIMEOUT,
        initialize_timeout: float = INITIALIZE_TIMEOUT,
        diagnostics_wait: float = DIAGNOSTICS_WAIT,
    ) -> None:
        self.servers = servers
        self.cwd = Path(os.path.abspath(cwd))
        self.diagnostics_wait = diagnostics_wait
        self.manager = ServerManager(servers, request_timeout, initialize_timeout)
        self.manager.apply_edit = self._apply_server_edit
        self._locks: dict[tuple[int, str, Path], asyncio.Lock] = {}
        self._pulled: dict[str, list[dict[str, Any]]] = {}  # uri -> last pulled full report
        self._plan: _RenamePlan | None = None

    @classmethod
    def from_settings(cls, settings: Settings, cwd: Path) -> tuple[LspTool | None, list[str]]:
        """The tool over the listed servers whose command is on the PATH, and a banner warning
        for each one that is not; no tool at all when none is."""
        found: list[LspServer] = []
        warnings: list[str] = []
        for server in settings.lsp.servers:
            if shutil.which(server.command):
                found.append(server)
            else:
                warnings.append(
                    f"[warning: lsp server {server.name} ({server.command}) not found on the "
                    "PATH — skipped]"
                )
        if not found:
            warnings.append(
                "[warning: no lsp server found on the PATH — the lsp tool is not declared]"
            )
            return None, warnings
        return cls(found, cwd), warnings

    # --- declaration and display -------------------------------------------------------------

    def description(self) -> str:
        return (
            "Ask a language server about the code, as an editor does: more precise than grep. "
            f"Servers available: {describe(self.servers)}. Actions: "
            "definition (where the symbol is defined), "
            "references (every use, the declaration included), "
            "hover (its type, signature and documentation), "
            "symbols (the outline of the file: classes, functions, … with their lines), "
            "diagnostics (the file's errors and warnings, as the server sees them), "
            "rename (renames the symbol in every file of the project, on disk; give new_name). "
            "Name the symbol as written in the code; add line (and column) only to pick one "
            "occurrence among several. Lines and columns are 1-based."
        )

    def _where(self, args: LspArgs) -> str:
        where = args.path
        if args.line > 0:
            where += f":{args.line}"
            if args.column > 0:
                where += f":{args.column}"
        return where

    def title(self, args: LspArgs) -> str:
        action = _normalize_action(args.action)
        where = self._where(args)
        if action == "rename":
            symbol, new_name = args.symbol, args.new_name
            if len(args.symbol.split()) >= 2:
                symbol, last, _ = split_rename(args.symbol)
                new_name = new_name or last
            symbol, new_name = clean_symbol(symbol), clean_symbol(new_name)
            return f"rename {where} {symbol} → {new_name}".replace("  ", " ")
        symbol = symbol_from_words(args.symbol) if action in _NEEDS_POSITION else ""
        return f"{action} {where} {symbol}".rstrip()

    def display(self, args: LspArgs) -> str:
        return f"🔎 lsp: {self.title(args)}"

    def kind_for(self, args: LspArgs) -> str:
        return "edit" if _normalize_action(args.action) == "rename" else "read"

    def needs_permission(self, args: LspArgs) -> bool:
        return _normalize_action(args.action) == "rename"

    def rejection(self) -> str:
        return "[rename rejected by the user]"

    def locations(self, args: LspArgs, ctx: ToolContext) -> tuple[str, ...]:
        return (ctx.location(args.path),)

    async def permission_details(self, args: LspArgs, ctx: ToolContext) -> str:
        """The rename's diff, asked of the server before the person decides; the plan is kept
        so that the call, once allowed, writes exactly what was shown."""
        title = self.title(args)
        if _normalize_action(args.action) != "rename":
            return title
        try:
            call = _prepare(args, ctx)
            plan = await self._rename_plan(call, ctx)
        except _Fail as failure:
            return f"{title}\n{failure}"
        diffs = [
            compute_diff(c.old, c.new).unified(self._show_path(c.path, ctx)) for c in plan.changes
        ]
        return "".join(diffs) or title

    async def aclose(self) -> None:
        await self.manager.aclose()

    # --- running -----------------------------------------------------------------------------

    async def run(self, args: LspArgs, ctx: ToolContext) -> ToolResult:
        try:
            call = _prepare(args, ctx)
            if call.action not in ACTIONS:
                raise _Fail(
                    f'[lsp: unknown action "{args.action}" — use definition, references, hover, '
                    "symbols, diagnostics or rename]"
                )
            server = self._server_for(call, ctx)
            was_running = server.client is not None
            try:
                result = await self._perform(call, ctx)
            except _Fail as failure:
                # A server that died since the last call is started again, and the call made
                # once more (nothing was written: a rename writes only after the answer).
                if not (failure.gone and was_running):
                    raise
                result = await self._perform(call, ctx)
        except _Fail as failure:
            if failure.stuck is not None:
                await self.manager.stop(failure.stuck)
            return ToolResult(str(failure), status="error")
        if isinstance(result, ToolResult):
            result.output = truncate(result.output, ctx.settings.max_output)
            return result
        return ToolResult(truncate(result, ctx.settings.max_output))

    async def _perform(self, call: _Call, ctx: ToolContext) -> str | ToolResult:
        if call.action == "rename":
            return await self._rename(call, ctx)
        opened = await self._open(call, ctx)
        handler = getattr(self, f"_{call.action}")
        return await handler(call, ctx, opened)

    def _lock(self, server: Server) -> asyncio.Lock:
        """One request sequence at a time per server, per event loop (a lock is bound to one)."""
        key = (id(asyncio.get_running_loop()), server.config.name, server.root)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _server_for(self, call: _Call, ctx: ToolContext) -> Server:
        config = self.manager.config_for(call.path)
        if config is None:
            raise _Fail(
                f'[lsp: no language server for "{call.raw_path}" — configured: '
                f"{describe(self.servers)}]"
            )
        return self.manager.server(config, Path(os.path.abspath(ctx.cwd)))

    async def _open(self, call: _Call, ctx: ToolContext) -> _Opened:
        """The server for the call's file, started if need be, told the file's text. A call
        that cannot be right (a symbol not in the file, a line past its end) fails before any
        server is started."""
        server = self._server_for(call, ctx)
        text = await asyncio.to_thread(_read_file, call.path, call.raw_path)
        candidates: list[tuple[int, int]] = []
        if call.action in _NEEDS_POSITION:
            candidates = self._candidates(call, Document(text))[:MAX_TRIES]
        async with self._lock(server):
            client = await self._client(server, call.action)
            serial = client.serial
            changed = await self._sync(server, client, call, call.path, text)
        document = Document(text, client.encoding)
        return _Opened(server, client, document, changed, serial, candidates)

    async def _client(self, server: Server, action: str) -> LspClient:
        try:
            return await self.manager.ensure_started(server)
        except LspError as exc:
            raise _Fail(f"[lsp: {server.config.name}: {action} failed: {exc}]") from None

    async def _sync(
        self, server: Server, client: LspClient, call: _Call, path: Path, text: str
    ) -> bool:
        """Tell the server the file's text, and the text of the other files that changed (a
        reference or a rename spans files; they too may have changed on disk)."""
        try:
            serial = client.serial
            moved = await self.manager.catch_up(server, client, skip=path)
            for uri in list(server.documents):
                other = uri_to_path(uri)
                if other is None or other == path or uri in moved:
                    continue
                try:
                    other_text = await asyncio.to_thread(read_text, other)
                except OSError:
                    server.documents.pop(uri, None)
                    await client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                    continue
                if await self.manager.sync(server, client, other, other_text):
                    moved.append(uri)
            changed = await self.manager.sync(server, client, path, text)
        except LspError as exc:
            raise _failed(server, call.action, exc) from None
        pending, server.pending = server.pending, None
        if pending is not None:  # a rename's files, digested while the model was thinking
            await _digest(client, pending[0], pending[1], pending[2])
        await _digest(client, moved, serial)
        return changed

    # --- positions ---------------------------------------------------------------------------

    def _candidates(self, call: _Call, document: Document) -> list[tuple[int, int]]:
        """The 0-based positions to try, best first; raises _Fail with the reason when there is
        none."""
        lines = document.lines
        count = document.line_count
        suffix = call.path.suffix.lower()
        if call.line > 0:
            if call.line > count:
                lines_text = "1 line" if count == 1 else f"{count} lines"
                raise _Fail(
                    f"[lsp: line {call.line} is past the end of {call.raw_path} ({lines_text})]"
                )
            index = call.line - 1
            text = document.line(index)
            found = occurrences(lines, call.symbol, suffix, index) if call.symbol else []
            if call.column > 0:
                if call.column > len(text) + 1:
                    raise _Fail(
                        f"[lsp: column {call.column} is past the end of line {call.line} "
                        f"({len(text)} characters)]"
                    )
                exact = (index, call.column - 1)
                return [exact] + [(o.line, o.column) for o in found if not _inside(o, exact, call)]
            if not call.symbol:
                raise _Fail(
                    f"[lsp: {call.action} needs a symbol, or a column on line {call.line} of "
                    f"{call.raw_path}]"
                )
            if not found:
                raise _Fail(
                    f'[lsp: "{call.symbol}" not found on line {call.line} of {call.raw_path}]'
                )
            return [(o.line, o.column) for o in found]
        if not call.symbol:
            raise _Fail(
                f"[lsp: {call.action} needs a symbol (the identifier as written in the code), "
                "or a line and a column]"
            )
        found = occurrences(lines, call.symbol, suffix)
        if not found:
            raise _Fail(f'[lsp: "{call.symbol}" not found in {call.raw_path}]')
        positions = [(o.line, o.column) for o in found]
        if call.hint and 0 < call.hint[0] <= count:
            hinted_line, hinted_col = call.hint[0] - 1, call.hint[1] - 1
            on_line = [p for p in positions if p[0] == hinted_line]
            on_line.sort(key=lambda p: not (p[1] <= hinted_col < p[1] + len(call.symbol)))
            positions = on_line + [p for p in positions if p[0] != hinted_line]
        return positions

    async def _ask(
        self,
        call: _Call,
        opened: _Opened,
        method: str,
        extra: dict[str, Any],
        accept: Any,
    ) -> tuple[Any, tuple[int, int]]:
        """Try the candidate positions in order until the server gives an answer `accept`
        takes; the answer and the position that gave it."""
        server, client, document = opened.server, opened.client, opened.document
        candidates = opened.candidates
        if call.action in ("definition", "references", "rename"):
            await client.settle(SETTLE_GRACE, SETTLE_TIMEOUT)
        uri = path_to_uri(call.path)
        first_error: str | None = None
        for line, column in candidates:
            params = {
                "textDocument": {"uri": uri},
                "position": document.to_wire(line, column),
                **extra,
            }
            try:
                async with self._lock(server):
                    result = await client.request(method, params)
            except ResponseError as exc:
                first_error = first_error or (str(exc) or f"error {exc.code}")
                continue
            except LspError as exc:
                raise _failed(server, call.action, exc) from None
            if accept(result):
                return result, (line, column)
        if first_error is not None:
            raise _Fail(f"[lsp: {server.config.name}: {call.action} failed: {first_error}]")
        line, column = candidates[0]
        what = {"hover": "hover information", "rename": "rename"}.get(call.action, call.action)
        raise _Fail(
            f"[lsp: no {what} found for the symbol at {call.raw_path}:{line + 1}:{column + 1}]"
        )

    # --- the actions -------------------------------------------------------------------------

    async def _definition(self, call: _Call, ctx: ToolContext, opened: _Opened) -> str:
        result, _ = await self._ask(call, opened, "textDocument/definition", {}, _has_locations)
        return "\n".join(self._locations(result, ctx, opened.client.encoding))

    async def _references(self, call: _Call, ctx: ToolContext, opened: _Opened) -> str:
        result, _ = await self._ask(
            call,
            opened,
            "textDocument/references",
            {"context": {"includeDeclaration": True}},
            _has_locations,
        )
        lines = self._locations(result, ctx, opened.client.encoding)
        return "\n".join([f"{len(lines)} reference(s):", *lines])

    async def _hover(self, call: _Call, ctx: ToolContext, opened: _Opened) -> str:
        result, _ = await self._ask(
            call,
            opened,
            "textDocument/hover",
            {},
            lambda r: bool(_hover_text(r).strip()),
        )
        return _hover_text(result).strip("\n")

    async def _symbols(self, call: _Call, ctx: ToolContext, opened: _Opened) -> str:
        server, client = opened.server, opened.client
        params = {"textDocument": {"uri": path_to_uri(call.path)}}
        try:
            async with self._lock(server):
                result = await client.request("textDocument/documentSymbol", params)
        except LspError as exc:
            raise _failed(server, "symbols", exc) from None
        lines = format_symbols(symbol_tree(result))
        if not lines:
            return f"no symbols found in {call.raw_path}"
        return "\n".join(lines)

    async def _diagnostics(self, call: _Call, ctx: ToolContext, opened: _Opened) -> str:
        server, client, document = opened.server, opened.client, opened.document
        uri = path_to_uri(call.path)
        shown = self._show_path(call.path, ctx)
        name = server.config.name
        if _offers_pull(client):
            return await self._pull(call, opened, uri, shown)
        doc = server.documents.get(uri)
        version = doc.version if doc else None
        changed = opened.changed
        published = client.published(uri)
        if (
            not changed
            and published is not None
            and (version is None or published.version is None or published.version >= version)
        ):
            return self._format_diagnostics(
                published.diagnostics, shown, document, " (as last published)", server
            )
        after = opened.serial_before if changed else 0
        got = await client.wait_published(
            uri, after, version, self.diagnostics_wait, give_up=lambda: _offers_pull(client)
        )
        if not got and _offers_pull(client):
            # pyright registers pull diagnostics a moment after it started: pull, then
            return await self._pull(call, opened, uri, shown)
        if not got:
            if not client.alive:
                raise _failed(server, "diagnostics", ServerExited(client.exit_reason))
            return (
                f"no diagnostics received for {shown} within {self.diagnostics_wait:g}s "
                f"({name} published nothing for it yet — it may still be loading the project; "
                "call diagnostics again in a moment)"
            )
        published = client.published(uri)
        items = published.diagnostics if published is not None else []
        return self._format_diagnostics(items, shown, document, "", server)

    async def _pull(self, call: _Call, opened: _Opened, uri: str, shown: str) -> str:
        """Diagnostics asked for (textDocument/diagnostic), from a server that offers that."""
        server, client = opened.server, opened.client
        params: dict[str, Any] = {"textDocument": {"uri": uri}}
        try:
            async with self._lock(server):
                report = await client.request("textDocument/diagnostic", params)
        except LspError as exc:
            raise _failed(server, "diagnostics", exc) from None
        report = report if isinstance(report, dict) else {}
        if report.get("kind") == "unchanged":
            items = self._pulled.get(uri, [])
        else:
            items = [d for d in report.get("items") or [] if isinstance(d, dict)]
            self._pulled[uri] = items
        return self._format_diagnostics(items, shown, opened.document, "", server)

    def _format_diagnostics(
        self,
        items: list[dict[str, Any]],
        shown: str,
        document: Document,
        suffix: str,
        server: Server,
    ) -> str:
        if not items:
            if server.has_linter is False:
                return (
                    f"no diagnostics from {server.config.name} for {shown}: it has no linter "
                    "installed (pyflakes, pycodestyle, …; python-lsp-server[all] brings "
                    "them), so its empty list does not mean the file is clean"
                )
            return f"no diagnostics: {shown} is clean{suffix}"
        rows = []
        for item in items:
            rng = item.get("range") or {}
            line, column = document.from_wire(rng.get("start") or {})
            severity = _SEVERITIES.get(item.get("severity"), "error")  # type: ignore[arg-type]
            message = "; ".join(
                part.strip() for part in str(item.get("message", "")).splitlines() if part.strip()
            )
            source = f" [{item['source']}]" if item.get("source") else ""
            rows.append(
                (
                    line,
                    column,
                    item.get("severity") or 1,
                    f"{severity} {shown}:{line + 1}:{column + 1} {message}{source}",
                )
            )
        rows.sort(key=lambda r: r[:3])
        return "\n".join([f"{len(rows)} diagnostic(s) in {shown}{suffix}:", *(r[3] for r in rows)])

    # --- rename ------------------------------------------------------------------------------

    def _rename_key(self, call: _Call, ctx: ToolContext) -> tuple[Any, ...]:
        return (
            str(call.path),
            call.symbol,
            call.new_name,
            call.line,
            call.column,
            call.hint,
            str(ctx.cwd),
        )

    def _needs_new_name(self, call: _Call) -> _Fail:
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
        return _Fail(
            f'[lsp: rename needs new_name — call lsp again with {{{shown}, "new_name": '
            '"<the new identifier>"}; do not use edit_file for a rename]'
        )

    async def _rename_plan(self, call: _Call, ctx: ToolContext) -> _RenamePlan:
        """Ask the server for the rename and work out every file's new text, writing nothing."""
        if not call.new_name:
            raise self._needs_new_name(call)
        if call.new_name == call.symbol:
            raise _Fail(
                f'[lsp: the new name is the same as the symbol "{call.symbol}": nothing to rename]'
            )
        opened = await self._open(call, ctx)
        server = opened.server
        result, (line, column) = await self._ask(
            call,
            opened,
            "textDocument/rename",
            {"newName": call.new_name},
            lambda r: isinstance(r, dict) and bool(r.get("changes") or r.get("documentChanges")),
        )
        try:
            changes = await asyncio.to_thread(
                edit_ops.plan, result, read_text, opened.client.encoding
            )
        except edit_ops.EditError as exc:
            raise _Fail(f"[lsp: {server.config.name}: rename failed: {exc}]") from None
        except OSError as exc:
            raise _Fail(f"[lsp: {server.config.name}: rename failed: {exc}]") from None
        if not changes:
            raise _Fail(
                f"[lsp: {server.config.name}: rename changed nothing at "
                f"{call.raw_path}:{line + 1}:{column + 1}]"
            )
        plan = _RenamePlan(self._rename_key(call, ctx), changes, server)
        self._plan = plan
        return plan

    async def _rename(self, call: _Call, ctx: ToolContext) -> ToolResult:
        plan = self._plan
        self._plan = None
        if (
            plan is None
            or plan.key != self._rename_key(call, ctx)
            or not await asyncio.to_thread(_still_current, plan.changes)
        ):
            if not call.new_name:
                raise self._needs_new_name(call)
            plan = await self._rename_plan(call, ctx)
            self._plan = None
        server = plan.server
        written: list[edit_ops.FileChange] = []
        for change in plan.changes:
            try:
                await asyncio.to_thread(_write, change.path, change.new)
            except OSError as exc:
                done = f" ({len(written)} file(s) already written)" if written else ""
                raise _Fail(
                    f"[lsp: rename failed: cannot write {self._show_path(change.path, ctx)}: "
                    f"{exc.strerror or exc}{done}]"
                ) from None
            written.append(change)
        # tell the server what is now on disk, so its next answers are about the renamed code
        client = server.client
        if client is not None and client.alive:
            try:
                async with self._lock(server):
                    serial = client.serial
                    for change in written:
                        await self.manager.sync(server, client, change.path, change.new)
                # the next call waits, if it must, for the server to have digested them
                deadline = asyncio.get_running_loop().time() + OTHERS_WAIT
                server.pending = ([path_to_uri(c.path) for c in written], serial, deadline)
            except LspError:
                pass  # the files are written; the next call syncs them anyway
        total = sum(c.edits for c in written)
        lines = [f"renamed to {call.new_name}: {total} edit(s) in {len(written)} file(s)"]
        lines += [f"{self._show_path(c.path, ctx)}: {c.edits} edit(s)" for c in written]
        diff = "".join(
            compute_diff(c.old, c.new).unified(self._show_path(c.path, ctx)) for c in written
        )
        return ToolResult("\n".join(lines), diff=diff)

    async def _apply_server_edit(self, edit: dict[str, Any], encoding: str) -> bool:
        """A server's own workspace/applyEdit (mm runs no command that asks for one)."""
        try:
            changes = await asyncio.to_thread(edit_ops.plan, edit, read_text, encoding)
            for change in changes:
                await asyncio.to_thread(_write, change.path, change.new)
        except (OSError, edit_ops.EditError):
            return False
        return True

    # --- output ------------------------------------------------------------------------------

    def _show_path(self, path: Path, ctx: ToolContext) -> str:
        """Relative inside the project, absolute outside it."""
        root = Path(os.path.abspath(ctx.cwd))
        absolute = Path(os.path.abspath(path))
        for base, target in ((root, absolute), (root.resolve(), absolute.resolve())):
            try:
                return str(target.relative_to(base))
            except ValueError:
                continue
        return str(absolute)

    def _locations(self, result: Any, ctx: ToolContext, encoding: str) -> list[str]:
        """`path:line:column  <source line>`, sorted by path then position, without doubles."""
        documents: dict[Path, Document | None] = {}
        rows: set[tuple[str, int, int, str]] = set()
        for uri, position in _location_starts(result):
            path = uri_to_path(uri)
            if path is None:
                rows.add(
                    (
                        uri,
                        int(position.get("line", 0)) + 1,
                        int(position.get("character", 0)) + 1,
                        "",
                    )
                )
                continue
            if path not in documents:
                try:
                    documents[path] = Document(read_text(path), encoding)
                except OSError:
                    documents[path] = None
            document = documents[path]
            if document is None:
                line, column = int(position.get("line", 0)), int(position.get("character", 0))
                source = ""
            else:
                line, column = document.from_wire(position)
                source = document.line(line).strip()
            rows.add((self._show_path(path, ctx), line + 1, column + 1, source))
        out = []
        for shown, line, column, source in sorted(rows):
            out.append(f"{shown}:{line}:{column}  {source}".rstrip())
        return out


# --- helpers ---------------------------------------------------------------------------------


async def _digest(
    client: LspClient, uris: list[str], serial: int, deadline: float | None = None
) -> None:
    """Wait, briefly, for the server to digest files it was told about. A server that
    publishes diagnostics does so once it has digested a file (clangd indexes it at that
    moment); an answer about those files asked before would come from their old text."""
    if not uris or serial <= 0 or _offers_pull(client):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + OTHERS_WAIT if deadline is None else deadline
    for uri in uris:
        left = deadline - loop.time()
        if left <= 0:
            return
        await client.wait_published(uri, serial, None, left)


def _inside(occurrence: Any, exact: tuple[int, int], call: _Call) -> bool:
    return occurrence.line == exact[0] and occurrence.column <= exact[1] < occurrence.column + len(
        call.symbol
    )


def _read_file(path: Path, shown: str) -> str:
    """The file's text; a folder, a pipe or a device is refused (reading a pipe would block)."""
    try:
        found = read_regular(shown, path)
    except Refused as exc:
        raise _Fail(f"[lsp: {exc}]") from None
    except OSError as exc:
        raise _Fail(f"[lsp: cannot read {shown}: {exc.strerror or exc}]") from None
    if found is None:
        raise _Fail(f"[lsp: {shown} does not exist]")
    return found[0].decode("utf-8", errors="replace")


def _still_current(changes: list[edit_ops.FileChange]) -> bool:
    try:
        return all(read_text(c.path) == c.old for c in changes)
    except OSError:
        return False


def _write(path: Path, text: str) -> None:
    target = write_target(path)
    write_text(target, text, stat.S_IMODE(os.stat(target).st_mode))


def _has_locations(result: Any) -> bool:
    return bool(_location_starts(result))


def _location_starts(result: Any) -> list[tuple[str, dict[str, int]]]:
    """(uri, start position) of every Location or LocationLink in an answer."""
    items = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if "targetUri" in item:
            rng = item.get("targetSelectionRange") or item.get("targetRange") or {}
            uri = item["targetUri"]
        else:
            rng = item.get("range") or {}
            uri = item.get("uri")
        if isinstance(uri, str):
            out.append((uri, rng.get("start") or {"line": 0, "character": 0}))
    return out


def _hover_text(result: Any) -> str:
    """The hover's contents as the server sent them: MarkupContent, a MarkedString (a code
    block when it names its language) or a list of them."""
    if not isinstance(result, dict):
        return ""
    return _marked(result.get("contents"))


def _marked(contents: Any) -> str:
    if contents is None:
        return ""
    if isinstance(contents, str):
        return contents
    if isinstance(contents, list):
        return "\n\n".join(t for t in (_marked(c) for c in contents) if t.strip())
    if isinstance(contents, dict):
        value = str(contents.get("value", ""))
        language = contents.get("language")
        if language and "kind" not in contents:
            return f"```{language}\n{value}\n```"
        return value
    return ""


def _offers_pull(client: LspClient) -> bool:
    if client.capabilities.get("diagnosticProvider"):
        return True
    return any(r.get("method") == "textDocument/diagnostic" for r in client.registrations.values())


__all__ = ["LspArgs", "LspTool", "normalize_extension"]
