"""What the actions share: the server and file opened for a call, the symbol's positions tried
one after the other, and the one line of text a call fails with.

A symbol named by the model may occur in several places, and a server answers nothing at some
of them (a mention in a comment), so a question is asked at each candidate position in turn
until one answer is worth giving. Whatever goes wrong comes back as a
`CallFailed` whose text the model reads as it is.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mm_tui.tools.base import ToolContext
from mm_tui.tools.lsp.args import Call
from mm_tui.tools.lsp.client import (
    LspClient,
    LspError,
    LspTimeout,
    ResponseError,
    ServerExited,
    path_to_uri,
)
from mm_tui.tools.lsp.manager import Server
from mm_tui.tools.lsp.positions import Document
from mm_tui.tools.lsp.symbols import occurrences

SETTLE_GRACE = 0.3  # seconds after the first opened file for a server to announce its indexing
SETTLE_TIMEOUT = 20.0  # seconds, at most, waited for that indexing before a cross-file question
MAX_TRIES = 20  # occurrences of a symbol tried, at most, before giving up
DIGEST_WAIT = 3.0  # seconds, at most, for a server to digest a file it answered nothing about


class CallFailed(Exception):
    """A failure whose text goes to the model as it is; `gone` when the server died under it,
    `stuck` (the server that did not answer in time) when it must be stopped."""

    def __init__(self, text: str, gone: bool = False, stuck: Server | None = None) -> None:
        super().__init__(text)
        self.gone = gone
        self.stuck = stuck


STOPPED = " — the server was stopped; the next call starts it again"


def server_failed(server: Server, action: str, exc: Exception) -> CallFailed:
    if isinstance(exc, LspTimeout):
        # A server that does not answer in time is stuck more often than slow: stopped, so
        # that the next call gets a fresh one instead of waiting on the same again.
        return CallFailed(
            f"[lsp: {server.config.name}: {action} failed: {exc}{STOPPED}]", stuck=server
        )
    return CallFailed(
        f"[lsp: {server.config.name}: {action} failed: {exc}]", isinstance(exc, ServerExited)
    )


@dataclass
class Opened:
    """A call's server, ready, and its file as just told to it."""

    server: Server
    client: LspClient
    document: Document
    changed: bool  # the sync told the server something new
    serial_before: int  # the client's publication count before that sync
    candidates: list[tuple[int, int]]  # the 0-based positions to try, for the actions that point
    lock: asyncio.Lock  # held around each request: one request sequence at a time per server


def offers_pull(client: LspClient) -> bool:
    """Whether the server gives diagnostics when asked (textDocument/diagnostic) rather than
    publishing them on its own."""
    if client.capabilities.get("diagnosticProvider"):
        return True
    return any(r.get("method") == "textDocument/diagnostic" for r in client.registrations.values())


async def digested(opened: Opened, uri: str) -> bool:
    """After an empty answer about a file just told: whether the server has now digested it,
    waited for as the diagnostics action waits, and so an empty answer is worth asking again.
    A server may answer before it has read the file: bash-language-server reads none until
    its start-up is over (its configuration asked of mm and heard), and until then lists no
    symbols and finds nothing at any position. It publishes the file's diagnostics once it has
    read it, as most servers do; a server that is asked for them instead (pyright) reads a
    file as soon as it is told, and one that publishes nothing costs DIGEST_WAIT seconds, only
    when the answer was empty."""
    client = opened.client
    if not opened.changed or offers_pull(client):
        return False
    known = opened.server.documents.get(uri)
    version = known.version if known is not None else None
    return await client.wait_published(uri, opened.serial_before, version, DIGEST_WAIT)


def show_path(path: Path, ctx: ToolContext) -> str:
    """Relative inside the project, absolute outside it."""
    root = Path(os.path.abspath(ctx.cwd))
    absolute = Path(os.path.abspath(path))
    for base, target in ((root, absolute), (root.resolve(), absolute.resolve())):
        try:
            return str(target.relative_to(base))
        except ValueError:
            continue
    return str(absolute)


def candidate_positions(call: Call, document: Document) -> list[tuple[int, int]]:
    """The 0-based positions to try, best first; raises CallFailed with the reason when there
    is none."""
    lines = document.lines
    count = document.line_count
    suffix = call.path.suffix.lower()
    if call.line > 0:
        if call.line > count:
            lines_text = "1 line" if count == 1 else f"{count} lines"
            raise CallFailed(
                f"[lsp: line {call.line} is past the end of {call.raw_path} ({lines_text})]"
            )
        index = call.line - 1
        text = document.line(index)
        found = occurrences(lines, call.symbol, suffix, index) if call.symbol else []
        if call.column > 0:
            if call.column > len(text) + 1:
                raise CallFailed(
                    f"[lsp: column {call.column} is past the end of line {call.line} "
                    f"({len(text)} characters)]"
                )
            exact = (index, call.column - 1)
            return [exact] + [(o.line, o.column) for o in found if not _inside(o, exact, call)]
        if not call.symbol:
            raise CallFailed(
                f"[lsp: {call.action} needs a symbol, or a column on line {call.line} of "
                f"{call.raw_path}]"
            )
        if not found:
            raise CallFailed(
                f'[lsp: "{call.symbol}" not found on line {call.line} of {call.raw_path}]'
            )
        return [(o.line, o.column) for o in found]
    if not call.symbol:
        raise CallFailed(
            f"[lsp: {call.action} needs a symbol (the identifier as written in the code), "
            "or a line and a column]"
        )
    found = occurrences(lines, call.symbol, suffix)
    if not found:
        raise CallFailed(f'[lsp: "{call.symbol}" not found in {call.raw_path}]')
    positions = [(o.line, o.column) for o in found]
    if call.hint and 0 < call.hint[0] <= count:
        hinted_line, hinted_col = call.hint[0] - 1, call.hint[1] - 1
        on_line = [p for p in positions if p[0] == hinted_line]
        on_line.sort(key=lambda p: not (p[1] <= hinted_col < p[1] + len(call.symbol)))
        positions = on_line + [p for p in positions if p[0] != hinted_line]
    return positions


def _inside(occurrence: Any, exact: tuple[int, int], call: Call) -> bool:
    return occurrence.line == exact[0] and occurrence.column <= exact[1] < occurrence.column + len(
        call.symbol
    )


async def ask(
    call: Call,
    opened: Opened,
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
    for attempt in range(2):
        for line, column in candidates:
            params = {
                "textDocument": {"uri": uri},
                "position": document.to_wire(line, column),
                **extra,
            }
            try:
                async with opened.lock:
                    result = await client.request(method, params)
            except ResponseError as exc:
                first_error = first_error or (str(exc) or f"error {exc.code}")
                continue
            except LspError as exc:
                raise server_failed(server, call.action, exc) from None
            if accept(result):
                return result, (line, column)
        # nothing anywhere: perhaps the server had not read the file yet; once more if so
        if attempt or first_error is not None or not await digested(opened, uri):
            break
    if first_error is not None:
        raise CallFailed(f"[lsp: {server.config.name}: {call.action} failed: {first_error}]")
    line, column = candidates[0]
    what = {"hover": "hover information", "rename": "rename"}.get(call.action, call.action)
    raise CallFailed(
        f"[lsp: no {what} found for the symbol at {call.raw_path}:{line + 1}:{column + 1}]"
    )
