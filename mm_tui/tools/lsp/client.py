"""A language-server client: JSON-RPC 2.0 over the server's stdin and stdout.

Messages are framed with a `Content-Length` header (bytes, not characters). One reader task
parses the frames and routes them: answers to the waiting requests, notifications to the
handlers (diagnostics are kept per document), and the server's own requests are answered at
once, because a server that asks something (its configuration, permission to show progress)
and hears nothing may stall every later answer.

The server's stderr is read continuously: a chatty server (pyright logs a lot) would otherwise
fill the pipe and block on its next write. Its first characters are kept, and a small ring of its
last ones: a failing program says what is wrong first (`error: rustup could not choose a version
of rust-analyzer to run`) and where it ended last, with a backtrace between.

The server runs in the sandbox of the commands (`core/sandbox.py`) when it is given one, started
like a bash command from the sandbox's launcher process (confined or not), with pipes mm made
and keeps its ends of; those are then handed to the event loop. Stopping it is a request to
the launcher (`LaunchedProcess.kill`).

The client never raises anything but `LspError` (and its subclasses) for a server's misbehaviour:
the tool turns those into text for the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mm_tui import __version__
from mm_tui.core.command_env import command_env
from mm_tui.core.launcher import LaunchedProcess, LauncherGone
from mm_tui.core.processes import signal_name
from mm_tui.core.sandbox import Confinement, SandboxConfig, confine
from mm_tui.tools.lsp.positions import ENCODINGS, UTF16

REQUEST_TIMEOUT = 15.0  # seconds a request may take before the call gives up
INITIALIZE_TIMEOUT = 60.0  # a server indexing a large project on start-up may take a while
READY_LOG_WAIT = 5.0  # seconds, at most, waited for a _READY_LOGS marker
SHUTDOWN_TIMEOUT = 2.0  # per step of the polite stop (shutdown answer, exit)
STDERR_KEEP = 4096  # characters of the end of the server's stderr kept for error messages
STDERR_HEAD_KEEP = 1024  # and of its beginning
STDERR_SHOWN = 600  # characters of it, at most, in an error message: half its start, half its end
STDERR_DRAIN = 2.0  # seconds, at most, to read the rest of a gone server's stderr

# Servers known to count columns in code points whatever they are told (jedi's columns, sent
# as they are), and that do not say so.
_CODE_POINT_SERVERS = {"pylsp", "pyls"}

# Servers that enumerate the project's files some time after start-up without announcing it as
# work-done progress, and answer a references or rename request that comes first from the open
# files alone (pyright: two references out of five). What they log when the enumeration is done:
_READY_LOGS = {
    "pyright": re.compile(r"^(Found \d+ source files?|No source files found)"),
    "basedpyright": re.compile(r"^(Found \d+ source files?|No source files found)"),
}

# The methods a server may call on the client and that need no more than an empty answer.
_NULL_REQUESTS = {
    "window/workDoneProgress/create",
    "client/unregisterCapability",
    "window/showMessageRequest",
    "window/showDocument",
    "workspace/semanticTokens/refresh",
    "workspace/inlayHint/refresh",
    "workspace/inlineValue/refresh",
    "workspace/codeLens/refresh",
    "workspace/diagnostic/refresh",
    "workspace/foldingRange/refresh",
}


class LspError(Exception):
    """A request that did not get a usable answer; the message is meant for the model."""


class LspTimeout(LspError):
    pass


class ServerExited(LspError):
    pass


class ResponseError(LspError):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def path_to_uri(path: Path | str) -> str:
    return Path(os.path.abspath(path)).as_uri()


def uri_to_path(uri: str) -> Path | None:
    """The file a `file://` URI names; None for other schemes (a server's virtual documents)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path))


def document_key(uri: str) -> str:
    """One spelling per document, whatever the server's: the real path for a file."""
    path = uri_to_path(uri)
    return os.path.realpath(path) if path is not None else uri


def client_capabilities() -> dict[str, Any]:
    """What mm can take: enough for the six actions and the server's usual requests."""
    return {
        "general": {"positionEncodings": ["utf-16"]},
        "textDocument": {
            "synchronization": {"dynamicRegistration": False, "didSave": True},
            "definition": {"dynamicRegistration": False, "linkSupport": True},
            "references": {"dynamicRegistration": False},
            "hover": {"dynamicRegistration": False, "contentFormat": ["markdown", "plaintext"]},
            "documentSymbol": {
                "dynamicRegistration": False,
                "hierarchicalDocumentSymbolSupport": True,
                "symbolKind": {"valueSet": list(range(1, 27))},
            },
            "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
            "diagnostic": {"dynamicRegistration": True, "relatedDocumentSupport": False},
            "rename": {"dynamicRegistration": False, "prepareSupport": False},
        },
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {"documentChanges": True, "resourceOperations": []},
            "configuration": True,
            "workspaceFolders": True,
            "didChangeConfiguration": {"dynamicRegistration": False},
        },
        "window": {"workDoneProgress": True},
    }


