"""One MCP server's connection, through the official `mcp` SDK: started, listed, called, lost,
stopped. The pool loads this module in a thread (the SDK takes about half a second to import).

The SDK's transports are anyio context managers whose task groups must be entered and left in
one task, so each server lives in a task of its own (`_run`): it connects, says it is ready,
and waits until it is stopped or its connection ends. Calls come from the turn's task and race
the end of the connection, so a server that dies in the middle of a call fails that call at
once rather than at its timeout.

What can go wrong, and what it costs (one warning each, said by the pool; never the session):
- the server does not start (no such command, it exits, it refuses the handshake, no answer
  within `startupTimeout`): its tools are never declared;
- its connection ends (the process died; an HTTP server stopped answering): its tools are no
  longer declared, and a call to one of them returns an error saying the server stopped;
- a call gets no answer within `timeout`: the call fails, the server is stopped and its tools
  go, since a server that hung once would make every later call wait as long.
A stdio server's stderr goes to a temporary file (never onto mm's screen); its last line says
why the server stopped, when it says anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
from mcp import ClientSession, McpError, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage
from pydantic import FileUrl

from mm_tui import __version__
from mm_tui.config import McpServer, resolve_dir
from mm_tui.core.text import one_line
from mm_tui.tools.mcp.broken_streams import still_answering, watch_responses

# The SDK logs what it cannot parse and what its tasks meet; without a handler, Python's last
# resort would print that on mm's screen. Handlers above (ACP's log file) still get it.
logging.getLogger("mcp").addHandler(logging.NullHandler())

State = Literal["starting", "ready", "failed", "closed"]
OnProgress = Callable[[float, float | None, str | None], None]  # progress, total, message
STDERR_TAIL = 4096  # bytes of a server's stderr read back for the reason it stopped


@dataclass
class Outcome:
    """What a call gives the model: the result's text, and whether it is an error."""

    text: str
    is_error: bool = False


@dataclass
class Listed:
    """A tool as its server lists it."""

    name: str
    description: str | None
    schema: dict[str, Any]
    task_only: bool = False  # `execution.taskSupport: required`: every plain call fails


