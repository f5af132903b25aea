"""What the lsp tests share: the real servers, where they are found, and throw-away copies of the
small projects beside this file.

The servers are found on a PATH the tests set up: the project's .venv/bin (pylsp and
basedpyright, installed by `make test` through `.[lsp]`), tests/node_lsp/node_modules/.bin
(typescript-language-server and bash-language-server, installed by `make test` with npm from
tests/node_lsp/package-lock.json), then the system's (clangd from Debian). Under `make test`
(MM_REQUIRE_LSP=1) a missing server fails its tests, except an npm one where npm itself is
missing (`make test` could not install it: skipped, saying so); run by hand without it, they
are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mm_tui.config import LspServer, Settings
from mm_tui.tools.base import ToolContext, ToolResult
from mm_tui.tools.lsp import LspArgs, LspTool

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FAKE_SERVER = HERE / "fake_server.py"
NODE_LSP = REPO / "tests" / "node_lsp"  # the npm servers' package.json and lock file

SERVERS: dict[str, LspServer] = {
    "pylsp": LspServer(name="pylsp", command="pylsp", extensions=[".py"]),
    "pyright": LspServer(
        name="pyright",
        command="basedpyright-langserver",
        args=["--stdio"],
        extensions=[".py", ".pyi"],
    ),
    "clangd": LspServer(name="clangd", command="clangd", extensions=[".c", ".h"]),
    "tsserver": LspServer(
        name="tsserver",
        command="typescript-language-server",
        args=["--stdio"],
        extensions=[".ts", ".tsx", ".js", ".jsx"],
    ),
    "bashls": LspServer(
        name="bashls", command="bash-language-server", args=["start"], extensions=[".sh"]
    ),
}
FIXTURES = {
    "pylsp": "python",
    "pyright": "python",
    "clangd": "c",
    "tsserver": "ts",
    "bashls": "sh",
}
NPM_SERVERS = {"tsserver", "bashls"}  # installed with npm in tests/node_lsp


def server_path() -> str:
    """The PATH the tests run servers with."""
    extra = [sysconfig.get_path("scripts"), str(Path(sys.prefix) / "bin")]
    npm_bin = NODE_LSP / "node_modules" / ".bin"
    if npm_bin.is_dir():
        extra.append(str(npm_bin))
    parts = extra + os.environ.get("PATH", "").split(os.pathsep)
    seen: list[str] = []
    for part in parts:
        if part and part not in seen:
            seen.append(part)
    return os.pathsep.join(seen)


def require(name: str) -> LspServer:
    """The server's configuration; its absence fails under `make test` and skips otherwise.
    The PATH searched is the one server_path() gives, which the test modules set."""
    server = SERVERS[name]
    if shutil.which(server.command, path=server_path()) is None:
        message = f"language server {name} ({server.command}) is not installed"
        if name in NPM_SERVERS and shutil.which("npm") is None:
            pytest.skip(
                f"{message}: npm not found, so `make test` could not install it "
                "(`npm ci --prefix tests/node_lsp` does)"
            )
        if os.environ.get("MM_REQUIRE_LSP"):
            pytest.fail(message + " — `make lsp-servers` installs it")
        pytest.skip(message)
    return server


def copy_project(fixture: str, dest: Path) -> Path:
    """A copy of a fixture project (rename writes to it); C projects get their compilation
    database, which must name absolute folders."""
    shutil.copytree(HERE / fixture, dest, dirs_exist_ok=True)
    if fixture == "c":
        sources = sorted(p.name for p in dest.glob("*.c"))
        database = [
            {"directory": str(dest), "file": name, "arguments": ["cc", "-c", name]}
            for name in sources
        ]
        (dest / "compile_commands.json").write_text(json.dumps(database, indent=1))
    return dest


@dataclass
class Project:
    """A fixture project with an lsp tool over one server, its calls made as the engine makes
    them."""

    name: str
    root: Path
    tool: LspTool
    ctx: ToolContext

    async def call(self, **fields: Any) -> ToolResult:
        return await self.tool.run(LspArgs(**fields), self.ctx)

    async def ok(self, **fields: Any) -> str:
        result = await self.call(**fields)
        assert result.status == "ok", result.output
        return result.output

    @property
    def client(self):
        running = self.tool.manager.running()
        assert running, "no server is running"
        return running[0].client

    async def aclose(self) -> None:
        await self.tool.aclose()


def make_project(name: str, dest: Path, **tool_options: Any) -> Project:
    server = require(name)
    root = copy_project(FIXTURES[name], dest)
    tool = LspTool([server], root, **tool_options)
    return Project(name, root, tool, ToolContext(cwd=root, settings=Settings()))


def fake_server(log: Path, *options: str, name: str = "fake", ext: str = ".py") -> LspServer:
    return LspServer(
        name=name,
        command=sys.executable,
        args=[str(FAKE_SERVER), "--log", str(log), *options],
        extensions=[ext],
    )


def read_log(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
