"""The language servers of a session: which one serves a file, started when first needed, kept,
started again when it died, and stopped when mm exits.

Every request is preceded by a sync of its file from disk (`didOpen` the first time, a
whole-document `didChange` when the text moved), so the server always answers about what is on
disk, including edits that edit_file or the person made in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mm_tui.config import LspServer
from mm_tui.core.command_env import command_env
from mm_tui.core.files import read_text
from mm_tui.core.sandbox import SandboxConfig
from mm_tui.tools.lsp.client import (
    INITIALIZE_TIMEOUT,
    REQUEST_TIMEOUT,
    LspClient,
    LspError,
    path_to_uri,
)

SCAN_LIMIT = 20000  # files in the project above which changes on disk are not looked for
MAX_CATCH_UP = 50  # changed files opened in the server, at most, before one call
_SKIPPED_DIRS = {"node_modules", "__pycache__", "venv", "site-packages"}

_LANGUAGE_IDS = {
    ".py": "python", ".pyi": "python", ".go": "go", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".m": "objective-c", ".mm": "objective-cpp", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "typescriptreact", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascriptreact", ".rs": "rust", ".java": "java",
    ".rb": "ruby", ".lua": "lua", ".sh": "shellscript", ".bash": "shellscript", ".cs": "csharp",
    ".kt": "kotlin", ".swift": "swift", ".zig": "zig", ".php": "php", ".md": "markdown",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".html": "html",
    ".css": "css", ".scss": "scss", ".vue": "vue", ".svelte": "svelte", ".ex": "elixir",
    ".exs": "elixir", ".hs": "haskell", ".ml": "ocaml", ".scala": "scala", ".dart": "dart",
}  # fmt: skip


def language_id(path: Path) -> str:
    suffix = path.suffix.lower()
    return _LANGUAGE_IDS.get(suffix, suffix.lstrip(".") or "plaintext")


def normalize_extension(ext: str) -> str:
    ext = ext.strip()
    return ext if ext.startswith(".") else "." + ext


def describe(servers: list[LspServer]) -> str:
    """`gopls (.go), pyright (.py, .pyi)`: how the description and the failures name them."""
    parts = []
    for server in servers:
        exts = ", ".join(normalize_extension(e) for e in server.extensions)
        parts.append(f"{server.name} ({exts})" if exts else server.name)
    return ", ".join(parts)


@dataclass
class OpenDocument:
    version: int
    text: str


@dataclass
class Server:
    """A configured server for one project root, and its running client when there is one."""

    config: LspServer
    root: Path
    client: LspClient | None = None
    documents: dict[str, OpenDocument] = field(default_factory=dict)  # uri -> what it was told
    has_linter: bool | None = None  # pylsp only: whether a lint plugin loads
    starts: int = 0
    # the project's files of this server's languages as last seen: path -> (mtime, size);
    # None before the first look, or when the project is too large to look at every call
    snapshot: dict[Path, tuple[int, int]] | None = None
    too_large: bool = False
    # files just written and told (a rename): their URIs, the publication count before, and
    # until when (event loop time) the next call may wait for the server to digest them
    pending: tuple[list[str], int, float] | None = None


class ServerManager:
    def __init__(
        self,
        servers: list[LspServer],
        request_timeout: float = REQUEST_TIMEOUT,
        initialize_timeout: float = INITIALIZE_TIMEOUT,
        env: Callable[[], dict[str, str]] = command_env,
        sandbox: SandboxConfig | None = None,
    ) -> None:
        self.configs = servers
        self.sandbox = sandbox  # the sandbox the servers run in (None: none)
        self.env = env  # a server's environment, made as it starts: mm's without the keys
        self.request_timeout = request_timeout
        self.initialize_timeout = initialize_timeout
        self._servers: dict[tuple[str, Path], Server] = {}
        self.apply_edit: Any = None  # set by the tool: how a server's workspace/applyEdit runs

    def config_for(self, path: Path) -> LspServer | None:
        """The first listed server whose extensions take this file (exact case first)."""
        suffix = path.suffix
        for exact in (True, False):
            for config in self.configs:
                for ext in config.extensions:
                    ext = normalize_extension(ext)
                    if (ext == suffix) if exact else (ext.lower() == suffix.lower()):
                        return config
        return None

    def server(self, config: LspServer, root: Path) -> Server:
        key = (config.name, root)
        server = self._servers.get(key)
        if server is None:
            server = Server(config, root)
            self._servers[key] = server
        return server

    def running(self) -> list[Server]:
        return [s for s in self._servers.values() if s.client is not None]

    async def ensure_started(self, server: Server) -> LspClient:
        """The server's client, started (or started again after a crash); raises LspError."""
        client = server.client
        if client is not None and client.alive:
            return client
        if client is not None:
            # dead, or stranded on an event loop that is gone: forget what it was told
            if _same_loop(client):
                await client.kill()
            else:
                client.abandon()
            server.client = None
            server.documents.clear()
            server.pending = None
        config = server.config
        command = shutil.which(config.command) or config.command
        env = self.env()
        client = LspClient(
            name=config.name,
            command=command,
            args=list(config.args),
            root=server.root,
            request_timeout=self.request_timeout,
            initialize_timeout=self.initialize_timeout,
            apply_edit=self.apply_edit,
            env=env,
            sandbox=self.sandbox,
        )
        probe = None
        if server.has_linter is None and _is_pylsp(command):
            probe = asyncio.create_task(asyncio.to_thread(pylsp_has_linter, command, env))
        try:
            await client.start()
        except LspError:
            if probe is not None:
                probe.cancel()
            raise
        if probe is not None:
            with contextlib.suppress(Exception):
                server.has_linter = await probe
        server.client = client
        server.starts += 1
        server.snapshot = None
        await self.look(server)
        return client

    async def look(self, server: Server) -> list[tuple[Path, int]]:
        """Compare the project's files with the last look: (path, 1 created | 2 changed |
        3 deleted) for each difference."""
        if server.too_large:
            return []
        extensions = {normalize_extension(e).lower() for e in server.config.extensions}
        now = await asyncio.to_thread(scan_project, server.root, extensions)
        if now is None:
            server.too_large = True
            server.snapshot = None
            return []
        before = server.snapshot
        server.snapshot = now
        if before is None:
            return []
        events = [(p, 1 if p not in before else 2) for p, st in now.items() if before.get(p) != st]
        events += [(p, 3) for p in before if p not in now]
        return sorted(events)

    async def catch_up(self, server: Server, client: LspClient, skip: Path) -> list[str]:
        """Tell the server about the project's files that changed on disk since it last heard
        of them, not only the one the call names: a server that read `greeter.py` at start-up
        (pyright, clangd's index) would otherwise answer from its old text after an edit_file,
        with line numbers that no longer hold. The watched-files notification covers what
        servers re-read by themselves; changed files are also opened, so that their text is
        sent with every later call (clangd trusts nothing else). The URIs opened are returned;
        `skip`, the call's own file, is left to the caller."""
        events = await self.look(server)
        if not events:
            return []
        await client.notify(
            "workspace/didChangeWatchedFiles",
            {"changes": [{"uri": path_to_uri(p), "type": kind} for p, kind in events]},
        )
        opened: list[str] = []
        for path, kind in events:
            uri = path_to_uri(path)
            if kind != 2 or path == skip or uri in server.documents:
                continue
            if len(opened) >= MAX_CATCH_UP:
                break
            try:
                text = await asyncio.to_thread(read_text, path)
            except OSError:
                continue
            await self.sync(server, client, path, text)
            opened.append(uri)
        return opened

    async def sync(self, server: Server, client: LspClient, path: Path, text: str) -> bool:
        """Tell the server the file's text as on disk; True when that changed what it knew."""
        uri = path_to_uri(path)
        known = server.documents.get(uri)
        if known is None:
            if client.first_open is None:
                client.first_open = time.monotonic()
            server.documents[uri] = OpenDocument(1, text)
            await client.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": language_id(path),
                        "version": 1,
                        "text": text,
                    }
                },
            )
            return True
        if known.text == text:
            return False
        known.version += 1
        known.text = text
        await client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": known.version},
                "contentChanges": [{"text": text}],
            },
        )
        return True

    async def stop(self, server: Server) -> None:
        """Stop one server now (it is stuck); the next call starts it again."""
        client, server.client = server.client, None
        server.documents.clear()
        server.pending = None
        if client is not None:
            if _same_loop(client):
                await client.kill()
            else:
                client.abandon()

    async def aclose(self) -> None:
        """Stop every server politely and at the same time."""
        servers = list(self._servers.values())
        self._servers.clear()
        closing = []
        for server in servers:
            client = server.client
            server.client = None
            if client is None:
                continue
            if _same_loop(client):
                closing.append(client.close())
            else:
                client.abandon()
        if closing:
            await asyncio.gather(*closing, return_exceptions=True)


