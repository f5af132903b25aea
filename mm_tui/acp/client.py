"""The client side of ACP: this mm asking another one (ask_agent, `/ask`, `mm --ask`).

Each agent of mmConfigs runs as a child `mm -acp --config <agent file> --yolo|--no-yolo`, started
on its first call and kept for the next ones; every call opens a fresh ACP session in the working
folder, so calls share the process (and its warm model connection) but never a conversation.

What the child sends becomes this mm's own events (`engine/events.py`), tagged with the agent's
name so that a front end nests them under the agent: `AgentStarted` when the session is open,
`TextDelta` and `ThoughtDelta` as the answer streams, `ToolCallStarted` / `ToolCallFinished` for
its tool calls (named and timed from `_meta["mm"]`, see `meta.py`, else from the protocol's own
fields), `PermissionRequested` when it asks, and `AgentFinished` when the call is over.

The process is started here and handed to `acp.connect_to_agent`, not started by
`acp.spawn_agent_process`, for two things that function cannot do. The child's stdout goes
through `_pump`: the package skips a line that is not JSON (and logs a traceback on this
process's stderr), so a child printing garbage would go unnoticed until the watchdog; here any
line that is not a JSON-RPC message ends the call at once with a clear reason. And the child
runs in a session of its own, so that Ctrl-C in the terminal reaches this mm only, which then
cancels the child's prompt through the protocol (`session/cancel`). Its stderr goes to a log
file (`$XDG_STATE_HOME/mm/ask/<agent>.log`), never to this mm's screen; its environment is this
one's with `MM_ASK_DEPTH` one higher.

Faults and what follows (the call's text is what the child answered until then):

- the child cannot start or answer `initialize`/`session/new`: `failed: <reason>`;
- it exits, closes its output or prints garbage during the prompt: `stopped before finishing`;
- it is silent for `watchdogTimeout` seconds (a permission waiting for the person does not
  count): stopped, and the process is killed;
- the call is cancelled: `session/cancel`, a few seconds for the child to wind down (else it is
  killed), then `stopped before finishing: cancelled`.

A child that broke is stopped and forgotten; the next call starts a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import yaml
from acp import schema

from mm_tui import __version__
from mm_tui.acp import meta
from mm_tui.config import ENV_NAMES
from mm_tui.core.asking import BUILTIN_TITLE, DEPTH_VAR, AgentEntry, Asked, current_depth
from mm_tui.core.events import (
    AgentFinished,
    AgentStarted,
    Decision,
    Event,
    PermissionRequested,
    TextDelta,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolStatus,
)
from mm_tui.core.processes import kill_group, stop_group
from mm_tui.core.text import ellipsize, strip_agent

CANCEL_GRACE = 5.0  # seconds a cancelled child has to answer its prompt before it is killed
STOP_GRACE = 2.0  # seconds between closing a child's stdin, SIGTERM and SIGKILL
LINE_LIMIT = 64 * 1024 * 1024  # the longest protocol line accepted from a child (a big diff)
LOG_LIMIT = 4 * 1024 * 1024  # a child's log above this starts over when the next child starts

# The line mode's marks for a child's tool lines, as each tool's own `display` spells them.
DISPLAY_MARKS = {
    "bash": "🛠️  bash:",
    "read_file": "📄 read_file:",
    "write_file": "📝 write_file:",
    "edit_file": "✏️ edit_file:",
    "read_skill": "📖 read_skill:",
    "lsp": "🔎 lsp:",
    "fetch_content": "🌐 fetch_content:",
    "ask_agent": "🗣 ask_agent:",
}

Emit = Callable[[Event], None]


def failed(name: str, reason: str) -> str:
    return f"[ask_agent: {name} failed: {reason}]"


def stopped(name: str, reason: str) -> str:
    return f"[ask_agent: {name} stopped before finishing: {reason}]"


def no_answer(name: str) -> str:
    return f"[ask_agent: {name} gave no answer]"


@dataclass
class AgentInfo:
    title: str
    model: str
    provider: str


def agent_file_settings(path: Path) -> dict[str, Any]:
    """The keys an agent file sets, read directly (no other layer merged in); empty when it
    cannot be read — starting the child then says what is wrong with it."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _log_path(name: str) -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "agent"
    return Path(state) / "mm" / "ask" / f"{safe}.log"


def _text_of(block: Any) -> str:
    text = getattr(block, "text", None)
    return text if isinstance(text, str) else ""


