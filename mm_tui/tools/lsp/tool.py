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
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mm_tui.config import LspServer, Settings
from mm_tui.core.command_env import command_env
from mm_tui.core.file_access import Gate, SandboxRefusal, gate
from mm_tui.core.sandbox import SandboxConfig
from mm_tui.tools.base import Tool, ToolContext, ToolResult, truncate
from mm_tui.tools.lsp.args import (
    ACTIONS,
    NEEDS_POSITION,
    Call,
    LspArgs,
    normalize_action,
    prepare_call,
)
from mm_tui.tools.lsp.asking import (
    MAX_TRIES,
    CallFailed,
    Opened,
    candidate_positions,
    server_failed,
)
from mm_tui.tools.lsp.client import (
    INITIALIZE_TIMEOUT,
    REQUEST_TIMEOUT,
    LspClient,
    LspError,
    path_to_uri,
    uri_to_path,
)
from mm_tui.tools.lsp.diagnostics import DIAGNOSTICS_WAIT, diagnostics, offers_pull
from mm_tui.tools.lsp.edits import FileChange, apply_workspace_edit
from mm_tui.tools.lsp.manager import Server, ServerManager, describe, normalize_extension
from mm_tui.tools.lsp.positions import Document
from mm_tui.tools.lsp.queries import QUERIES
from mm_tui.tools.lsp.rename import (
    RenamePlan,
    check_new_name,
    needs_new_name,
    plan_rename,
    rename_diff,
    renamed,
    still_planned,
    write_changes,
)
from mm_tui.tools.lsp.symbols import clean_symbol, split_rename, symbol_from_words
from mm_tui.tools.write_file import Refused, file_gate, read_regular

