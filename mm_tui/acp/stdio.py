"""`mm -acp`'s process: the protocol on stdin and stdout, the log on stderr.

Nothing but protocol messages may reach stdout: the protocol writes to a duplicate of the real
stdout, and file descriptor 1 is then pointed at stderr, so a stray `print` of a library, or a
process a tool starts that inherits stdout, lands in the log instead of corrupting the stream.

The lines are framed here (`LineTransport`), not by the acp package: its reader takes any JSON
for a message, and a line that is JSON but no object (`[]`, `42`) ended its receive loop, and so
the agent. Here such a line is answered with JSON-RPC's error and the next line is read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any

import acp

from mm_tui import __version__
from mm_tui.acp.mm_agent import MMAgent
from mm_tui.config import Settings
from mm_tui.core.redact import Redactor
from mm_tui.core.stop_signals import run_stoppable

log = logging.getLogger("mm.acp")


class _WriteProtocol(asyncio.BaseProtocol):
    """Flow control for the protocol pipe, what `asyncio.StreamWriter.drain` expects."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()

    async def _drain_helper(self) -> None:
        if self._paused:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


class LineTransport:
    """ACP's messages as lines of JSON, one object a line, for `acp.run_agent` (the package's
    message-level `Transport`). What is not a message is answered, as JSON-RPC says, and
    skipped: a line that is not JSON with a parse error (-32700), JSON that is not a request,
    a notification or a response (an array, a number, a request whose id is an object) with an
    invalid request (-32600); the answer's id is null unless the request had a usable one."""

    def __init__(self, writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> None:
        self._writer = writer
        self._reader = reader
        self._lock = asyncio.Lock()  # one message at a time, whole, in the order sent

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None when the client closed stdin."""
        while True:
            line = await self._line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            message, refusal = _message(line)
            if message is not None:
                return message
            if refusal is not None:
                log.warning("%s", refusal["error"]["data"]["message"])
                await self.send(refusal)

    async def close(self) -> None:
        """Nothing to close: stdout is closed when the process ends."""

    async def _line(self) -> bytes:
        """One line, however long (the reader's limit only bounds each read)."""
        parts: list[bytes] = []
        while True:
            try:
                parts.append(await self._reader.readuntil(b"\n"))
                return b"".join(parts)
            except asyncio.LimitOverrunError as exc:
                parts.append(await self._reader.readexactly(exc.consumed))
            except asyncio.IncompleteReadError as exc:
                parts.append(exc.partial)
                return b"".join(parts)


def _message(line: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A line's message, or else the answer it gets (None for a response, which is never
    answered, even a malformed one: two peers must not answer each other's errors forever)."""
    try:
        obj = json.loads(line)
    except ValueError as exc:  # bad JSON, or bytes that are not UTF-8
        return None, _refusal(None, -32700, f"a line that is not JSON was skipped ({exc})")
    if not isinstance(obj, dict):
        kind = {list: "an array", str: "a string", type(None): "null", bool: "a boolean"}.get(
            type(obj), "a number"
        )
        said = f"a message must be a JSON object, not {kind}; the line was skipped"
        return None, _refusal(None, -32600, said)
    ident = obj.get("id")
    method = obj.get("method")
    if isinstance(ident, bool) or not isinstance(ident, str | int | float | None):
        if method is None:
            return None, None  # a response with an id that cannot be one: nothing to answer
        said = "a request's id must be a string, a number or null; the message was skipped"
        return None, _refusal(None, -32600, said)
    if method is None and "id" not in obj:
        said = "a message needs a method (a request) or an id (a response); it was skipped"
        return None, _refusal(None, -32600, said)
    if method is not None and not isinstance(method, str):
        said = "a request's method must be a string; the message was skipped"
        return None, _refusal(ident if "id" in obj else None, -32600, said)
    return obj, None


def _refusal(ident: Any, code: int, said: str) -> dict[str, Any]:
    """The JSON-RPC answer to a line that is no message: `code`, and `said` for the log."""
    name = "Parse error" if code == -32700 else "Invalid request"
    error = acp.RequestError(code, name, {"message": said})
    return {"jsonrpc": "2.0", "id": ident, "error": error.to_error_obj()}


class StdioError(Exception):
    """stdin or stdout cannot carry the protocol; the message is one line for the person."""


async def protocol_streams() -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    """The protocol's writer (a duplicate of stdout) and reader (stdin); file descriptor 1 then
    points at stderr, so that nothing else can write to the protocol's stream."""
    for fd, name in ((0, "stdin"), (1, "stdout")):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            raise StdioError(f"mm: -acp needs {name}, and it is closed") from None
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            raise StdioError(
                f"mm: -acp speaks ACP over stdin and stdout, which must be pipes "
                f"({name} is a regular file)"
            )
    loop = asyncio.get_running_loop()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = _WriteProtocol()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)  # type: ignore[arg-type]
    return writer, reader


class RedactingFormatter(logging.Formatter):
    """Each line of the log through the settings' redactor, traceback included: the log
    quotes base URLs (which may carry a password) and what servers answered (which may echo
    the key), and it ends up in an editor's log view or, for an asked agent, in a file
    (`$XDG_STATE_HOME/mm/ask/<agent>.log`) whose last line the asking mm shows."""

    def __init__(self, fmt: str, redactor: Redactor) -> None:
        super().__init__(fmt)
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor.text(super().format(record))


def configure_logging(settings: Settings | None = None) -> None:
    """The log goes to stderr: an editor keeps an agent's stderr in its log view. Redacted
    with `settings`' secrets (the key variables' alone without them)."""
    handler = logging.StreamHandler(sys.stderr)
    secrets = settings.secret_values() if settings is not None else ()
    handler.setFormatter(
        RedactingFormatter("mm -acp: %(levelname)s %(message)s", Redactor(secrets))
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def serve(settings: Settings, cwd: Path, *, demo: bool = False) -> int:
    """Serve ACP on stdio until the client closes stdin. Returns the exit status."""
    try:
        writer, reader = await protocol_streams()
    except StdioError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    agent = MMAgent(settings, cwd, demo=demo)
    log.info("mm %s serving ACP on stdio in %s", __version__, cwd)
    try:
        await acp.run_agent(agent, LineTransport(writer, reader))
    finally:
        await agent.aclose()
    return 0


def run(settings: Settings, cwd: Path, *, demo: bool = False) -> int:
    """`mm -acp`. SIGTERM and SIGHUP end it as closing stdin does (`core/stop_signals.py`)."""
    configure_logging(settings)
    try:
        return asyncio.run(run_stoppable(serve(settings, cwd, demo=demo)))
    except KeyboardInterrupt:
        return 130