class _Relay:
    """The `acp.Client` of every child: hands each session's updates and permission requests to
    the call that opened the session."""

    def __init__(self) -> None:
        self.calls: dict[str, _Call] = {}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        call = self.calls.get(session_id)
        if call is not None:
            # an update this side cannot read is skipped; the connection and the call go on
            with contextlib.suppress(Exception):
                call.update(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        call = self.calls.get(session_id)
        if call is None:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        return await call.permission(tool_call, options)

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/read_text_file")

    # The child is offered no terminal and no elicitation (the capabilities say so): a request
    # for one is the error it is, never an empty success.

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/create")

    async def terminal_output(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/output")

    async def release_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/kill")

    async def create_elicitation(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, *args: Any, **kwargs: Any) -> None:
        return None  # a notification: nothing to answer

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


@dataclass
class _OpenTool:
    tool: str
    title: str
    started: float
    diff: str | None = None


class _Call:
    """One call's translation of the child's updates into events, its collected answer, and its
    watchdog: every update is a sign of life; a permission waiting for the person pauses it."""

    def __init__(self, name: str, emit: Emit, yolo: bool, cwd: Path, timeout: float) -> None:
        self.name = name
        self.cwd = cwd
        self.emit = emit
        self.yolo = yolo
        self.loop = asyncio.get_running_loop()
        self.answer: list[str] = []
        self.tools: dict[str, _OpenTool] = {}
        self.watchdog: asyncio.Timeout | None = None
        self.timeout = timeout  # seconds without a sign of life before the watchdog stops it
        self.waiting: set[asyncio.Future[Decision]] = set()

    # -- watchdog ---------------------------------------------------------------------------

    def alive(self) -> None:
        """A sign of life from the child: the watchdog starts counting again."""
        if self.watchdog is None or self.waiting:
            return
        with contextlib.suppress(RuntimeError):  # the call is already over
            self.watchdog.reschedule(self.loop.time() + self.timeout)

    def _pause(self) -> None:
        if self.watchdog is not None:
            with contextlib.suppress(RuntimeError):
                self.watchdog.reschedule(None)

    # -- updates ----------------------------------------------------------------------------

    def update(self, update: Any) -> None:
        self.alive()
        kind = getattr(update, "session_update", None)
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            # The text of an agent the child asked in turn (`_meta["mm"]["agent"]`) is not the
            # child's answer: it reaches the child as a tool result, and the child answers.
            if meta.get(update.field_meta).get("agent"):
                return
            text = _text_of(update.content)
            if not text:
                return
            if kind == "agent_message_chunk":
                self.answer.append(text)
                self.emit(TextDelta(text=text, agent=self.name))
            else:
                self.emit(ThoughtDelta(text=text, agent=self.name))
        elif kind == "tool_call":
            self._tool_started(update)
        elif kind == "tool_call_update":
            self._tool_updated(update)

    def _tool_started(self, update: Any) -> None:
        call_id = update.tool_call_id
        title = update.title or ""
        mine = meta.get(update.field_meta)
        tool = mine.get("tool")
        if not isinstance(tool, str) or not tool:
            tool = title.split("  ", 1)[0] if "  " in title else (update.kind or "tool")
        display = _display(tool, title)
        nested = mine.get("agent")  # a call of an agent the child asked: `<it> · <title>`
        if isinstance(nested, str) and nested:
            display = f"[{nested}] {_display(tool, strip_agent(title, nested))}"
        open_tool = _OpenTool(tool=tool, title=title, started=self.loop.time())
        open_tool.diff = _diff_of(update.content, self.cwd)
        self.tools[call_id] = open_tool
        raw = update.raw_input
        self.emit(
            ToolCallStarted(
                call_id=call_id,
                tool=tool,
                title=title,
                kind=update.kind or "other",
                arguments=dict(raw) if isinstance(raw, dict) else {},
                display=display,
                locations=tuple(loc.path for loc in update.locations or ()),
                agent=self.name,
            )
        )

    def _tool_updated(self, update: Any) -> None:
        call_id = update.tool_call_id
        open_tool = self.tools.get(call_id)
        if open_tool is None:
            return
        if update.title:
            open_tool.title = update.title
        diff = _diff_of(update.content, self.cwd)
        if diff:
            open_tool.diff = diff
        if update.status not in ("completed", "failed"):
            return
        del self.tools[call_id]
        mine = meta.get(update.field_meta)
        status: ToolStatus = "ok" if update.status == "completed" else "error"
        if mine.get("status") in ("ok", "error", "rejected", "cancelled"):
            status = mine["status"]
        elapsed = mine.get("elapsed")
        if not isinstance(elapsed, int | float):
            elapsed = self.loop.time() - open_tool.started
        self.emit(
            ToolCallFinished(
                call_id=call_id,
                tool=open_tool.tool,
                status=status,
                output=_output_of(update),
                elapsed=float(elapsed),
                diff=open_tool.diff,
                agent=self.name,
            )
        )

    def close_tools(self) -> None:
        """The call is over: no tool line of the child may keep spinning."""
        for call_id, open_tool in list(self.tools.items()):
            self.emit(
                ToolCallFinished(
                    call_id=call_id,
                    tool=open_tool.tool,
                    status="cancelled",
                    output="",
                    elapsed=self.loop.time() - open_tool.started,
                    diff=open_tool.diff,
                    agent=self.name,
                )
            )
        self.tools.clear()

    # -- permissions ------------------------------------------------------------------------

    async def permission(self, tool_call: Any, options: list[Any]) -> Any:
        """The child asks: under yolo the answer is at once; else the person decides through
        this agent's front end (`PermissionRequested`, tagged with the agent's name)."""
        self.alive()
        if self.yolo:
            return _outcome(Decision.ALLOW_ONCE, options)
        call_id = tool_call.tool_call_id
        known = self.tools.get(call_id)
        title = tool_call.title or (known.title if known else "")
        tool = known.tool if known else (title.split("  ", 1)[0] or "tool")
        details = _diff_of(tool_call.content, self.cwd) or _text_contents(tool_call.content)
        if not details:
            raw = tool_call.raw_input
            command = raw.get("command") if isinstance(raw, dict) else None
            details = command if isinstance(command, str) else title
        future: asyncio.Future[Decision] = self.loop.create_future()
        self.waiting.add(future)
        self._pause()
        self.emit(
            PermissionRequested(
                call_id=call_id,
                tool=tool,
                title=title,
                details=details,
                future=future,
                agent=self.name,
            )
        )
        try:
            decision = await future
        except asyncio.CancelledError:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        finally:
            self.waiting.discard(future)
            self.alive()
        return _outcome(decision, options)

    def withdraw(self) -> None:
        """The call ends: requests still waiting for the person are dropped."""
        for future in list(self.waiting):
            if not future.done():
                future.cancel()
        self.waiting.clear()


def _outcome(decision: Decision, options: list[Any]) -> schema.RequestPermissionResponse:
    wanted = meta.OPTION_KINDS[decision]
    chosen = next((o for o in options if o.kind == wanted), None)
    if chosen is None:  # an agent that offers fewer options: the nearest one
        prefix = "allow" if decision.allows else "reject"
        chosen = next((o for o in options if str(o.kind).startswith(prefix)), None)
    if chosen is None:
        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
    return schema.RequestPermissionResponse(
        outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen.option_id)
    )


def _display(tool: str, title: str) -> str:
    """The line mode's line for a child's call, as the tool itself would print it."""
    rest = title[len(tool) + 2 :] if title.startswith(f"{tool}  ") else title
    mark = DISPLAY_MARKS.get(tool, f"⚙ {tool}:")
    return f"{mark} {rest}".rstrip()


def _diff_of(content: Any, cwd: Path) -> str | None:
    """The diff contents the child sent (old and new text, one per hunk from mm) as one unified
    diff for the window to colour; the hunks' line numbers count from each hunk's start."""
    from mm_tui.tools.diff import compute_diff

    parts: list[str] = []
    for item in content or ():
        if getattr(item, "type", None) != "diff":
            continue
        path = Path(item.path)
        with contextlib.suppress(ValueError):
            path = path.relative_to(cwd)
        diff = compute_diff(item.old_text, item.new_text).unified(str(path).lstrip("/"))
        if parts:  # one header for the file
            diff = "".join(diff.splitlines(keepends=True)[2:])
        parts.append(diff)
    return "".join(parts) or None


def _text_contents(content: Any) -> str:
    return "".join(
        _text_of(item.content) for item in content or () if getattr(item, "type", None) == "content"
    )


def _output_of(update: Any) -> str:
    text = _text_contents(update.content)
    if not text and isinstance(update.raw_output, str):
        text = update.raw_output
    return text


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
        self.relay = _Relay()
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
                    try:
                        how = signal.Signals(-code).name
                    except ValueError:
                        how = f"signal {-code}"
                    reason = f"its process was killed ({how})"
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


@dataclass
class AgentPool:
    """The asked agents of one mm: a child per agent, started on first call, reused, stopped
    when mm exits (`aclose`). `command` replaces `python -m mm_tui.cli` (tests point it at a
    wrapper around the real program).

    Pools are shared within a process (`acquire`, `release`): `mm -acp` builds an engine, and
    so an ask_agent tool, per ACP session, and a parent opens a session per call; without
    sharing, each call to a child would start a new grandchild and keep it until the child
    exits. The last `release` stops the children."""

    entries: Mapping[str, AgentEntry]
    command: Sequence[str] | None = None
    children: dict[str, Child] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _users: int = 0
    _key: tuple[Any, ...] = ()

    @classmethod
    def acquire(
        cls, entries: Mapping[str, AgentEntry], command: Sequence[str] | None = None
    ) -> AgentPool:
        """The process's pool for these agents (the same files, yolo, command), made when
        there is none; `release` it when done."""
        key = (
            tuple(sorted((e.name, str(e.config), e.yolo) for e in entries.values())),
            tuple(command or ()),
            id(asyncio.get_running_loop()),
        )
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = cls(dict(entries), list(command) if command else None)
            pool._key = key
        pool._users += 1
        return pool

    async def release(self) -> None:
        """One user less; the last one stops the children."""
        self._users -= 1
        if self._users <= 0:
            _POOLS.pop(self._key, None)
            await self.aclose()

    def child_command(self, entry: AgentEntry, yolo: bool) -> list[str]:
        base = list(self.command) if self.command else [sys.executable, "-m", "mm_tui.cli"]
        return [*base, "-acp", "--config", str(entry.config), "--yolo" if yolo else "--no-yolo"]

    def child_env(self, entry: AgentEntry) -> dict[str, str]:
        """This process's environment, one level deeper; the MM_ variables of the keys the
        agent file sets are left out, so that the agent file, not this shell, defines the agent."""
        env = dict(os.environ)
        env[DEPTH_VAR] = str(current_depth() + 1)
        own = set(agent_file_settings(entry.config))
        for var, key in ENV_NAMES.items():
            if key in own:
                env.pop(var, None)
        if "apiKey" in own:
            env.pop("OPENAI_API_KEY", None)
        return env

    async def ask(
        self,
        name: str,
        text: str,
        *,
        shown_prompt: str,
        cwd: Path,
        emit: Emit,
        asked_by: str,
        yolo: bool,
        watchdog: float,
    ) -> Asked:
        """One call: `text` to agent `name` in a fresh session in `cwd`. Never raises for the
        child's faults (they are in `Asked.error`); returns with `cancelled` when the caller
        was cancelled, after the child was told."""
        call = _Call(name, emit, yolo, cwd, watchdog)
        async with self._locks.setdefault(name, asyncio.Lock()):
            return await self._ask(call, text, shown_prompt, asked_by)

    async def _child(self, entry: AgentEntry, cwd: Path, yolo: bool) -> tuple[Child, bool]:
        """The agent's child, started when there is none fit for use; True when reused."""
        child = self.children.get(entry.name)
        if child is not None and child.usable and child.yolo == yolo and child.cwd == cwd:
            return child, True
        if child is not None:
            await self.discard(entry.name)
        child = Child(
            entry.name,
            self.child_command(entry, yolo),
            env=self.child_env(entry),
            cwd=cwd,
            yolo=yolo,
        )
        self.children[entry.name] = child
        await child.start()
        return child, False

    async def _open_session(self, entry: AgentEntry, cwd: Path, yolo: bool) -> tuple[Child, str]:
        child, reused = await self._child(entry, cwd, yolo)
        try:
            session = await child.conn.new_session(cwd=str(cwd), mcp_servers=[])
        except (ConnectionError, OSError):
            if not reused:
                raise
            # it died since the last call and nobody noticed yet: once more, with a fresh one
            await self.discard(entry.name)
            child, _ = await self._child(entry, cwd, yolo)
            session = await child.conn.new_session(cwd=str(cwd), mcp_servers=[])
        child._learn(session.field_meta)
        return child, session.session_id

    async def _ask(self, call: _Call, text: str, shown_prompt: str, asked_by: str) -> Asked:
        """`ask`, once the agent's lock is held; `call` carries the agent's name, the events'
        way out, yolo, the working folder and the watchdog's timeout."""
        name = call.name
        entry = self.entries[name]
        asked = Asked(name=name)
        child: Child | None = None
        session_id: str | None = None
        prompt_task: asyncio.Task[Any] | None = None
        started: AgentStarted | None = None
        try:
            try:
                async with asyncio.timeout(call.timeout) as timer:
                    call.watchdog = timer
                    child, session_id = await self._open_session(entry, call.cwd, call.yolo)
                    child.relay.calls[session_id] = call
                    info = child.info
                    started = AgentStarted(
                        name=name,
                        title=info.title,
                        model=info.model,
                        provider=info.provider,
                        asked_by=asked_by,
                        prompt=shown_prompt,
                        agent=name,
                    )
                    call.emit(started)
                    prompt_task = asyncio.create_task(
                        child.conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
                    )
                    prompt_task.add_done_callback(_retrieved)
                    response = await asyncio.shield(prompt_task)
            finally:
                call.watchdog = None
        except TimeoutError:
            if prompt_task is None:
                asked.error = failed(
                    name, f"it did not answer within {call.timeout:g}s of starting"
                )
            else:
                asked.error = stopped(
                    name,
                    f"it sent nothing for {call.timeout:g}s — stopped by the watchdog; raise "
                    "watchdogTimeout if its model is slow to answer",
                )
            await self.discard(name)
        except asyncio.CancelledError:
            asked.cancelled = True
            asked.error = stopped(name, "cancelled")
            await asyncio.shield(self._wind_down(name, child, session_id, prompt_task, call))
        except acp.RequestError as exc:
            reason = _request_error(exc)
            if prompt_task is None:  # refused to start a session: do not keep it
                asked.error = failed(name, reason)
                await self.discard(name)
            else:
                asked.error = stopped(name, reason)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the call says it and ends
            child = self.children.get(name, child)
            if child is None or child.process is None:
                reason = f"it could not be started: {exc}"
            elif isinstance(exc, ConnectionError | OSError):
                reason = await child.broken_reason()
            else:  # the child said something this side cannot understand
                reason = f"{type(exc).__name__}: {exc}"
            asked.error = failed(name, reason) if prompt_task is None else stopped(name, reason)
            await self.discard(name)
        else:
            asked.error = _stop_error(name, response.stop_reason)
        finally:
            call.withdraw()
            if child is not None and session_id is not None:
                child.relay.calls.pop(session_id, None)
            call.close_tools()
            if started is not None:
                call.emit(
                    AgentFinished(
                        name=name,
                        title=started.title,
                        model=started.model,
                        provider=started.provider,
                        asked_by=asked_by,
                        agent=name,
                    )
                )
            if prompt_task is not None and not prompt_task.done():
                prompt_task.cancel()
        asked.answer = "".join(call.answer)
        if asked.error is None and not asked.answer.strip():
            asked.error = no_answer(name)
        return asked

    async def _wind_down(
        self,
        name: str,
        child: Child | None,
        session_id: str | None,
        prompt_task: asyncio.Task[Any] | None,
        call: _Call,
    ) -> None:
        """The caller was cancelled: tell the child (`session/cancel`) and give it a few
        seconds to end its prompt, so that it stays usable; a child that does not is stopped."""
        call.withdraw()
        if child is None or session_id is None or prompt_task is None:
            # cancelled while the child started or opened the session: in what state it is
            # nobody knows, so the next call starts afresh
            await self.discard(name)
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(child.conn.cancel(session_id=session_id), 1.0)
        done, _ = await asyncio.wait({prompt_task}, timeout=CANCEL_GRACE)
        if not done:
            await self.discard(name)

    async def discard(self, name: str) -> None:
        """Stop a child and forget it; the next call starts a fresh one."""
        child = self.children.pop(name, None)
        if child is not None:
            await child.aclose()

    async def aclose(self) -> None:
        """mm exits: every child stops."""
        names = list(self.children)
        await asyncio.gather(*(self.discard(n) for n in names), return_exceptions=True)


_POOLS: dict[tuple[Any, ...], AgentPool] = {}


def _retrieved(task: asyncio.Task[Any]) -> None:
    """A prompt abandoned with its child (killed, broken) ends in an error nobody awaits."""
    if not task.cancelled():
        task.exception()


def _stop_error(name: str, reason: str) -> str | None:
    if reason == "end_turn":
        return None
    why = {
        "cancelled": "cancelled",
        "max_turn_requests": "it reached its maxTurns",
        "max_tokens": "its model reached its token limit",
        "refusal": "its model refused",
    }.get(reason, reason)
    return stopped(name, why)


def _request_error(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    data = getattr(exc, "data", None)
    if isinstance(data, dict) and isinstance(data.get("details"), str):
        message = f"{message}: {data['details']}"
    return message