OTHERS_WAIT = 2.0  # seconds, at most, for a server to digest the other files that changed


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
        env: Callable[[], dict[str, str]] = command_env,
        sandbox: SandboxConfig | None = None,
    ) -> None:
        self.servers = servers
        self.cwd = Path(os.path.abspath(cwd))
        self.diagnostics_wait = diagnostics_wait
        self.manager = ServerManager(servers, request_timeout, initialize_timeout, env, sandbox)
        self.sandbox = sandbox
        self.manager.apply_edit = self._apply_edit
        self._locks: dict[tuple[int, str, Path], asyncio.Lock] = {}
        self._pulled: dict[str, list[dict[str, Any]]] = {}  # uri -> last pulled full report
        self._plan: RenamePlan | None = None

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

        # the servers run the project's code (plugins, build scripts): no keys for them either
        def env() -> dict[str, str]:
            return command_env(settings.command_env_exclude, secrets=settings.secret_values())

        # and the sandbox of the commands: they run the project's code
        return cls(found, cwd, env=env, sandbox=settings.sandbox_config()), warnings

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
        action = normalize_action(args.action)
        where = self._where(args)
        if action == "rename":
            symbol, new_name = args.symbol, args.new_name
            if len(args.symbol.split()) >= 2:
                symbol, last, _ = split_rename(args.symbol)
                new_name = new_name or last
            symbol, new_name = clean_symbol(symbol), clean_symbol(new_name)
            return f"rename {where} {symbol} → {new_name}".replace("  ", " ")
        symbol = symbol_from_words(args.symbol) if action in NEEDS_POSITION else ""
        return f"{action} {where} {symbol}".rstrip()

    def display(self, args: LspArgs) -> str:
        return f"🔎 lsp: {self.title(args)}"

    def kind_for(self, args: LspArgs) -> str:
        return "edit" if normalize_action(args.action) == "rename" else "read"

    def needs_permission(self, args: LspArgs) -> bool:
        return normalize_action(args.action) == "rename"

    def rejection(self) -> str:
        return "[rename rejected by the user]"

    def locations(self, args: LspArgs, ctx: ToolContext) -> tuple[str, ...]:
        return (ctx.location(args.path),)

    async def permission_details(self, args: LspArgs, ctx: ToolContext) -> str:
        """The rename's diff, asked of the server before the person decides; the plan is kept
        so that the call, once allowed, writes exactly what was shown."""
        title = self.title(args)
        if normalize_action(args.action) != "rename":
            return title
        try:
            call = prepare_call(args, ctx)
            plan = await self._rename_plan(call, ctx)
        except CallFailed as failure:
            return f"{title}\n{failure}"
        return rename_diff(plan.changes, ctx) or title

    async def aclose(self) -> None:
        await self.manager.aclose()

    # --- running -----------------------------------------------------------------------------

    async def run(self, args: LspArgs, ctx: ToolContext) -> ToolResult:
        try:
            call = prepare_call(args, ctx)
            if call.action not in ACTIONS:
                raise CallFailed(
                    f'[lsp: unknown action "{args.action}" — use definition, references, hover, '
                    "symbols, diagnostics or rename]"
                )
            server = self._server_for(call, ctx)
            was_running = server.client is not None
            try:
                result = await self._perform(call, ctx)
            except CallFailed as failure:
                # A server that died since the last call is started again, and the call made
                # once more (nothing was written: a rename writes only after the answer).
                if not (failure.gone and was_running):
                    raise
                result = await self._perform(call, ctx)
        except CallFailed as failure:
            if failure.stuck is not None:
                await self.manager.stop(failure.stuck)
            return ToolResult(str(failure), status="error")
        if isinstance(result, ToolResult):
            result.output = truncate(result.output, ctx.settings.max_output)
            return result
        return ToolResult(truncate(result, ctx.settings.max_output))

    async def _perform(self, call: Call, ctx: ToolContext) -> str | ToolResult:
        if call.action == "rename":
            return await self._rename(call, ctx)
        opened = await self._open(call, ctx)
        if call.action == "diagnostics":
            return await diagnostics(call, ctx, opened, self.diagnostics_wait, self._pulled)
        return await QUERIES[call.action](call, ctx, opened)

    def _lock(self, server: Server) -> asyncio.Lock:
        """One request sequence at a time per server, per event loop (a lock is bound to one)."""
        key = (id(asyncio.get_running_loop()), server.config.name, server.root)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _server_for(self, call: Call, ctx: ToolContext) -> Server:
        config = self.manager.config_for(call.path)
        if config is None:
            raise CallFailed(
                f'[lsp: no language server for "{call.raw_path}" — configured: '
                f"{describe(self.servers)}]"
            )
        return self.manager.server(config, Path(os.path.abspath(ctx.cwd)))

    def _gate(self) -> Gate:
        """The policy a server's own edits obey: the sandbox of the servers (none: they and
        their edits are unconfined)."""
        return gate(self.sandbox or SandboxConfig(mode="off"), self.cwd)

    async def _apply_edit(self, edit: dict[str, Any], encoding: str) -> bool:
        """A server's workspace/applyEdit: the files it names are the server's word, and the
        server runs the project's code; they obey the policy as the tools' writes do."""
        return await apply_workspace_edit(edit, encoding, self._gate())

    async def _open(self, call: Call, ctx: ToolContext) -> Opened:
        """The server for the call's file, started if need be, told the file's text. A call
        that cannot be right (a symbol not in the file, a line past its end) fails before any
        server is started."""
        server = self._server_for(call, ctx)
        checked = file_gate(ctx)
        text = await asyncio.to_thread(_read_file, checked, call.path, call.raw_path)
        candidates: list[tuple[int, int]] = []
        if call.action in NEEDS_POSITION:
            candidates = candidate_positions(call, Document(text))[:MAX_TRIES]
        lock = self._lock(server)
        async with lock:
            client = await self._client(server, call.action)
            serial = client.serial
            changed = await self._sync(server, client, call, call.path, text, checked)
        document = Document(text, client.encoding)
        return Opened(server, client, document, changed, serial, candidates, lock)

    async def _client(self, server: Server, action: str) -> LspClient:
        try:
            return await self.manager.ensure_started(server)
        except LspError as exc:
            raise CallFailed(f"[lsp: {server.config.name}: {action} failed: {exc}]") from None

    async def _sync(
        self, server: Server, client: LspClient, call: Call, path: Path, text: str, checked: Gate
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
                    # judged again: the name may lead elsewhere now (a link swapped in)
                    other_text = await asyncio.to_thread(checked.read_text, other)
                except OSError:
                    server.documents.pop(uri, None)
                    await client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                    continue
                if await self.manager.sync(server, client, other, other_text):
                    moved.append(uri)
            changed = await self.manager.sync(server, client, path, text)
        except LspError as exc:
            raise server_failed(server, call.action, exc) from None
        pending, server.pending = server.pending, None
        if pending is not None:  # a rename's files, digested while the model was thinking
            await _digest(client, pending[0], pending[1], pending[2])
        await _digest(client, moved, serial)
        return changed

    # --- rename ------------------------------------------------------------------------------

    async def _rename_plan(self, call: Call, ctx: ToolContext) -> RenamePlan:
        """Ask the server for the rename and work out every file's new text, writing nothing."""
        check_new_name(call)
        opened = await self._open(call, ctx)
        plan = await plan_rename(call, ctx, opened)
        self._plan = plan
        return plan

    async def _rename(self, call: Call, ctx: ToolContext) -> ToolResult:
        plan = self._plan
        self._plan = None
        if plan is None or not await still_planned(plan, call, ctx):
            if not call.new_name:
                raise needs_new_name(call)
            plan = await self._rename_plan(call, ctx)
            self._plan = None
        written = await write_changes(plan.changes, ctx)
        await self._tell_written(plan.server, written)
        return renamed(call, written, ctx)

    async def _tell_written(self, server: Server, written: list[FileChange]) -> None:
        """Tell the server what is now on disk, so its next answers are about the renamed code."""
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


# --- helpers ---------------------------------------------------------------------------------


async def _digest(
    client: LspClient, uris: list[str], serial: int, deadline: float | None = None
) -> None:
    """Wait, briefly, for the server to digest files it was told about. A server that
    publishes diagnostics does so once it has digested a file (clangd indexes it at that
    moment); an answer about those files asked before would come from their old text."""
    if not uris or serial <= 0 or offers_pull(client):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + OTHERS_WAIT if deadline is None else deadline
    for uri in uris:
        left = deadline - loop.time()
        if left <= 0:
            return
        await client.wait_published(uri, serial, None, left)


def _read_file(checked: Gate, path: Path, shown: str) -> str:
    """The file's text; a folder, a pipe or a device is refused (reading a pipe would block),
    and what the sandbox's policy refuses (mm would hand the server, and through its answers
    the model, a secret the server itself may not read)."""
    try:
        with checked.place(shown, write=False) as place:  # `path` is `shown` resolved
            found = read_regular(shown, place)
    except SandboxRefusal as exc:
        raise CallFailed(f"[lsp: {exc.reason}]") from None
    except Refused as exc:
        raise CallFailed(f"[lsp: {exc}]") from None
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise CallFailed(f"[lsp: cannot read {shown}: {exc.strerror or exc}]") from None
    if found is None:
        raise CallFailed(f"[lsp: {shown} does not exist]")
    return found[0].decode("utf-8", errors="replace")


__all__ = ["LspArgs", "LspTool", "normalize_extension"]