class Link:
    """One server. `on_change(link)` is called when it becomes ready and when it fails (`error`
    then says why: the pool turns it into the warning)."""

    def __init__(
        self,
        name: str,
        config: McpServer,
        cwd: Path,
        on_change: Callable[[Link], None],
        launch: McpServer | None = None,
    ) -> None:
        self.name = name
        self.config = config  # as written: what messages quote
        self.launch = launch or config  # what is started (its `${VAR}`s replaced)
        self.cwd = cwd
        self.on_change = on_change
        self.state: State = "starting"
        self.error: str | None = None  # why it failed
        self.was_ready = False  # it failed after it had started (it stopped, not "did not start")
        self.tools: list[Listed] = []
        self._session: ClientSession | None = None
        self._started = asyncio.Event()  # start-up is over, ready or not
        self._gone = asyncio.Event()  # the connection ended, or the link is being stopped
        self._task: asyncio.Task[None] | None = None
        self._starting = anyio.CancelScope()  # the handshake, cut short when mm stops first
        self._errlog: Any = None  # a stdio server's stderr, in a temporary file
        # `notifications/tools/list_changed`: the tools listed again, in a task of their own (the
        # SDK's reading loop, which calls the handler, must go on to bring the answer)
        self._relisting: asyncio.Task[None] | None = None
        self._relist_again = False
        # an HTTP server's response stream that broke, and the look whether it still listens
        self._lost: Exception | None = None
        self._breaks: list[Exception] = []  # broken since the last look
        self._looking: asyncio.Task[None] | None = None

    # -- life ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"mcp server {self.name}"
            )

    async def started(self) -> None:
        """Until start-up is over (ready, or failed)."""
        await self._started.wait()

    async def aclose(self, timeout: float = 8.0) -> None:
        """Stop the server (a stdio server: its stdin closed, then SIGTERM, then SIGKILL, as the
        SDK does it) and wait for its task."""
        if self.state in ("starting", "ready"):
            self.state = "closed"
        self._gone.set()
        self._starting.cancel()
        if self._relisting is not None:
            self._relisting.cancel()
        task = self._task
        if task is None:
            self._started.set()
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        except Exception:  # noqa: BLE001 - _run reports its own failures
            pass

    def _fail(self, reason: str) -> None:
        """The server is lost (once): its task stops it, and the pool says so."""
        if self.state in ("failed", "closed"):
            return
        self.was_ready = self.state == "ready"
        self.state = "failed"
        self.error = reason
        self._gone.set()
        self._started.set()
        self.on_change(self)

    async def _run(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                session = await self._connect(stack)
                tools: list[Listed] = []
                try:
                    with self._starting, anyio.fail_after(self.config.startup_timeout):
                        await session.initialize()
                        tools = await _list_tools(session)
                except TimeoutError:
                    self._fail(f"no answer within {self.config.startup_timeout:g} s")
                    return
                if self.state != "starting":  # stopped while it started
                    return
                self._session, self.tools = session, tools
                self.state = "ready"
                self._started.set()
                self.on_change(self)
                await self._gone.wait()
                if self.state == "ready":  # not stopped by mm: the connection ended
                    lost = self._lost
                    self._fail(
                        self._reason(lost) if lost else self._lost_reason("its connection closed")
                    )
        except asyncio.CancelledError:
            if self.state in ("starting", "ready"):
                self._fail("cancelled")
            raise
        except BaseException as exc:  # noqa: BLE001 - every way a server fails costs a warning
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            self._fail(self._reason(exc))
        finally:
            self._session = None
            self._started.set()
            self._gone.set()
            if self._errlog is not None:
                self._errlog.close()

    async def _connect(self, stack: contextlib.AsyncExitStack) -> ClientSession:
        """The transport, a pump that notices when it ends, and the SDK's session over them."""
        config = self.launch
        if config.transport == "stdio":
            assert config.command is not None
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            folder = resolve_dir(config.cwd, self.cwd) if config.cwd else self.cwd
            params = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=folder
            )
            read, write = await stack.enter_async_context(stdio_client(params, self._errlog))
        else:
            assert config.url is not None
            client = create_mcp_http_client(headers=config.headers or None)
            watch_responses(client, self._broken)  # a server that dies in a call: at once
            await stack.enter_async_context(client)
            read, write, _ = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client)
            )
        # The session reads through a pump, so that the end of the transport's stream (the
        # server's process died) is known at once, not at the next call's timeout.
        sender, receiver = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            try:
                async with sender:
                    async for item in read:
                        await sender.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                self._gone.set()

        group = await stack.enter_async_context(anyio.create_task_group())
        group.start_soon(pump)
        stack.callback(group.cancel_scope.cancel)  # left before the group: the pump stops
        info = types.Implementation(name="mm", version=__version__)
        return await stack.enter_async_context(
            ClientSession(
                receiver,
                write,
                client_info=info,
                message_handler=self._notified,
                list_roots_callback=self._roots,
            )
        )

    def _broken(self, exc: Exception) -> None:
        """An HTTP server's response stream broke (`broken_streams.py`): the server is lost
        when it no longer answers at its address. A stream that breaks while the server is
        looked at is looked at again after: a dying server may still answer the first look."""
        self._breaks.append(exc)
        if self._looking is None or self._looking.done():
            self._looking = asyncio.ensure_future(self._look())

    async def _look(self) -> None:
        config = self.launch
        assert config.url is not None
        while self._breaks and self.state == "ready":
            exc = self._breaks.pop()
            self._breaks.clear()
            if not await still_answering(config.url, config.headers or None):
                self._lost = exc
                self._gone.set()

    async def _roots(self, context: Any) -> types.ListRootsResult:
        """The folders the server may work in (`roots/list`, which a callback also declares
        as a capability): the project's, as an editor offers its workspace; a server that
        takes roots (a filesystem server) then needs no folder in its arguments."""
        folder = self.cwd.resolve()
        root = types.Root(uri=FileUrl(folder.as_uri()), name=folder.name or str(folder))
        return types.ListRootsResult(roots=[root])

    # -- the server's notifications ------------------------------------------------------------

    async def _notified(self, message: Any) -> None:
        """What the server says unasked: a changed list of tools is listed again."""
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            if self._relisting is not None and not self._relisting.done():
                self._relist_again = True  # it changed again while it was being listed
            else:
                self._relisting = asyncio.get_running_loop().create_task(
                    self._relist(), name=f"mcp server {self.name}: tools"
                )

    async def _relist(self) -> None:
        """The tools listed again (once the server is ready); the pool makes them anew and the
        next request to the model offers them. A list that fails keeps the tools as they were."""
        await self._started.wait()
        while self.state == "ready" and self._session is not None:
            self._relist_again = False
            try:
                with anyio.fail_after(self.config.startup_timeout):
                    tools = await _list_tools(self._session)
            except Exception:  # noqa: BLE001 - the server's failure is said when it stops
                logging.getLogger("mm.mcp").warning(
                    "MCP server %s: listing tools failed", self.name
                )
                return
            if self.state != "ready":
                return
            self.tools = tools
            self.on_change(self)
            if not self._relist_again:
                return

    async def tools_settled(self, timeout: float) -> None:
        """Until a list of tools under way is made (at most `timeout`): a call during which the
        server changed its tools answers once the next request can offer the new ones."""
        relisting = self._relisting
        if relisting is not None and not relisting.done():
            await asyncio.wait({relisting}, timeout=timeout)

    # -- calls -----------------------------------------------------------------------------

    async def call(
        self, tool: str, arguments: dict[str, Any], on_progress: OnProgress | None = None
    ) -> Outcome:
        """Call `tool`; never raises but for cancellation. A call that gets no answer in time
        stops the server. The call carries a progress token: the server's progress reaches
        `on_progress`. A call cancelled (Esc) is cancelled on the server too: it is told
        (`notifications/cancelled`) and may stop its work, which the SDK does not say."""
        session = self._session
        if self.state != "ready" or session is None:
            return Outcome(self._unavailable(tool), is_error=True)
        timeout = self.config.timeout
        sent: list[types.RequestId] = []

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(progress, total, message)

        async def request() -> types.CallToolResult:
            # the id the SDK gives this request (and makes its progress token): it reads the
            # counter with no await before, so nothing else takes it in between
            sent.append(session._request_id)  # noqa: SLF001
            return await session.call_tool(tool, arguments, progress_callback=report)

        calling = asyncio.ensure_future(request())
        lost = asyncio.ensure_future(self._gone.wait())
        finished = False
        try:
            await asyncio.wait({calling, lost}, timeout=timeout, return_when="FIRST_COMPLETED")
        except asyncio.CancelledError:
            if not calling.done() and sent and not self._gone.is_set():
                await self._cancel_on_server(session, sent[0], calling)
            raise
        finally:
            lost.cancel()
            finished = calling.done()
            if not finished:  # cancelled (Esc), lost, or no answer in time
                calling.cancel()
                await asyncio.gather(calling, return_exceptions=True)
        exc = calling.exception() if finished else None
        if finished and exc is None:
            await self.tools_settled(self.config.startup_timeout)
            return result_outcome(calling.result(), f"{self.name}: {tool}")
        if self._gone.is_set() or _connection_closed(exc):
            if self._task is not None:  # its task says why, as it ends (a second at most)
                await asyncio.wait({self._task}, timeout=2.0)
            self._fail(self._lost_reason(f"it stopped during a call of {tool}"))
            why = f" ({self.error})" if self.error else ""
            return Outcome(
                f"[error: the MCP server {self.name} stopped during this call of {tool}{why} — "
                "its tools are gone for this session]",
                is_error=True,
            )
        if not finished:
            self._fail(f"{tool} got no answer within {timeout:g} s")
            return Outcome(
                f"[error: {self.name}: {tool} got no answer within {timeout:g} s — the MCP "
                "server is stopped, and its tools are gone for this session]",
                is_error=True,
            )
        if isinstance(exc, McpError):
            return Outcome(f"[error: {self.name}: {tool}: {exc.error.message}]", is_error=True)
        return Outcome(f"[error: {self.name}: {tool}: {type(exc).__name__}: {exc}]", is_error=True)

    async def _cancel_on_server(
        self, session: ClientSession, request: types.RequestId, calling: asyncio.Future[Any]
    ) -> None:
        """Tell the server a call is cancelled (at most a second: mm is being stopped by the
        person), once the SDK forgot the request, so that a late answer is dropped."""
        calling.cancel()
        await asyncio.gather(calling, return_exceptions=True)
        notice = types.ClientNotification(
            types.CancelledNotification(
                params=types.CancelledNotificationParams(
                    requestId=request, reason="cancelled by the user"
                )
            )
        )
        sending = asyncio.ensure_future(session.send_notification(notice))
        await asyncio.wait({sending}, timeout=1.0)
        if not sending.done():
            sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)

    def _unavailable(self, tool: str) -> str:
        if self.state == "starting":
            return f"[error: the MCP server {self.name} is still starting — call {tool} again soon]"
        why = f" ({self.error})" if self.error else ""
        return (
            f"[error: the MCP server {self.name} has stopped{why} — {tool} cannot run; its "
            "tools are gone for this session]"
        )

    # -- reasons ---------------------------------------------------------------------------

    def _reason(self, exc: BaseException) -> str:
        """A failure in a few words, from the first real exception of an exception group."""
        exc = _root(exc)
        config = self.config
        if isinstance(exc, FileNotFoundError) and config.transport == "stdio":
            if config.cwd and not resolve_dir(config.cwd, self.cwd).is_dir():
                return f"no such folder: {resolve_dir(config.cwd, self.cwd)}"
            return f"no such command: {self.launch.command}"
        if isinstance(exc, PermissionError) and config.transport == "stdio":
            return f"{self.launch.command} cannot be run (permission denied)"
        if isinstance(exc, httpx.HTTPStatusError):
            return f"{config.url} answered HTTP {exc.response.status_code}"
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return f"cannot connect to {config.url}"
        if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.RemoteProtocolError):
            return f"lost the connection to {config.url}"  # it went away during an exchange
        if isinstance(exc, httpx.HTTPError):
            detail = f": {exc}" if str(exc) else ""
            return f"{config.url}: {type(exc).__name__}{detail}"
        if isinstance(exc, McpError):
            if exc.error.code == types.CONNECTION_CLOSED:
                return self._lost_reason("it closed the connection")
            if config.transport == "http" and exc.error.message == "Session terminated":
                return f"{config.url} answered HTTP 404"  # how the SDK says a 404
            return f"it refused: {exc.error.message}"
        return one_line(f"{type(exc).__name__}: {exc}", 200)

    def _lost_reason(self, what: str) -> str:
        """`what`, and the last line the server wrote on stderr, when it wrote one."""
        last = self._stderr_tail()
        return f"{what}: {last}" if last else what

    def _stderr_tail(self) -> str:
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            fd = log.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - STDERR_TAIL)
            tail = os.pread(fd, size - start, start).decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        return one_line(lines[-1], 200) if lines else ""


