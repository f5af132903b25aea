"""The real `mm -acp` driven by the acp package's own client, as an editor drives it: the editor
that records what arrives (`Recorder`), mm started on the scripted server (`mm_acp`), a session
(`start`) and a prompt answered with its updates handled (`ask`). Shared by the ACP tests and the
tests that need an editor (secrets, stop signals)."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
)

from support.editor import Editor
from support.env import clean_env
from support.program import MM
from support.scripted_server import ScriptedServer
from support.waiting import await_until

MODEL = "m1"


class Recorder(Editor):
    """An editor: keeps every update and permission request, answers permission requests from
    `answers` in order (an option id, or "cancelled"); with `hold` set, it never answers."""

    def __init__(self, answers: list[str] | None = None, *, hold: bool = False) -> None:
        super().__init__()
        self.permissions: list[tuple[Any, list[Any]]] = []
        self.answers = list(answers or [])
        self.hold = hold

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        if self.hold:
            await asyncio.Event().wait()
        answer = self.answers.pop(0)
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    # -- reading what arrived ---------------------------------------------------------------

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))

    def thoughts(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentThoughtChunk))

    def starts(self) -> list[ToolCallStart]:
        return [u for u in self.updates if isinstance(u, ToolCallStart)]

    def start(self, tool: str, nth: int = 0) -> ToolCallStart:
        return [u for u in self.starts() if u.field_meta == {"mm": {"tool": tool}}][nth]

    def statuses(self, call_id: str) -> list[str]:
        return [
            u.status
            for u in self.updates
            if isinstance(u, ToolCallStart | ToolCallProgress)
            and u.tool_call_id == call_id
            and u.status
        ]

    def last(self, call_id: str) -> ToolCallProgress:
        return [
            u
            for u in self.updates
            if isinstance(u, ToolCallProgress) and u.tool_call_id == call_id and u.status
        ][-1]


# The editor of each connection mm_acp opened, for `ask` to wait on.
EDITOR_OF: weakref.WeakKeyDictionary[Any, Recorder] = weakref.WeakKeyDictionary()


@asynccontextmanager
async def mm_acp(
    tmp_path: Path,
    server: ScriptedServer,
    client: Recorder,
    *args: str,
    cwd: Path | None = None,
) -> AsyncIterator[tuple[Any, Path]]:
    """The real `mm -acp` on the scripted server; yields the connection and its stderr log."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    log = tmp_path / f"stderr-{time.monotonic_ns()}.log"
    with log.open("wb") as stderr:
        async with acp.spawn_agent_process(
            client,
            *MM,
            "-acp",
            "--base-url",
            server.base_url,
            "--model",
            MODEL,
            *args,
            env=clean_env(home),
            cwd=cwd or tmp_path,
            transport_kwargs={"stderr": stderr},
            observers=[client.observe],
        ) as (conn, _process):
            EDITOR_OF[conn] = client
            yield conn, log


async def start(conn: Any, cwd: Path) -> str:
    await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    return (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id


async def caught_up(client: Recorder) -> None:
    """Until the editor has handled every update mm sent (before its last answer)."""
    assert await await_until(client.caught_up), "updates sent by mm were never handled"


async def ask(conn: Any, session_id: str, text: str) -> str:
    response = await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
    await caught_up(EDITOR_OF[conn])  # the updates sent before the answer, handled
    return response.stop_reason
