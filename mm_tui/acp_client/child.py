"""One child `mm -acp`: its process, its log, and the pump between its stdout and the protocol.

The process is started here and handed to `acp.connect_to_agent`, not started by
`acp.spawn_agent_process`, for two things that function cannot do. The child's stdout goes
through `_pump`: the package skips a line that is not JSON (and logs a traceback on this
process's stderr), so a child printing garbage would go unnoticed until the watchdog; here any
line that is not a JSON-RPC message ends the call at once with a clear reason. And the child
runs in a session of its own, so that Ctrl-C in the terminal reaches this mm only, which then
cancels the child's prompt through the protocol (`session/cancel`). Its stderr goes to a log
file (`$XDG_STATE_HOME/mm/ask/<agent>.log`), never to this mm's screen; its environment is this
one's with `MM_ASK_DEPTH` one higher.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import acp
from acp import schema

from mm_tui import __version__
from mm_tui.acp_client.relay import Relay
from mm_tui.core import acp_meta as meta
from mm_tui.core.asking import BUILTIN_TITLE
from mm_tui.core.processes import kill_group, signal_name, stop_group
from mm_tui.core.text import ellipsize

STOP_GRACE = 2.0  # seconds between closing a child's stdin, SIGTERM and SIGKILL
LINE_LIMIT = 64 * 1024 * 1024  # the longest protocol line accepted from a child (a big diff)
LOG_LIMIT = 4 * 1024 * 1024  # a child's log above this starts over when the next child starts


@dataclass
class AgentInfo:
    title: str
    model: str
    provider: str


def _log_path(name: str) -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "agent"
    return Path(state) / "mm" / "ask" / f"{safe}.log"


class Child:
    """One running `mm -acp`: its process, its connection, and what it said about itself."""

    def __init__(
        self, name: str, command: Sequence[str], *, env: Mapping[str, str], cwd: Path, yolo: bool
    ) -> None:
        self.name = name
        self.command = list(command)
        self.env = dict(env)
        self.cwd = cwd
        self.yolo = yolo
        self.relay = Relay()
        self.process: asyncio.subprocess.Process | None = None
        self.conn: Any = None
        self.info = AgentInfo(title=name, model="?", provider="?")
        self.fault: str | None = None  # why the output stream ended, when the child broke it
        self.log_path: Path | None = None
        self._log: Any = None
        self._log_start = 0
        self._stream = asyncio.StreamReader(limit=LINE_LIMIT)
        self._pump_task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def usable(self) -> bool:
        """Still fit for another call."""
        return (
            not self._closed
            and self.fault is None
            and self.process is not None
            and self.process.returncode is None
            and not self._stream.at_eof()
        )

    async def start(self) -> None:
        """Start the process and say hello (`initialize`)."""
        self._log = self._open_log()
        self.process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._log,
            env=self.env,
            cwd=str(self.cwd),
            limit=LINE_LIMIT,
            start_new_session=True,  # Ctrl-C in the terminal is this mm's to handle
        )
        self._pump_task = asyncio.create_task(self._pump(), name=f"mm-ask-pump:{self.name}")
        assert self.process.stdin is not None
        self.conn = acp.connect_to_agent(self.relay, self.process.stdin, self._stream)
        response = await self.conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=schema.ClientCapabilities(),
            client_info=schema.Implementation(name="mm", title="mm", version=__version__),
        )
        self._learn(response.field_meta, response.agent_info)

    def _open_log(self) -> Any:
        """The child's stderr goes to a log file, never to this mm's screen."""
        path = _log_path(self.name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            big = path.exists() and path.stat().st_size > LOG_LIMIT  # then it starts over
            log = open(path, "wb" if big else "ab")  # noqa: SIM115 - open for the child's life
        except OSError:
            return asyncio.subprocess.DEVNULL
        log.write(f"--- {' '.join(self.command)} (in {self.cwd})\n".encode())
        log.flush()
        self._log_start = log.tell()
        self.log_path = path
        return log

    def _learn(self, field_meta: Any, agent_info: Any = None) -> None:
        mine = meta.get(field_meta)
        title = mine.get("title")
        if not isinstance(title, str) or not title:
            title = getattr(agent_info, "title", None) or getattr(agent_info, "name", None)
        if not title or title == BUILTIN_TITLE:
            title = self.name  # an agent without a title of its own goes by its mmConfigs name
        self.info = AgentInfo(
            title=title,
            model=str(mine.get("model") or self.info.model),
            provider=str(mine.get("provider") or self.info.provider),
        )

    async def _pump(self) -> None:
        """Pass the child's protocol lines on to the connection; anything else is a fault."""
        assert self.process is not None and self.process.stdout is not None
        out = self.process.stdout
        try:
            while True:
                try:
                    line = await out.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:  # the end, maybe a last line
                    if exc.partial.strip() and self._check(exc.partial):
                        self._stream.feed_data(exc.partial + b"\n")
                    break
                except asyncio.LimitOverrunError:
                    self.fault = f"it wrote a line longer than {LINE_LIMIT // 2**20} MiB on stdout"
                    break
                if not line.strip():
                    continue
                if not self._check(line):
                    break
                self._stream.feed_data(line)
        except (OSError, ValueError) as exc:
            self.fault = f"its output could not be read: {exc}"
        finally:
            self._stream.feed_eof()
            if self.fault is not None:
                self._kill()

    def _check(self, line: bytes) -> bool:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("jsonrpc") == "2.0":
            return True
        shown = ellipsize(line.decode("utf-8", errors="replace").strip(), 80)
        self.fault = f"it wrote something that is not ACP on stdout: {shown!r}"
        return False

    def _kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            kill_group(self.process)

    async def broken_reason(self) -> str:
        """Why the connection ended, for the quoted error."""
        if self.fault is not None:
            return self.fault
        process = self.process
        if process is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 1.0)
            code = process.returncode
            if code is not None:
                if code < 0:
                    reason = f"its process was killed ({signal_name(-code)})"
                else:
                    reason = f"its process exited with status {code}"
                    last = self.last_log_line() if code else ""
                    if last:  # mm says why it stops on its last line
                        reason += f": {last}"
                if self.log_path is not None:
                    reason += f" (its log: {self.log_path})"
                return reason
        return "it closed its connection"

    def last_log_line(self) -> str:
        """The last line the child wrote on stderr: a child that stops at start-up says why
        there (`mm: reviewer.yaml: no such file`)."""
        if self.log_path is None:
            return ""
        with contextlib.suppress(OSError), open(self.log_path, "rb") as log:
            log.seek(self._log_start)
            lines = log.read()[-4096:].decode("utf-8", errors="replace").splitlines()
            last = next((line.strip() for line in reversed(lines) if line.strip()), "")
            return ellipsize(last, 200)
        return ""

    async def aclose(self) -> None:
        """Stop the child: end of input first (a clean exit), then SIGTERM, then SIGKILL, each
        to its process group."""
        if self._closed:
            return
        self._closed = True
        process = self.process
        if process is not None and process.returncode is None:
            if process.stdin is not None:
                with contextlib.suppress(Exception):
                    process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE)
            except TimeoutError:
                await stop_group(process, STOP_GRACE)
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), STOP_GRACE)
        if self._pump_task is not None:
            self._pump_task.cancel()
            await asyncio.gather(self._pump_task, return_exceptions=True)
        if self._log is not None and hasattr(self._log, "close"):
            self._log.close()