async def _list_tools(session: ClientSession) -> list[Listed]:
    """Every tool, page after page."""
    tools: list[Listed] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(cursor)
        tools.extend(
            Listed(
                tool.name,
                tool.description or tool.title,
                dict(tool.inputSchema),
                task_only=tool.execution is not None and tool.execution.taskSupport == "required",
            )
            for tool in page.tools
        )
        cursor = page.nextCursor
        if not cursor:
            return tools


def result_outcome(result: types.CallToolResult, label: str = "the tool") -> Outcome:
    """A tool's result as text: its text parts joined, an embedded text resource's text under a
    line that names it (a server may return a file's contents so), each image, audio clip, blob
    or resource link one line that says what it is; the structured content when there is
    nothing else. An error result (`isError`) starts with `[error: <label> failed]`, as mm's
    own failures are marked: without it the model reads the server's text as a success."""
    parts = [content_text(block) for block in result.content]
    if not parts and result.structuredContent is not None:
        parts = [json.dumps(result.structuredContent, ensure_ascii=False)]
    if result.isError:
        parts.insert(0, f"[error: {label} failed]")
    return Outcome("\n".join(parts), is_error=result.isError)


def content_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.type}: {block.mimeType}, {_size(len(block.data) * 3 // 4)}]"
    if isinstance(block, types.ResourceLink):
        what = ", ".join(p for p in (block.name, block.mimeType) if p)
        return f"[resource link: {block.uri}{f' ({what})' if what else ''}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            mime = f" ({resource.mimeType})" if resource.mimeType else ""
            return f"[resource: {resource.uri}{mime}]\n{resource.text}"
        mime = f"{resource.mimeType}, " if resource.mimeType else ""
        return f"[resource: {resource.uri} ({mime}{_size(len(resource.blob) * 3 // 4)})]"
    return f"[{getattr(block, 'type', 'content')}]"


def _size(count: int) -> str:
    return f"{count:,} bytes"


def _root(exc: BaseException) -> BaseException:
    """The first exception of a group that is not a cancellation."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if not inner:
            break
        exc = inner[0]
    return exc


def _connection_closed(exc: BaseException | None) -> bool:
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError):
        return True
    return isinstance(exc, McpError) and exc.error.code == types.CONNECTION_CLOSED
