"""The diagnostics action: a file's errors and warnings as its server sees them, one line each.

Servers deliver diagnostics in two ways: most publish them on their own once they have digested
a file, some (pyright) answer when asked (`textDocument/diagnostic`). The action asks those that
offer it, and otherwise waits, briefly, for a publication newer than the text just told. An
empty list from a server with no linter installed is not taken for a clean file.
"""

from __future__ import annotations

from typing import Any

from mm_tui.tools.base import ToolContext
from mm_tui.tools.lsp.args import Call
from mm_tui.tools.lsp.asking import Opened, offers_pull, server_failed, show_path
from mm_tui.tools.lsp.client import LspError, ServerExited, path_to_uri
from mm_tui.tools.lsp.manager import Server
from mm_tui.tools.lsp.positions import Document

DIAGNOSTICS_WAIT = 3.0  # seconds the diagnostics action waits for the server's publication
_SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}


async def diagnostics(
    call: Call,
    ctx: ToolContext,
    opened: Opened,
    wait: float,
    pulled: dict[str, list[dict[str, Any]]],
) -> str:
    """`wait`: the seconds a publication is waited for; `pulled`: the last full report pulled
    per uri, what an `unchanged` report refers to."""
    server, client, document = opened.server, opened.client, opened.document
    uri = path_to_uri(call.path)
    shown = show_path(call.path, ctx)
    name = server.config.name
    if offers_pull(client):
        return await _pull(opened, uri, shown, pulled)
    doc = server.documents.get(uri)
    version = doc.version if doc else None
    changed = opened.changed
    published = client.published(uri)
    if (
        not changed
        and published is not None
        and (version is None or published.version is None or published.version >= version)
    ):
        return _format_diagnostics(
            published.diagnostics, shown, document, " (as last published)", server
        )
    after = opened.serial_before if changed else 0
    got = await client.wait_published(
        uri, after, version, wait, give_up=lambda: offers_pull(client)
    )
    if not got and offers_pull(client):
        # pyright registers pull diagnostics a moment after it started: pull, then
        return await _pull(opened, uri, shown, pulled)
    if not got:
        if not client.alive:
            raise server_failed(server, "diagnostics", ServerExited(client.exit_reason))
        return (
            f"no diagnostics received for {shown} within {wait:g}s "
            f"({name} published nothing for it yet — it may still be loading the project; "
            "call diagnostics again in a moment)"
        )
    published = client.published(uri)
    items = published.diagnostics if published is not None else []
    return _format_diagnostics(items, shown, document, "", server)


async def _pull(
    opened: Opened, uri: str, shown: str, pulled: dict[str, list[dict[str, Any]]]
) -> str:
    """Diagnostics asked for (textDocument/diagnostic), from a server that offers that."""
    server, client = opened.server, opened.client
    params: dict[str, Any] = {"textDocument": {"uri": uri}}
    try:
        async with opened.lock:
            report = await client.request("textDocument/diagnostic", params)
    except LspError as exc:
        raise server_failed(server, "diagnostics", exc) from None
    report = report if isinstance(report, dict) else {}
    if report.get("kind") == "unchanged":
        items = pulled.get(uri, [])
    else:
        items = [d for d in report.get("items") or [] if isinstance(d, dict)]
        pulled[uri] = items
    return _format_diagnostics(items, shown, opened.document, "", server)


def _format_diagnostics(
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


__all__ = ["DIAGNOSTICS_WAIT", "diagnostics", "offers_pull"]
