"""`mm -acp` under what an editor should not send and what a model server should not do: lines
that are no message, a failing model, a server that never answers, sessions of other folders.
The real `mm -acp` in a subprocess, on raw pipes or the acp package's own client, talking to the
scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.exceptions import RequestError
from acp.schema import AgentThoughtChunk, UsageUpdate
from support.acp_helpers import MODEL, Recorder, ask, caught_up, mm_acp, start
from support.env import clean_env
from support.program import MM
from support.scripted_server import Error, Reply, ScriptedServer, call
from support.waiting import await_until


class RawAgent:
    """`mm -acp` on raw pipes: lines written as they are, answers read line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout

    async def write(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        await self.stdin.drain()

    async def read(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self.stdout.readline(), timeout=60)
        assert line.endswith(b"\n"), f"mm -acp ended: {line!r}"
        return json.loads(line)

    async def request(self, id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its answer (the notifications before it are passed over)."""
        message = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
        await self.write(json.dumps(message).encode())
        while True:
            answer = await self.read()
            if answer.get("id") == id_ and "method" not in answer:
                return answer


@asynccontextmanager
async def raw_mm_acp(tmp_path: Path, base_url: str, *args: str) -> AsyncIterator[RawAgent]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        *MM,
        "-acp",
        "--base-url",
        base_url,
        "--model",
        MODEL,
        *args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env=clean_env(home),
    )
    try:
        yield RawAgent(proc)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=20)
        except TimeoutError:
            proc.kill()
            await proc.wait()


# --------------------------------------------------------------------------- lines that are no message


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b'[{"jsonrpc": "2.0", "id": 7, "method": "initialize"}]', -32600),
        (b"[]", -32600),
        (b"42", -32600),
        (b'"x"', -32600),
        (b"null", -32600),
        (b"true", -32600),
        (b"{}", -32600),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 9, "method": 5}', -32600),
        (b"{not json", -32700),
        (b"\xff\xfe", -32700),
    ],
)
async def test_a_line_that_is_no_message_is_answered_and_mm_goes_on(
    tmp_path: Path, line: bytes, code: int
) -> None:
    with ScriptedServer(Reply("still here")) as server:
        async with raw_mm_acp(tmp_path, server.base_url) as agent:
            await agent.write(line)
            answer = await agent.read()
            assert answer["error"]["code"] == code
            assert answer["id"] == (9 if b'"id": 9' in line else None)
            assert answer["error"]["data"]["message"]
            init = await agent.request(1, "initialize", {"protocolVersion": 1})
            assert init["result"]["agentInfo"]["name"] == "mm"
            new = await agent.request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            prompt = {
                "sessionId": new["result"]["sessionId"],
                "prompt": [{"type": "text", "text": "hi"}],
            }
            done = await agent.request(3, "session/prompt", prompt)
            assert done["result"] == {"stopReason": "end_turn"}


async def test_a_malformed_response_is_not_answered(tmp_path: Path) -> None:
    """A response whose id cannot be one gets no answer (two peers must not answer each
    other's errors forever); the next request is served."""
    with ScriptedServer() as server:
        async with raw_mm_acp(tmp_path, server.base_url) as agent:
            await agent.write(b'{"jsonrpc": "2.0", "id": [1], "result": {}}')
            init = await agent.request(1, "initialize", {"protocolVersion": 1})
            assert init["result"]["agentInfo"]["name"] == "mm"


# --------------------------------------------------------------------------- a failed turn


async def test_a_failed_turn_answers_the_prompt_with_an_error(tmp_path: Path) -> None:
    """The server refuses the request: the prompt's answer is a JSON-RPC error with mm's words,
    not `end_turn` (an editor would take the words for the answer); the words also came as agent
    text; the session goes on."""
    client = Recorder()
    with ScriptedServer(Error(400, "model llama-9 is not loaded")) as server:
        async with mm_acp(tmp_path, server, client) as (conn, _log):
            session_id = await start(conn, tmp_path)
            with pytest.raises(RequestError) as raised:
                await conn.prompt(session_id=session_id, prompt=[acp.text_block("hi")])
            await caught_up(client)
            assert raised.value.code == -32603
            said = str(raised.value)
            assert "model llama-9 is not loaded" in said and not said.startswith("[error")
            assert "model llama-9 is not loaded" in client.text()
            server.script(Reply("answered"))
            assert await ask(conn, session_id, "again") == "end_turn"
    assert client.text().endswith("answered")


# --------------------------------------------------------------------------- session/load


async def test_load_replays_the_thoughts(tmp_path: Path) -> None:
    """Each answer's reasoning comes back as thought, before its text and its calls, as it came
    live; the model is never sent it back (a server may refuse it in a request)."""
    live = Recorder()
    with ScriptedServer(
        Reply(reasoning="Let me look first.", tool_calls=[call("bash", {"command": "true"})]),
        Reply("Nothing there.", reasoning="It printed nothing.", reasoning_field="reasoning"),
        Reply("ok"),
    ) as server:
        async with mm_acp(tmp_path, server, live) as (conn, _log):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "look") == "end_turn"
        again = Recorder()
        async with mm_acp(tmp_path, server, again) as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            await caught_up(again)
            replayed = [u for u in again.updates if not isinstance(u, UsageUpdate)]
            assert await ask(conn, session_id, "more") == "end_turn"
        sent = server.requests[-1].messages
    assert [type(u).__name__ for u in replayed] == [
        "UserMessageChunk",
        "AgentThoughtChunk",
        "ToolCallStart",
        "AgentThoughtChunk",
        "AgentMessageChunk",
    ]
    assert [u.content.text for u in replayed if isinstance(u, AgentThoughtChunk)] == [
        "Let me look first.",
        "It printed nothing.",
    ]
    assert live.thoughts() == "Let me look first.It printed nothing."
    assert "Let me look first." not in json.dumps(sent)
    assert all(set(m) <= {"role", "content", "tool_calls", "tool_call_id"} for m in sent)


# --------------------------------------------------------------------------- session/list


async def test_list_without_cwd_lists_every_project(tmp_path: Path) -> None:
    """`cwd` is a filter: with it, one project's sessions; without it, those of every project
    mm knows, each with its own folder, so that the editor can load it there."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with ScriptedServer() as server:
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            in_a = await start(conn, a)
            in_b = (await conn.new_session(cwd=str(b), mcp_servers=[])).session_id
            every = await conn.list_sessions()
            only_a = await conn.list_sessions(cwd=str(a))
            launch = await conn.list_sessions(cwd=str(tmp_path))
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            listed = {s.session_id: s.cwd for s in (await conn.list_sessions()).sessions}
            await conn.load_session(cwd=listed[in_b], session_id=in_b, mcp_servers=[])
            server.script(Reply("answered in b"))
            assert await ask(conn, in_b, "hi") == "end_turn"
    assert {(s.session_id, s.cwd) for s in every.sessions} == {(in_a, str(a)), (in_b, str(b))}
    assert [s.session_id for s in only_a.sessions] == [in_a]
    assert launch.sessions == []
    assert listed == {in_a: str(a), in_b: str(b)}


# --------------------------------------------------------------------------- a session in use


async def test_load_refuses_a_session_another_mm_writes(tmp_path: Path) -> None:
    """`mm -p --resume` holds the session (its answer kept waiting): `session/load` of it is
    refused with the reason, not forked, since the editor's id must stay the session it names;
    once that mm has ended, the load succeeds."""
    gate = threading.Event()

    def answer(request: Any) -> Reply:
        if request.messages[-1]["content"] == "held":
            gate.wait(60)
        return Reply("ok")

    with ScriptedServer(on_empty=answer) as server:
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "hi") == "end_turn"
        base = ("--base-url", server.base_url, "--model", MODEL)
        held = subprocess.Popen(
            [*MM, *base, "--resume", session_id, "-p", "held"],
            cwd=tmp_path,
            env=clean_env(tmp_path / "home"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            await asyncio.to_thread(server.wait_for_requests, 2, 60)
            async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                with pytest.raises(RequestError) as raised:
                    await conn.load_session(
                        cwd=str(tmp_path), session_id=session_id, mcp_servers=[]
                    )
        finally:
            gate.set()
            await asyncio.to_thread(held.wait, 60)
        assert raised.value.code == -32600
        assert f"session {session_id} is open in another mm process" in str(raised.value.data)
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])


# --------------------------------------------------------------------------- initialize


class SilentServer:
    """A server that accepts, reads the request and never answers: the model probe waits on
    it until its own timeout. `asked` holds each connection once its request has been read."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.asked: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            request = b""
            while b"\r\n\r\n" not in request:
                piece = conn.recv(4096)
                if not piece:
                    break
                request += piece
            self.asked.append(conn)

    def still_open(self, conn: socket.socket) -> bool:
        """Whether the other end has not closed `conn` (nothing more was sent on it)."""
        try:
            return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True

    def close(self) -> None:
        self.listener.close()
        for conn in self.asked:
            conn.close()


async def test_initialize_answers_while_the_server_is_still_asked(tmp_path: Path) -> None:
    """A server that accepts and never answers holds the model probe: initialize answers while
    the probe still waits (it goes on in the background), and closing stdin then ends mm, probe
    and all. Before, initialize answered only once the probe had given up."""
    server = SilentServer()
    try:
        async with raw_mm_acp(tmp_path, f"http://127.0.0.1:{server.port}/v1") as agent:
            init = await agent.request(1, "initialize", {"protocolVersion": 1})
            assert init["result"]["agentInfo"]["name"] == "mm", init
            assert await await_until(lambda: bool(server.asked)), "the server was never asked"
            assert server.still_open(server.asked[0]), "initialize waited for the probe"
            agent.stdin.close()
            assert await asyncio.wait_for(agent.proc.wait(), timeout=60) == 0
    finally:
        server.close()
