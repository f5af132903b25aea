"""What mm's ACP agent does not offer is an error, never an empty success (the acp package's
Agent protocol has do-nothing bodies, which answered `{}` or null); and a reopened session with a
known context window reports it (a call the type checker found broken). The real `mm -acp`,
driven by the acp package's own client."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest
from acp.exceptions import RequestError
from acp.schema import UsageUpdate
from support.acp_helpers import Recorder, ask, mm_acp, start
from support.scripted_server import Reply, ScriptedServer
from support.session_helpers import sessions_of


async def code_of(call) -> int:  # noqa: ANN001 - an awaitable request
    with pytest.raises(RequestError) as raised:
        await call
    return raised.value.code


async def test_unsupported_methods_are_errors(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            session_id = await start(conn, tmp_path)
            # an unknown session is a bad parameter, and so is an unknown mode
            # (tests/acp/test_acp_modes.py sets the real ones)
            assert await code_of(conn.set_session_mode(session_id="nope", mode_id="x")) == -32602
            assert await code_of(conn.set_session_mode(session_id=session_id, mode_id="x")) == (
                -32602
            )
            # the model is the one configuration option (tests/acp/test_acp_model.py)
            assert await code_of(
                conn.set_config_option(config_id="x", session_id=session_id, value="y")
            ) == (-32602)
            assert await code_of(conn.authenticate(method_id="nothing")) == -32602
            assert await code_of(conn.ext_method("_mm/unknown", {})) == -32601
            # and the agent is still there
            server.script(Reply("still here"))
            assert await ask(conn, session_id, "hi") == "end_turn"


async def test_a_reopened_session_reports_its_context(tmp_path: Path) -> None:
    with ScriptedServer(serves="llama.cpp", context_window=8192) as server:
        server.script(Reply("first answer"))
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "hi") == "end_turn"
        editor = Recorder()
        async with mm_acp(tmp_path, server, editor) as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
    usages = [u for u in editor.updates if isinstance(u, UsageUpdate)]
    assert usages and usages[-1].size == 8192 and usages[-1].used > 0


@pytest.mark.parametrize("asked", [0, acp.PROTOCOL_VERSION, acp.PROTOCOL_VERSION + 5])
async def test_initialize_answers_a_version_it_speaks(tmp_path: Path, asked: int) -> None:
    """The requested version when mm supports it, else the latest it supports: a client that
    asks for 0 (not a version) or a future one is told mm's."""
    with ScriptedServer() as server:
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            answer = await conn.initialize(protocol_version=asked)
    assert answer.protocol_version == acp.PROTOCOL_VERSION


async def test_a_new_session_is_loadable_and_listed_before_its_first_prompt(
    tmp_path: Path,
) -> None:
    """Another `mm -acp` (acpx runs one per command) lists and loads the session a first one
    made, though nothing was asked in it yet; the prompt then goes on in that session."""
    with ScriptedServer() as server:
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            session_id = await start(conn, tmp_path)
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            listed = await conn.list_sessions(cwd=str(tmp_path))
            assert session_id in [s.session_id for s in listed.sessions]
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            server.script(Reply("answered in the loaded session"))
            assert await ask(conn, session_id, "hi") == "end_turn"
    files = list(sessions_of(tmp_path, tmp_path / "home").glob(f"{session_id}*.jsonl"))
    assert files and "answered in the loaded session" in files[0].read_text()