@dataclass
class Published:
    """The last diagnostics a server published for one document."""

    diagnostics: list[dict[str, Any]]
    version: int | None
    serial: int  # increases with every publication, whatever the document


@dataclass
class WireStats:
    """Time spent waiting for the server's answers, as seen on the wire: the benchmark's floor."""

    requests: int = 0
    seconds: float = 0.0
    last: float = 0.0


ApplyEdit = Callable[[dict[str, Any], str], Awaitable[bool]]


@dataclass
class LspClient:
    """One running language server."""

    name: str
    command: str
    args: list[str]
    root: Path
    request_timeout: float = REQUEST_TIMEOUT
    initialize_timeout: float = INITIALIZE_TIMEOUT
    apply_edit: ApplyEdit | None = None  # how workspace/applyEdit is carried out
    # its environment: None for mm's without the keys (`command_env` with the default patterns)
    env: dict[str, str] | None = None
    # the sandbox it runs in (core/sandbox.py, the `sandbox` settings); None: none
    sandbox: SandboxConfig | None = None

    capabilities: dict[str, Any] = field(default_factory=dict)
    server_info: dict[str, Any] = field(default_factory=dict)
    registrations: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> registration
    # the last publication per document, keyed by document_key (a server may spell a URI its own
    # way: percent-encoding, a symbolic link resolved)
    diagnostics: dict[str, Published] = field(default_factory=dict)
    wire: WireStats = field(default_factory=WireStats)
    encoding: str = UTF16  # how the server counts columns: UTF-16 unless it says otherwise

    def __post_init__(self) -> None:
        self._proc: LaunchedProcess | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr: deque[str] = deque()  # the last STDERR_KEEP characters, or a few more
        self._stderr_len = 0
        self._stderr_head = ""  # the first STDERR_HEAD_KEEP characters
        self._stderr_total = 0  # characters read in all
        self._stderr_task: asyncio.Task[None] | None = None
        self._serial = 0
        self._published = asyncio.Event()  # set (then cleared) on every publication
        self._write_lock: asyncio.Lock | None = None
        self._exited: str | None = None  # why the server is gone, once it is
        # its output ended: dead for every purpose, even before its exit is seen (a killed
        # process is reaped a little later, and on a busy machine well after)
        self._output_closed = False
        self.progress: dict[str, str] = {}  # work-done progress begun and not ended: token -> title
        self._idle = asyncio.Event()
        self._begun = asyncio.Event()  # set at the first work-done progress the server reports
        self._ready = asyncio.Event()  # set when a server of _READY_LOGS logs its marker
        self.logs: deque[str] = deque(maxlen=200)  # the server's last window/logMessage texts
        self.first_open: float | None = None  # when the first document was opened (monotonic)
        self.settled = False  # the start-up work (indexing) has been waited for

    # --- life ------------------------------------------------------------------------------

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the server's pipes belong to."""
        return self._loop

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        """Running, and reachable from the event loop now running (a closed loop strands it)."""
        if self._proc is None or self._exited is not None or self._output_closed:
            return False
        if self._proc.returncode is not None:
            return False
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    async def start(self) -> None:
        """Start the process and do the `initialize` handshake; raises LspError on failure."""
        self._loop = asyncio.get_running_loop()
        self._write_lock = asyncio.Lock()
        self._published = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._begun = asyncio.Event()
        self._ready = asyncio.Event()
        env = self.env if self.env is not None else command_env()
        sandbox = Confinement()  # unconfined: still started from a launcher process
        if self.sandbox is not None:
            sandbox = confine(self.sandbox, self.root, env)
            if sandbox.refused is not None:
                raise LspError(
                    f"cannot start {self.command}: the sandbox cannot be set up ({sandbox.why}) "
                    "and sandbox is strict"
                )
        try:
            # Not asyncio's own start: the server starts from the launcher process, which
            # confined itself (and kills it if mm goes).
            proc = await sandbox.start(
                [self.command, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                cwd=self.root,
                env=env,
                # its own session: a Ctrl-C meant for mm's terminal must not kill the server
                start_new_session=True,
            )
        except OSError as exc:
            raise LspError(f"cannot start {self.command}: {exc.strerror or exc}") from exc
        try:
            await proc.open_streams()
        except BaseException:
            proc.kill()
            proc.abandon()
            raise
        self._proc = proc
        self._stderr_task = asyncio.create_task(self._read_stderr(), name=f"lsp-{self.name}-stderr")
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name=f"lsp-{self.name}-stdout"),
            self._stderr_task,
        ]
        root_uri = path_to_uri(self.root)
        params = {
            # None, not mm's pid: a confined server may run in a PID namespace of its own where
            # that pid names nothing (or another process), and servers that watch their parent
            # would exit. The launcher ends the server when mm goes, in every case.
            "processId": None,
            "clientInfo": {"name": "mm", "version": __version__},
            "rootUri": root_uri,
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": root_uri, "name": self.root.name or str(self.root)}],
            "capabilities": client_capabilities(),
        }
        try:
            result = await self.request("initialize", params, timeout=self.initialize_timeout)
        except LspTimeout:
            await self.kill()
            raise LspError(
                f"the server did not answer initialize within {self.initialize_timeout:g}s"
            ) from None
        except LspError:
            await self.kill()
            raise
        result = result if isinstance(result, dict) else {}
        self.capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo") or {}
        encoding = self.capabilities.get("positionEncoding")
        if encoding in ENCODINGS:
            self.encoding = encoding
        elif self.server_info.get("name") in _CODE_POINT_SERVERS:
            self.encoding = "utf-32"
        await self.notify("initialized", {})

    async def close(self) -> None:
        """The polite stop: `shutdown`, `exit`, then the process if it lingers."""
        if self.alive:
            with contextlib.suppress(LspError):
                # no params at all: TypeScript's native server rejects `"params": null`
                await self.request("shutdown", timeout=SHUTDOWN_TIMEOUT)
            with contextlib.suppress(LspError):
                await self.notify("exit")
            proc = self._proc
            if proc is not None:
                with contextlib.suppress(TimeoutError, LauncherGone):
                    await asyncio.wait_for(proc.wait(), SHUTDOWN_TIMEOUT)
        await self.kill()

    async def kill(self) -> None:
        """Stop the process now, and everything it started."""
        proc = self._proc
        if proc is not None:
            # the whole group, even after a polite exit: a server's own helpers (a node
            # process, a worker) must not outlive it
            proc.kill()
        if proc is not None and proc.returncode is None:
            try:
                if asyncio.get_running_loop() is self._loop:
                    await proc.wait()
            except (RuntimeError, LauncherGone):
                pass
        self._gone("the server was stopped")
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        if proc is not None and proc.returncode is not None:
            proc.close_streams()

    def abandon(self) -> None:
        """Kill the process from outside its event loop (that loop is gone): no awaiting."""
        proc = self._proc
        if proc is not None:
            proc.kill()
            proc.abandon()
        self._exited = self._exited or "the server was stopped"
        self._proc = None

    @property
    def exit_reason(self) -> str:
        return self._exited or "the server is not running"

    def stderr_excerpt(self, limit: int = STDERR_SHOWN) -> str:
        """The server's stderr for an error message: all of it when it is short; otherwise its
        first lines, which say what went wrong, and its last, which say where it ended, with
        the count of the characters cut between (a backtrace, a log)."""
        tail = "".join(self._stderr)
        total = self._stderr_total
        head = self._stderr_head
        if len(tail) == total:  # nothing was dropped: the whole text
            if len(tail.strip()) <= limit:
                return tail.strip()
            head = tail
        half = limit // 2
        start = len(head) - len(head.lstrip())
        first = head[start : start + half]
        if "\n" in first.rstrip():  # whole lines, when there is more than one
            first = first[: first.rstrip().rfind("\n")]
        first = first.rstrip()
        end = total - (len(tail) - len(tail.rstrip()))  # where the text ends, blanks aside
        last = tail.rstrip()[-half:]
        if "\n" in last:  # whole lines too
            last = last[last.find("\n") + 1 :]
        cut = end - len(last) - (start + len(first))
        if cut <= 0:  # cannot be, the text being longer than the limit; said plainly if so
            return tail.strip()[-limit:]
        return f"{first}\n[… {cut} characters cut …]\n{last}"

    def _gone(self, why: str) -> None:
        if self._exited is None:
            self._exited = why
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ServerExited(self._exited))
        self._pending.clear()
        self.progress.clear()
        self._idle.set()
        self._begun.set()
        self._ready.set()

    def _exit_reason(self) -> str:
        code = self._proc.returncode if self._proc else None
        if code is None:
            why = "the server closed its output"
        elif code < 0:
            why = f"the server was killed ({signal_name(-code)})"
        else:
            why = f"the server exited (exit status {code})"
        stderr = self.stderr_excerpt()
        return f"{why}: {stderr}" if stderr else why

    # --- reading ---------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stream = self._proc.stdout
        try:
            while True:
                length = None
                while True:  # the header block, ending with an empty line
                    line = await stream.readline()
                    if not line:
                        raise EOFError
                    line = line.strip()
                    if not line:
                        if length is not None:
                            break
                        continue  # stray blank lines before a header
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                body = await stream.readexactly(length)
                try:
                    message = json.loads(body)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    self._dispatch(message)
        except (EOFError, asyncio.IncompleteReadError, ValueError, ConnectionError):
            pass
        self._output_closed = True
        if self._proc is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, LauncherGone):
                await asyncio.wait_for(self._proc.wait(), 1.0)
        if self._stderr_task is not None:
            # what it wrote last, read before it is quoted (a helper of its own may hold the
            # pipe open: not waited for long)
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), STDERR_DRAIN)
        self._gone(self._exit_reason())

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        stream = self._proc.stderr
        while True:
            chunk = await stream.read(4096)
            if not chunk:
                return
            text = chunk.decode("utf-8", errors="replace")
            if len(self._stderr_head) < STDERR_HEAD_KEEP:
                self._stderr_head += text[: STDERR_HEAD_KEEP - len(self._stderr_head)]
            self._stderr_total += len(text)
            self._stderr.append(text)
            self._stderr_len += len(text)
            while self._stderr_len > STDERR_KEEP and len(self._stderr) > 1:
                self._stderr_len -= len(self._stderr.popleft())

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:  # an answer
            future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is None or future.done():
                return
            error = message.get("error")
            if error is not None:
                future.set_exception(
                    ResponseError(
                        int(error.get("code", 0)), str(error.get("message", "")), error.get("data")
                    )
                )
            else:
                future.set_result(message.get("result"))
            return
        if "id" in message:  # the server asks something
            asyncio.create_task(self._answer(message["id"], method, message.get("params")))
            return
        if method == "window/logMessage":
            text = str((message.get("params") or {}).get("message", ""))
            self.logs.append(text)
            marker = self._ready_marker()
            if marker is not None and marker.search(text):
                self._ready.set()
            return
        if method == "$/progress":
            params = message.get("params") or {}
            value = params.get("value")
            token = str(params.get("token"))
            if isinstance(value, dict):
                if value.get("kind") == "begin":
                    self.progress[token] = str(value.get("title", ""))
                    self._idle.clear()
                    self._begun.set()
                elif value.get("kind") == "end":
                    self.progress.pop(token, None)
                    if not self.progress:
                        self._idle.set()
            return
        if method == "textDocument/publishDiagnostics":
            params = message.get("params") or {}
            uri = params.get("uri")
            if isinstance(uri, str):
                self._serial += 1
                self.diagnostics[document_key(uri)] = Published(
                    list(params.get("diagnostics") or []), params.get("version"), self._serial
                )
                self._wake()

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        """Answer a server's request: without it some servers wait for ever."""
        result: Any = None
        error: dict[str, Any] | None = None
        try:
            if method == "workspace/configuration":
                items = (params or {}).get("items") or []
                result = [None] * len(items)
            elif method == "client/registerCapability":
                for registration in (params or {}).get("registrations") or []:
                    self.registrations[str(registration.get("id"))] = registration
                self._wake()  # a diagnostics wait may now pull instead
            elif method == "client/unregisterCapability":
                for gone in (params or {}).get("unregisterations") or []:
                    self.registrations.pop(str(gone.get("id")), None)
            elif method == "workspace/applyEdit":
                applied = False
                if self.apply_edit is not None:
                    try:
                        applied = await self.apply_edit(
                            (params or {}).get("edit") or {}, self.encoding
                        )
                    except Exception:  # noqa: BLE001 - the server only needs a yes or no
                        applied = False
                result = {"applied": applied}
            elif method == "workspace/workspaceFolders":
                root_uri = path_to_uri(self.root)
                result = [{"uri": root_uri, "name": self.root.name or str(self.root)}]
            elif method not in _NULL_REQUESTS:
                error = {"code": -32601, "message": f"mm does not handle {method}"}
        except Exception as exc:  # noqa: BLE001 - an answer must go back whatever happened
            error = {"code": -32603, "message": str(exc)}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            reply["error"] = error
        else:
            reply["result"] = result
        with contextlib.suppress(LspError):
            await self._send(reply)

    # --- writing ---------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        if self._proc is None or self._proc.stdin is None or self._exited is not None:
            raise ServerExited(self._exited or "the server is not running")
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        assert self._write_lock is not None
        async with self._write_lock:
            try:
                self._proc.stdin.write(frame)
                await self._proc.stdin.drain()
            except (ConnectionError, RuntimeError) as exc:
                # a pipe that cannot be written: the server is gone, whether or not its exit
                # has been seen, and the next call must start another
                self._output_closed = True
                self._gone(self._exit_reason())
                raise ServerExited(self._exited or self._exit_reason()) from exc

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """Send a request and wait for its answer; `params` None leaves the key out."""
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        limit = self.request_timeout if timeout is None else timeout
        started = time.perf_counter()
        try:
            await self._send(message)
            return await asyncio.wait_for(asyncio.shield(future), limit)
        except TimeoutError:
            self._pending.pop(request_id, None)
            with contextlib.suppress(LspError):
                await self.notify("$/cancelRequest", {"id": request_id})
            raise LspTimeout(f"no answer within {limit:g}s") from None
        finally:
            self._pending.pop(request_id, None)
            elapsed = time.perf_counter() - started
            self.wire.requests += 1
            self.wire.seconds += elapsed
            self.wire.last = elapsed

    async def settle(self, grace: float, timeout: float) -> None:
        """Once per server: let the work it starts when it sees the project (clangd's index,
        gopls loading packages) finish before the first cross-file question, whose answer would
        otherwise miss the files not yet indexed. That work is announced with work-done progress
        shortly after the first document is opened; `grace` seconds after that opening without
        any announcement, there is none to wait for."""
        if self.settled:
            return
        marker = self._ready_marker()
        if marker is not None and not any(marker.search(text) for text in self.logs):
            with contextlib.suppress(TimeoutError):
                # bounded more tightly: should the server reword its log, only seconds are lost
                await asyncio.wait_for(self._ready.wait(), min(timeout, READY_LOG_WAIT))
        if not self._begun.is_set() and self.first_open is not None:
            left = self.first_open + grace - time.monotonic()
            if left > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._begun.wait(), left)
        await self.wait_idle(timeout)
        self.settled = True

    def _ready_marker(self) -> re.Pattern[str] | None:
        return _READY_LOGS.get(str(self.server_info.get("name", "")).lower())

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until the work the server announced (indexing, loading packages) has ended: an
        answer about references given before that is incomplete. False when still busy."""
        if not self.progress:
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)
        return not self.progress

    # --- diagnostics -----------------------------------------------------------------------

    def published(self, uri: str) -> Published | None:
        """The last diagnostics published for a document, if any."""
        return self.diagnostics.get(document_key(uri))

    def _wake(self) -> None:
        """Wake whoever waits for a publication (or for a registration that changes the wait)."""
        self._published.set()
        self._published = asyncio.Event()

    async def wait_published(
        self,
        uri: str,
        after: int,
        version: int | None,
        timeout: float,
        give_up: Callable[[], bool] | None = None,
    ) -> bool:
        """Wait until the server publishes for `uri` something newer than serial `after` (and,
        when it numbers its publications, for `version` or later); False at the timeout, or
        as soon as `give_up()` says so."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.published(uri)
            if got is not None and got.serial > after:
                if version is None or got.version is None or got.version >= version:
                    return True
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive or (give_up is not None and give_up()):
                return False
            event = self._published
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), left)

    @property
    def serial(self) -> int:
        return self._serial
