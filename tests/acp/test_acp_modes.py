"""The modes as ACP session modes: session/new offers ask, auto and plan with the current one,
session/set_mode switches one session (its next request declares the mode's tools, its next
command asks), the others keep theirs. The real `mm -acp`, driven by the acp package's own
client."""

from __future__ import annotations

from pathlib import Path

import acp
from support.acp_helpers import Recorder, ask, mm_acp, start
from support.scripted_server import Reply, ScriptedServer, call


def declared(body: dict) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


async def test_plan_mode_over_acp(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[call("bash", {"command": "ls"}, id="c1")]),
        Reply("1. change it"),
        Reply("hi"),
    ]
    editor = Recorder(["a"])
    with ScriptedServer(*script) as server:
        async with mm_acp(tmp_path, server, editor, "--yolo") as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            opened = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            modes = opened.modes
            assert modes.current_mode_id == "auto"
            assert [m.id for m in modes.available_modes] == ["ask", "auto", "plan"]
            other = await start(conn, tmp_path)
            await conn.set_session_mode(session_id=opened.session_id, mode_id="plan")
            assert await ask(conn, opened.session_id, "plan it") == "end_turn"
            planned = server.requests[0].body
            assert await ask(conn, other, "hello") == "end_turn"
            on_other = server.requests[-1].body
    assert "write_file" not in declared(planned) and "bash" in declared(planned)
    assert len(editor.permissions) == 1  # plan mode asked, though mm runs with --yolo
    assert "write_file" in declared(on_other)  # the other session stayed in auto
