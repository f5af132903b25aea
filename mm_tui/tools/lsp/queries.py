"""The questions that read the code: definition, references, hover and symbols, and their
answers as text.

A model acts on `path:line:column  <source line>` far better than on the protocol's Locations,
so every place is given with the line it points at, and the hover's contents as the server
wrote them, whichever of the protocol's shapes it chose.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mm_tui.core.files import read_text
from mm_tui.tools.base import ToolContext
from mm_tui.tools.lsp.args import Call
from mm_tui.tools.lsp.asking import Opened, ask, digested, server_failed, show_path
from mm_tui.tools.lsp.client import LspError, path_to_uri, uri_to_path
from mm_tui.tools.lsp.positions import Document
from mm_tui.tools.lsp.symbols import format_symbols, symbol_tree


async def definition(call: Call, ctx: ToolContext, opened: Opened) -> str:
    result, _ = await ask(call, opened, "textDocument/definition", {}, _has_locations)
    return "\n".join(_locations(result, ctx, opened.client.encoding))


async def references(call: Call, ctx: ToolContext, opened: Opened) -> str:
    result, _ = await ask(
        call,
        opened,
        "textDocument/references",
        {"context": {"includeDeclaration": True}},
        _has_locations,
    )
    lines = _locations(result, ctx, opened.client.encoding)
    return "\n".join([f"{len(lines)} reference(s):", *lines])


async def hover(call: Call, ctx: ToolContext, opened: Opened) -> str:
    result, _ = await ask(
        call,
        opened,
        "textDocument/hover",
        {},
        lambda r: bool(_hover_text(r).strip()),
    )
    return _hover_text(result).strip("\n")


async def symbols(call: Call, ctx: ToolContext, opened: Opened) -> str:
    server, client = opened.server, opened.client
    uri = path_to_uri(call.path)
    params = {"textDocument": {"uri": uri}}
    lines: list[str] = []
    for attempt in range(2):
        try:
            async with opened.lock:
                result = await client.request("textDocument/documentSymbol", params)
        except LspError as exc:
            raise server_failed(server, "symbols", exc) from None
        lines = format_symbols(symbol_tree(result))
        # none: perhaps the server had not read the file yet (asked just after its start)
        if lines or attempt or not await digested(opened, uri):
            break
    if not lines:
        return f"no symbols found in {call.raw_path}"
    return "\n".join(lines)


QUERIES: dict[str, Callable[[Call, ToolContext, Opened], Awaitable[str]]] = {
    "definition": definition,
    "references": references,
    "hover": hover,
    "symbols": symbols,
}


def _locations(result: Any, ctx: ToolContext, encoding: str) -> list[str]:
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
        rows.add((show_path(path, ctx), line + 1, column + 1, source))
    out = []
    for shown, line, column, source in sorted(rows):
        out.append(f"{shown}:{line}:{column}  {source}".rstrip())
    return out


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