def scan_project(root: Path, extensions: set[str]) -> dict[Path, tuple[int, int]] | None:
    """The project's files with these extensions, with their modification time and size;
    None when the tree holds more than SCAN_LIMIT files (looking at every call would cost
    more than it saves). Hidden folders, virtual environments and node_modules are skipped,
    as the servers themselves skip them."""
    found: dict[Path, tuple[int, int]] = {}
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIPPED_DIRS
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        ]
        seen += len(files)
        if seen > SCAN_LIMIT:
            return None
        for name in files:
            if os.path.splitext(name)[1].lower() not in extensions:
                continue
            path = Path(folder, name)
            try:
                st = path.stat()
            except OSError:
                continue
            found[path] = (st.st_mtime_ns, st.st_size)
    return found


def _same_loop(client: LspClient) -> bool:
    try:
        return asyncio.get_running_loop() is client.loop
    except RuntimeError:
        return False


def _is_pylsp(command: str) -> bool:
    return Path(command).name in ("pylsp", "pyls")


_LINTER_PROBE = """
import importlib.metadata as m
found = []
for ep in m.entry_points(group="pylsp"):
    if ep.name in ("pylint", "flake8", "pydocstyle"):  # off unless configured
        continue
    try:
        mod = ep.load()
    except Exception:
        continue
    if hasattr(mod, "pylsp_lint"):
        found.append(ep.name)
print(" ".join(found))
"""


def pylsp_has_linter(command: str, env: dict[str, str] | None = None) -> bool | None:
    """Whether pylsp can lint at all: without pyflakes, pycodestyle or another lint plugin it
    still publishes an empty list for every file, which must not read as "clean". The plugins
    are pylsp's entry points; one whose module loads and has a `pylsp_lint` hook is a linter
    (pylint, flake8 and pydocstyle are off in pylsp's defaults and do not count).
    None when the interpreter behind the command cannot be found."""
    try:
        with open(command, "rb") as f:
            first = f.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    interpreter = first[2:].decode("utf-8", errors="replace").strip().split()
    if not interpreter or not os.path.exists(interpreter[0]):
        return None
    try:
        done = subprocess.run(
            [*interpreter, "-c", _LINTER_PROBE],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            env=command_env() if env is None else env,  # it loads the plugins: no keys either
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return bool(done.stdout.split())
