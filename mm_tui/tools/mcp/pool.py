"""The MCP servers of one configuration (mcpServers, or an editor's session/new): started in the
background, their tools offered as each server becomes ready, a warning for each server that
fails, all stopped on exit. A `ToolSource` of the tool registry.

`start()` returns at once: a task loads the SDK in a thread (about half a second of imports,
kept off the event loop, so the window keeps drawing) and connects every server at the same
time. The engine asks for the tools before each request to the model, so a request sent before
a server is ready goes with the tools ready so far, and the next request of the same turn
already has the server's. `ready()` waits until every server has started or failed (`mm -p`
and an ACP prompt wait for it: they have one request and nobody to see tools arrive later).
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mm_tui.config import McpServer
from mm_tui.core.events import EngineError, Event
from mm_tui.core.text import one_line
from mm_tui.tools.base import Tool
from mm_tui.tools.mcp.tool import McpTool, tool_name, unique_name

if TYPE_CHECKING:
    from mm_tui.tools.mcp.link import Link

SDK_MODULE = "mm_tui.tools.mcp.link"


class McpPool:
    def __init__(
        self,
        servers: Mapping[str, McpServer],
        cwd: Path,
        environ: Mapping[str, str] | None = None,
        *,
        beside: McpPool | None = None,
    ) -> None:
        self.servers = dict(servers)
        # Another pool whose tools the same registry offers (an ACP session's editor servers sit
        # beside the configured ones): its names are taken for this pool's tools too.
        self.beside = beside
        self.cwd = cwd
        # Each entry with its `${VAR}`s replaced from mm's environment: what is started. The
        # entry as written stays what messages quote (a URL's token is not shown on screen).
        self.launches: dict[str, McpServer] = {}
        unset: dict[str, list[str]] = {}  # variable -> the servers that name it
        for name, config in self.servers.items():
            self.launches[name], missing = config.expanded(
                os.environ if environ is None else environ
            )
            for variable in missing:
                unset.setdefault(variable, []).append(name)
        # Start-up notes: the variables that are not set, said once.
        self.notes: list[str] = [
            f"MCP server{'s' if len(names) > 1 else ''} {', '.join(names)}: ${{{variable}}} is "
            "not set in mm's environment — it expands to nothing"
            for variable, names in unset.items()
        ]
        self.links: dict[str, Link] = {}
        self._tools: dict[str, dict[str, McpTool]] = {}  # server -> its tools by mm's name
        # mm's name of each (server, tool) ever made: kept when a server lists its tools again,
        # and never given twice (`<server>__<tool>` can be two tools' once joined or cut)
        self._names: dict[tuple[str, str], str] = {}
        self._taken: set[str] = set()
        self._noted: set[str] = set()  # what `_note` said, said once
        self._version = 0
        self._emit: Callable[[Event], None] | None = None
        self._unsaid: list[Event] = []  # warnings from before anyone listened
        self._warned: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    # -- ToolSource --------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Changes whenever the tools offered change."""
        return self._version

    def start(self) -> None:
        if self._task is None and self.servers and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._start(), name="mcp servers")

    def tools(self) -> list[Tool]:
        """The tools of the servers ready now."""
        self._yield_to_beside()
        return [
            tool
            for name, link in self.links.items()
            if link.state == "ready"
            for tool in self._tools.get(name, {}).values()
        ]

    def get(self, name: str) -> Tool | None:
        """A tool by mm's name, its server ready or not (a stopped server's tool answers with
        the error that says so)."""
        self._yield_to_beside()
        for tools in self._tools.values():
            if name in tools:
                return tools[name]
        return None

    def listen(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        unsaid, self._unsaid = self._unsaid, []
        for event in unsaid:
            emit(event)

    async def ready(self) -> None:
        if self._task is None:
            return
        await asyncio.wait({self._task})  # never cancels it, whoever gives up waiting
        await asyncio.gather(*(link.started() for link in self.links.values()))

    async def aclose(self) -> None:
        """Stop every server, all at once."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await asyncio.gather(
            *(link.aclose() for link in self.links.values()), return_exceptions=True
        )

    # -- inside ----------------------------------------------------------------------------

    async def _start(self) -> None:
        try:
            sdk = await asyncio.to_thread(importlib.import_module, SDK_MODULE)
        except Exception as exc:  # noqa: BLE001 - no server then, and one warning each
            for name in self.servers:
                self._warn(name, f"did not start: the MCP SDK cannot be loaded ({exc})")
            return
        if self._closed:
            return
        for name, config in self.servers.items():
            link = sdk.Link(name, config, self.cwd, self._changed, self.launches.get(name))
            self.links[name] = link
            link.start()

    def _changed(self, link: Link) -> None:
        """A server became ready (its tools are made) or failed (its warning is said)."""
        if link.state == "ready":
            self._make_tools(link)
        elif link.state == "failed":
            if link.was_ready:
                self._warn(
                    link.name, f"stopped ({link.error}) — its tools are gone for this session"
                )
            else:
                self._warn(link.name, f"did not start ({link.error}) — its tools are not offered")
        self._version += 1

    def _make_tools(self, link: Link) -> None:
        """The server's tools as mm's, but those that run only as a task (mm does not run
        tasks: every plain call of one fails), each under a name no other tool has."""
        made: dict[str, McpTool] = {}
        for listed in link.tools:
            if listed.task_only:
                self._note(
                    f"[warning: MCP server {link.name}: its tool {listed.name} is not offered — "
                    "it runs only as a task, which mm does not support]"
                )
                continue
            name = self._name_for(link.name, listed.name)
            made[name] = McpTool(
                link.name,
                listed.name,
                description=listed.description,
                schema=listed.schema,
                link=link,
                name=name,
            )
        self._tools[link.name] = made

    def _name_for(self, server: str, tool: str) -> str:
        """`<server>__<tool>`, or when another tool of these servers has that name already (a
        server `a__b` and a server `a`'s tool `b__c`; two names alike in their first 64
        characters), the same with a short suffix, said once."""
        name = self._names.get((server, tool))
        if name is not None:
            return name
        wanted = tool_name(server, tool)
        name = unique_name(wanted, self.taken)
        self._names[(server, tool)] = name
        self._taken.add(name)
        if name != wanted:
            owner = self.owner(wanted)
            whose = f"{owner[0]}'s tool {owner[1]}" if owner else "another tool"
            self._note(
                f"[warning: MCP server {server}: its tool {tool} is offered as {name} — "
                f"{wanted} is the name of {whose}]"
            )
        return name

    def _yield_to_beside(self) -> None:
        """Give up a name the pool beside has given since this pool took it: its server became
        ready later (the configured servers start with an ACP session's editor servers). The
        pool beside is shared by other sessions and keeps its names; this pool's tool takes
        another, said as any other clash, so that which tool has which name never depends on
        which server was ready first."""
        if self.beside is None:
            return
        for server, tools in self._tools.items():
            clashing = [name for name in tools if self.beside.owner(name) is not None]
            for name in clashing:
                tool = tools.pop(name)
                del self._names[(server, tool.tool)]
                self._taken.discard(name)
                tool.name = self._name_for(server, tool.tool)
                tools[tool.name] = tool
            if clashing:
                self._version += 1

    def taken(self, name: str) -> bool:
        """Whether a tool of this pool, or of the pool beside it, has been given `name`."""
        return name in self._taken or (self.beside is not None and self.beside.taken(name))

    def owner(self, name: str) -> tuple[str, str] | None:
        """The (server, tool) given `name`, here or beside."""
        for key, given in self._names.items():
            if given == name:
                return key
        return self.beside.owner(name) if self.beside is not None else None

    def _note(self, message: str) -> None:
        """A warning about a server's tools, said once however often they are listed."""
        if message in self._noted:
            return
        self._noted.add(message)
        self._say(EngineError(where="mcp", level="warning", message=one_line(message, 600)))

    def _warn(self, server: str, what: str) -> None:
        if server in self._warned:  # one warning a server
            return
        self._warned.add(server)
        self._say(
            EngineError(
                where="mcp",
                level="warning",
                message=f"[warning: MCP server {server} {one_line(what, 400)}]",
            )
        )

    def _say(self, event: Event) -> None:
        if self._emit is None:
            self._unsaid.append(event)
        else:
            self._emit(event)
