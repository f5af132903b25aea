"""What the MCP tests share: mm put together by the real start-up with some MCP servers, on the
scripted model server; the entries for the test server (tests/support/mcp_server.py, the SDK's
FastMCP) and for the reference server (@modelcontextprotocol/server-everything, installed from
tests/mcp_everything/package-lock.json by `make test` when npm is there)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from mm_tui.config import Settings
from mm_tui.core.events import EngineError, Event, ToolCallFinished
from mm_tui.engine.turn import Engine
from mm_tui.startup import start
from support.scripted_server import ScriptedServer

SERVER = Path(__file__).parent / "mcp_server.py"
EVERYTHING = (
    Path(__file__).parents[1]
    / "mcp_everything"
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)
MODEL = "scripted-model"


def stdio(pidfile: Path | None = None, **env: str) -> dict[str, Any]:
    """An mcpServers entry for the test server on stdio."""
    if pidfile is not None:
        env["MCP_TEST_PIDFILE"] = str(pidfile)
    return {"command": sys.executable, "args": [str(SERVER)], "env": env}


def everything() -> dict[str, Any]:
    """An mcpServers entry for the reference server on stdio; the test skips, saying why, when
    Node.js or the server is not installed."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js not found: the MCP reference server needs node and npm")
    if not EVERYTHING.is_file():
        pytest.skip(
            "the MCP reference server is not installed in tests/mcp_everything/node_modules: "
            "`npm ci --prefix tests/mcp_everything` (make test runs it when npm is available)"
        )
    return {"command": node, "args": [str(EVERYTHING), "stdio"]}


def pids(pidfile: Path) -> list[int]:
    return [int(line) for line in pidfile.read_text().split()] if pidfile.exists() else []


def declared(engine: Engine) -> list[str]:
    return sorted(t["function"]["name"] for t in engine.tools())


def finished(events: list[Event]) -> list[ToolCallFinished]:
    return [e for e in events if isinstance(e, ToolCallFinished)]


def warnings_of(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, EngineError) and e.where == "mcp"]


@asynccontextmanager
async def mm_with(
    tmp_path: Path,
    server: ScriptedServer,
    servers: dict[str, Any],
    listen: bool = True,
    **keys: Any,
) -> AsyncIterator[tuple[Engine, list[Event]]]:
    """mm as start-up makes it on the scripted server, with these MCP servers, every server
    started (or failed); its warnings in the list it yields (unless not `listen`); closed at
    the end."""
    settings = Settings(
        baseUrl=server.base_url,
        model=MODEL,
        sessionsDir=str(tmp_path / ".mm" / "sessions"),
        mcpServers=servers,
        **keys,
    )
    started = await start(settings, tmp_path)
    engine = started.engine
    said: list[Event] = []
    if listen:
        engine.registry.listen(said.append)
    try:
        await engine.registry.ready()
        yield engine, said
    finally:
        await engine.aclose()
