"""`mm -acp` driven by the package's own ACP client, as an editor or a parent mm drives it.

Real parts only: the real `mm -acp` in a subprocess (`acp.spawn_agent_process`, pipes on stdin
and stdout), talking to the scripted OpenAI-compatible server on 127.0.0.1. What the model
receives is read from the server's recorded requests; what the editor sees, from the updates
and permission requests the client records.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    FileEditToolCallContent,
    McpServerStdio,
    ToolCallProgress,
    UsageUpdate,
    UserMessageChunk,
)
from support.acp_helpers import MODEL, Recorder, ask, caught_up, mm_acp, start
from support.env import clean_env
from support.fetch_server import WebServer
from support.journal_records import RECORDS
from support.processes import alive, processes_mentioning
from support.program import MM
from support.scripted_server import Reply, ScriptedServer, call
from support.session_helpers import sessions_of
from support.trusting import trust_project_file
from support.waiting import until, wait_until

from mm_tui import __version__
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import INTERRUPTED, Session

MCP_SERVER = Path(__file__).parents[1] / "support" / "mcp_server.py"


def output_of(update: ToolCallProgress) -> str:
    return "".join(c.content.text for c in update.content or [] if c.type == "content")


def diffs_of(update: Any) -> list[FileEditToolCallContent]:
    return [c for c in update.content or [] if c.type == "diff"]


def tool_messages(request: Any) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


# --------------------------------------------------------------------------- initialize


async def test_initialize_names_the_agent_and_its_model(tmp_path: Path) -> None:
    (tmp_path / "reviewer.yaml").write_text("acp: {title: Reviewer}\n")
    client = Recorder()
    with ScriptedServer() as server:
        async with mm_acp(tmp_path, server, client, "--config", "reviewer.yaml") as (conn, _):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            newer = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION + 5)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
    assert init.protocol_version == acp.PROTOCOL_VERSION
    assert newer.protocol_version == acp.PROTOCOL_VERSION  # the latest it speaks
    assert init.agent_info is not None
    assert (init.agent_info.name, init.agent_info.title) == ("mm", "Reviewer")
    assert init.agent_info.version == __version__
    caps = init.agent_capabilities
    assert caps is not None and caps.load_session is True
    assert caps.prompt_capabilities is not None
    assert caps.prompt_capabilities.image is False and caps.prompt_capabilities.audio is False
    # initialize answers before the server is asked: the model comes with the session;
    # a server mm has no name for is named by its host
    assert init.field_meta == {"mm": {"title": "Reviewer"}}
    assert session.field_meta == {
        "mm": {"title": "Reviewer", "model": MODEL, "provider": "127.0.0.1"}
    }
    assert session.session_id


async def test_stdout_carries_protocol_messages_only(tmp_path: Path) -> None:
    """Raw bytes: nothing before initialize, then one JSON-RPC object per line, through a turn
    whose tool writes to its stdout and stderr, and to mm's own stdout (file descriptor 1 of
    mm, the parent of its parent, the launcher), which must end in the log, not in the
    protocol."""
    home = tmp_path / "home"
    home.mkdir()
    mm = "$(cut -d' ' -f4 /proc/$PPID/stat)"  # the launcher's parent
    command = f"echo to-stdout; echo to-stderr >&2; echo stray-line > /proc/{mm}/fd/1"
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": command}, id="c1")]), Reply("done")
    ) as server:
        proc = await asyncio.create_subprocess_exec(
            *MM,
            "-acp",
            "--base-url",
            server.base_url,
            "--model",
            MODEL,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            # unconfined: the sandbox would refuse the write to mm's own stdout (a process
            # outside the command's), and this is about what mm does with one that happens
            env=clean_env(home, {"MM_SANDBOX": "off"}),
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(proc.stdout.read(1), timeout=1.5)

            async def send(id_: int, method: str, params: dict[str, Any]) -> list[dict]:
                assert proc.stdin is not None and proc.stdout is not None
                message = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
                proc.stdin.write(json.dumps(message).encode() + b"\n")
                await proc.stdin.drain()
                seen = []
                while True:
                    line = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
                    assert line.endswith(b"\n")
                    obj = json.loads(line)  # fails on anything that is not JSON
                    assert obj["jsonrpc"] == "2.0"
                    seen.append(obj)
                    if obj.get("id") == id_ and "method" not in obj:
                        return seen

            seen = await send(0, "initialize", {"protocolVersion": 1})
            assert seen[-1]["result"]["agentInfo"]["name"] == "mm"
            seen = await send(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
            session_id = seen[-1]["result"]["sessionId"]
            prompt = [{"type": "text", "text": "run it"}]
            seen = await send(2, "session/prompt", {"sessionId": session_id, "prompt": prompt})
            assert seen[-1]["result"] == {"stopReason": "end_turn"}
            assert all(m["method"] == "session/update" for m in seen[:-1])
            finished = [
                m["params"]["update"]
                for m in seen[:-1]
                if m["params"]["update"].get("status") == "completed"
            ]
            assert "to-stdout" in json.dumps(finished)
        finally:
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), timeout=10)
        rest = await proc.stdout.read()
        assert rest == b""
        log = (await proc.stderr.read()).decode()
        assert "mm -acp:" in log  # the log went to stderr
        assert "stray-line" in log


def test_stdout_that_is_a_file_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out.txt"
    with out.open("wb") as stdout:
        result = subprocess.run(
            [*MM, "-acp", "--base-url", "http://127.0.0.1:9/v1", "--model", MODEL],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env=clean_env(home),
            timeout=30,
        )
    assert result.returncode == 2
    assert "must be pipes" in result.stderr.decode()
    assert out.read_bytes() == b""


# --------------------------------------------------------------------------- sessions and tools


async def test_session_cwd_is_the_tools_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("the notes of the project\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    client = Recorder()
    with ScriptedServer(
        Reply(
            tool_calls=[
                call("bash", {"command": "pwd"}, id="c1"),
                call("read_file", {"path": "notes.txt"}, id="c2"),
                call("read_file", {"path": "missing.txt"}, id="c3"),
            ]
        ),
        Reply("done"),
    ) as server:
        async with mm_acp(tmp_path, server, client, cwd=elsewhere) as (conn, _):
            session_id = await start(conn, project)
            assert await ask(conn, session_id, "look around") == "end_turn"
        second = server.requests[1]
    pwd, notes, missing = tool_messages(second)
    assert pwd.strip() == str(project)
    assert "the notes of the project" in notes
    # the session file lives in the session's folder, under the session's id
    assert (sessions_of(project, tmp_path / "home") / f"{session_id}.jsonl").is_file()
    assert not (project / ".mm").exists()
    assert not (elsewhere / ".mm").exists()

    bash = client.start("bash")
    assert (bash.tool_call_id, bash.kind, bash.title) == ("c1", "execute", "bash  pwd")
    assert bash.raw_input == {"command": "pwd"}
    read = client.start("read_file")
    assert read.kind == "read" and read.title == "read_file  notes.txt"
    assert [loc.path for loc in read.locations or []] == [str(project / "notes.txt")]
    assert client.statuses("c1") == ["pending", "in_progress", "completed"]
    assert client.statuses("c2") == ["pending", "in_progress", "completed"]
    assert client.statuses("c3") == ["pending", "in_progress", "failed"]
    assert output_of(client.last("c1")).strip() == str(project)
    done = client.last("c2").field_meta["mm"]
    assert done["status"] == "ok" and isinstance(done["elapsed"], float)
    assert client.last("c3").field_meta["mm"]["status"] == "error"
    assert output_of(client.last("c3")) == missing
    assert client.text() == "done"


async def test_text_and_thoughts_stream_in_order(tmp_path: Path) -> None:
    client = Recorder()
    with ScriptedServer(
        Reply("The answer is forty-two.", reasoning="Let me think about it.", split=4)
    ) as server:
        async with mm_acp(tmp_path, server, client) as (conn, _):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "what is it?") == "end_turn"
    thoughts = [u for u in client.updates if isinstance(u, AgentThoughtChunk)]
    texts = [u for u in client.updates if isinstance(u, AgentMessageChunk)]
    assert len(thoughts) > 1 and len(texts) > 1  # streamed, not sent at the end
    assert client.thoughts() == "Let me think about it."
    assert client.text() == "The answer is forty-two."
    kinds = [type(u).__name__ for u in client.updates]
    assert kinds.index("AgentMessageChunk") > max(
        i for i, k in enumerate(kinds) if k == "AgentThoughtChunk"
    )


async def test_prompt_blocks_become_text_and_images_are_refused(tmp_path: Path) -> None:
    client = Recorder()
    notes = tmp_path / "notes.md"
    with ScriptedServer(Reply("seen")) as server:
        async with mm_acp(tmp_path, server, client) as (conn, _):
            session_id = await start(conn, tmp_path)
            response = await conn.prompt(
                session_id=session_id,
                prompt=[
                    acp.text_block("summarise "),
                    acp.resource_block(
                        acp.embedded_text_resource(notes.as_uri(), "line one\nline two")
                    ),
                    acp.text_block(" please"),
                ],
            )
            assert response.stop_reason == "end_turn"
            with pytest.raises(acp.RequestError) as refused:
                await conn.prompt(
                    session_id=session_id,
                    prompt=[acp.text_block("what is this?"), acp.image_block("AAAA", "image/png")],
                )
        user = server.requests[0].messages[-1]
    assert user["content"] == (
        f"summarise @{notes} please\n\n"
        f'<context ref="{notes.as_uri()}">\nline one\nline two\n</context>'
    )
    assert "image" in str(refused.value.data)
    assert len(server.requests) == 1  # the refused prompt never reached the model


async def test_file_changes_travel_as_diffs(tmp_path: Path) -> None:
    (tmp_path / "greet.py").write_text("def greet():\n    return 'helo'\n\nprint(greet())\n")
    client = Recorder()
    with ScriptedServer(
        Reply(
            tool_calls=[
                call("write_file", {"path": "pkg/new.txt", "content": "one\ntwo\n"}, id="w1"),
                call(
                    "edit_file",
                    {"path": "greet.py", "edits": [{"old": "'helo'", "new": "'hello'"}]},
                    id="e1",
                ),
            ]
        ),
        Reply("fixed"),
    ) as server:
        async with mm_acp(tmp_path, server, client) as (conn, _):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "fix it") == "end_turn"
    write = client.start("write_file")
    assert write.kind == "edit" and write.title == "write_file  pkg/new.txt"
    assert [loc.path for loc in write.locations or []] == [str(tmp_path / "pkg" / "new.txt")]
    created = diffs_of(client.last("w1"))
    assert len(created) == 1
    assert created[0].path == str(tmp_path / "pkg" / "new.txt")
    assert created[0].old_text is None  # a new-file diff
    assert created[0].new_text == "one\ntwo\n"
    assert output_of(client.last("w1")).startswith("created pkg/new.txt (2 lines)")

    edit = client.start("edit_file")
    assert edit.kind == "edit"
    assert [loc.path for loc in edit.locations or []] == [str(tmp_path / "greet.py")]
    (diff,) = diffs_of(client.last("e1"))
    assert diff.path == str(tmp_path / "greet.py")
    assert diff.old_text == "def greet():\n    return 'helo'\n\nprint(greet())\n"
    assert diff.new_text == "def greet():\n    return 'hello'\n\nprint(greet())\n"
    assert client.statuses("e1") == ["pending", "in_progress", "completed"]


async def test_fetch_content_is_of_kind_fetch(tmp_path: Path) -> None:
    (tmp_path / "fetch.yaml").write_text("fetchContentTool: true\n")
    client = Recorder()
    with WebServer() as web, ScriptedServer() as server:
        web.page("/", "<html><body><h1>Hi there</h1><p>A page.</p></body></html>")
        server.script(
            Reply(tool_calls=[call("fetch_content", {"url": web.url("/")}, id="f1")]),
            Reply("read it"),
        )
        async with mm_acp(tmp_path, server, client, "--config", "fetch.yaml") as (conn, _):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "read the page") == "end_turn"
    fetch = client.start("fetch_content")
    assert fetch.kind == "fetch" and fetch.title == f"fetch_content  {web.url('/')}"
    assert client.statuses("f1") == ["pending", "in_progress", "completed"]
    assert "Hi there" in output_of(client.last("f1"))


async def test_an_engine_error_reaches_the_editor_as_text(tmp_path: Path) -> None:
    (tmp_path / "short.yaml").write_text("maxTurns: 1\n")
    client = Recorder()
    with ScriptedServer(
        Reply("Looking.", tool_calls=[call("bash", {"command": "true"}, id="c1")])
    ) as server:
        async with mm_acp(tmp_path, server, client, "--config", "short.yaml") as (conn, log):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "go") == "max_turn_requests"
    assert client.text().startswith("Looking.\n\n[error: the turn reached maxTurns (1 model")
    assert "maxTurns" in log.read_text()


# --------------------------------------------------------------------------- permissions


def bash_turn(command: str, id_: str) -> list[Reply]:
    return [Reply(tool_calls=[call("bash", {"command": command}, id=id_)]), Reply("ok")]


async def test_permission_allow_once_and_reject(tmp_path: Path) -> None:
    client = Recorder(["a", "r", "a", "cancelled"])
    with ScriptedServer(
        *bash_turn("echo first", "c1"),
        *bash_turn("echo second", "c2"),
        *bash_turn("echo third", "c3"),
        *bash_turn("echo fourth", "c4"),
    ) as server:
        async with mm_acp(tmp_path, server, client, "--no-yolo") as (conn, _):
            session_id = await start(conn, tmp_path)
            for n in range(4):
                assert await ask(conn, session_id, f"turn {n}") == "end_turn"
        requests = server.requests
    assert len(client.permissions) == 4  # allow once and reject are not remembered
    tool_call, options = client.permissions[0]
    assert [(o.option_id, o.kind) for o in options] == [
        ("a", "allow_once"),
        ("s", "allow_always"),
        ("p", "allow_always"),  # the rule offered for calls like it
        ("r", "reject_once"),
        ("n", "reject_always"),
    ]
    assert options[2].name == 'Always allow "echo *" in this project'
    assert tool_call.tool_call_id == "c1" and tool_call.title == "bash  echo first"
    # allowed: runs once the answer came
    assert client.statuses("c1") == ["pending", "in_progress", "completed"]
    assert "first" in tool_messages(requests[1])[-1]
    # rejected: the model hears the text docs/tools.md quotes, the editor sees a failed call
    assert tool_messages(requests[3])[-1] == "[command rejected by the user]"
    assert client.statuses("c2") == ["pending", "failed"]
    assert client.last("c2").field_meta["mm"]["status"] == "rejected"
    assert output_of(client.last("c2")) == "[command rejected by the user]"
    assert client.statuses("c3") == ["pending", "in_progress", "completed"]
    # a request the client cancelled counts as a refusal
    assert tool_messages(requests[7])[-1] == "[command rejected by the user]"
    assert client.statuses("c4") == ["pending", "failed"]


async def test_the_rule_option_keeps_a_rule_for_calls_like_it(tmp_path: Path) -> None:
    client = Recorder(["p"])
    with ScriptedServer(*bash_turn("echo first", "c1"), *bash_turn("echo again", "c2")) as server:
        async with mm_acp(tmp_path, server, client, "--no-yolo") as (conn, _):
            session_id = await start(conn, tmp_path)
            for n in range(2):
                assert await ask(conn, session_id, f"turn {n}") == "end_turn"
    assert len(client.permissions) == 1  # the rule answered the second call
    assert client.statuses("c2") == ["pending", "in_progress", "completed"]
    config = (tmp_path / ".mm" / "config.yaml").read_text()
    assert config == 'permissions:\n  bash:\n    "echo *": allow\n'


async def test_permission_always_and_never_are_remembered(tmp_path: Path) -> None:
    client = Recorder(["s", "n"])
    write = {"path": "out.txt", "content": "data\n"}
    with ScriptedServer(
        *bash_turn("echo one", "c1"),
        *bash_turn("echo two", "c2"),
        Reply(tool_calls=[call("write_file", write, id="w1")]),
        Reply("ok"),
        Reply(tool_calls=[call("write_file", write, id="w2")]),
        Reply("ok"),
    ) as server:
        async with mm_acp(tmp_path, server, client, "--no-yolo") as (conn, _):
            session_id = await start(conn, tmp_path)
            for n in range(4):
                assert await ask(conn, session_id, f"turn {n}") == "end_turn"
        requests = server.requests
    # one question per tool: bash allowed for the session, write_file never
    assert [tc.tool_call_id for tc, _ in client.permissions] == ["c1", "w1"]
    assert client.statuses("c2") == ["pending", "in_progress", "completed"]
    assert "two" in tool_messages(requests[3])[-1]
    assert tool_messages(requests[5])[-1] == "[write_file rejected by the user]"
    assert tool_messages(requests[7])[-1] == "[write_file rejected by the user]"
    assert client.statuses("w2") == ["pending", "failed"]
    assert not (tmp_path / "out.txt").exists()
    # the question about a write shows the change as a new-file diff
    write_call, _ = client.permissions[1]
    (diff,) = diffs_of(write_call)
    assert (diff.path, diff.old_text, diff.new_text) == (str(tmp_path / "out.txt"), None, "data\n")


# --------------------------------------------------------------------------- cancel


def running(marker: str) -> bool:
    """Whether a process whose command line holds `marker` is alive."""
    return bool(processes_mentioning(marker))


async def test_cancel_stops_a_long_command(tmp_path: Path) -> None:
    client = Recorder()
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": "sleep 3141.59"}, id="c1")]), Reply("after")
    ) as server:
        async with mm_acp(tmp_path, server, client) as (conn, _):
            session_id = await start(conn, tmp_path)
            prompt = asyncio.create_task(ask(conn, session_id, "wait"))
            await until(lambda: "in_progress" in client.statuses("c1"), "in progress", 20)
            await until(lambda: running("3141.59"), "the command", 20)
            await conn.cancel(session_id=session_id)
            # an hour's command: a cancel that did not stop it would never let the prompt end
            assert await prompt == "cancelled"
            assert client.statuses("c1") == ["pending", "in_progress", "failed"]
            assert client.last("c1").field_meta["mm"]["status"] == "cancelled"
            await until(lambda: not running("3141.59"), "the command's end", 5)
            assert await ask(conn, session_id, "and now?") == "end_turn"
        later = server.requests[-1]
    assert tool_messages(later)[-1].endswith("[error: cancelled]")
    assert client.text() == "after"


async def test_cancel_while_a_permission_is_pending(tmp_path: Path) -> None:
    client = Recorder(hold=True)  # an editor that never answers the question
    with ScriptedServer(*bash_turn("echo never", "c1")) as server:
        async with mm_acp(tmp_path, server, client, "--no-yolo") as (conn, _):
            session_id = await start(conn, tmp_path)
            prompt = asyncio.create_task(ask(conn, session_id, "go"))
            await until(lambda: client.permissions, "the question", 20)
            await conn.cancel(session_id=session_id)
            assert await asyncio.wait_for(prompt, timeout=10) == "cancelled"
            assert client.statuses("c1") == ["pending", "failed"]
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- load, mcp


async def test_load_replays_the_session(tmp_path: Path) -> None:
    first = Recorder()
    with ScriptedServer(
        *[Reply(tool_calls=[call("bash", {"command": "echo replayed"}, id="c1")])],
        Reply("It printed replayed."),
        Reply("Second answer."),
    ) as server:
        async with mm_acp(tmp_path, server, first) as (conn, _):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "print something") == "end_turn"
        again = Recorder()
        async with mm_acp(tmp_path, server, again) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            listed = await conn.list_sessions(cwd=str(tmp_path))
            loaded = await conn.load_session(
                cwd=str(tmp_path), session_id=session_id, mcp_servers=[]
            )
            await caught_up(again)  # the replay, sent before the answer
            replayed = list(again.updates)
            assert await ask(conn, session_id, "and again") == "end_turn"
            with pytest.raises(acp.RequestError):
                await conn.load_session(cwd=str(tmp_path), session_id="nope-1", mcp_servers=[])
        last = server.requests[-1]
    assert [s.session_id for s in listed.sessions] == [session_id]
    assert loaded.field_meta["mm"]["model"] == MODEL
    kinds = [type(u).__name__ for u in replayed]
    assert kinds == ["UserMessageChunk", "ToolCallStart", "AgentMessageChunk"]
    user, tool, answer = replayed
    assert isinstance(user, UserMessageChunk) and user.content.text == "print something"
    assert (tool.tool_call_id, tool.kind, tool.status) == ("c1", "execute", "completed")
    assert tool.title == "bash  echo replayed"
    assert "replayed" in output_of(tool)
    assert answer.content.text == "It printed replayed."
    # the model gets the whole history back
    contents = [m.get("content") for m in last.messages]
    assert "print something" in contents and "It printed replayed." in contents
    assert contents[-1] == "and again"


async def test_load_replays_each_call_with_the_status_it_really_had(tmp_path: Path) -> None:
    """The replay takes each call's status from its result record: an ok output that reads like
    an error stays completed, a refusal and an error fail, and a call that a kill left without a
    result comes as failed, cancelled. Messages a compaction replaced are replayed too."""
    first = Recorder(["a", "r"])
    with ScriptedServer(
        Reply(
            tool_calls=[
                call("bash", {"command": "echo '[error: only words]'"}, id="c1"),
                call("read_file", {"path": "missing.txt"}, id="c2"),
                call("bash", {"command": "echo refused"}, id="c3"),
            ]
        ),
        Reply("Three calls."),
        Reply("The summary of it all."),  # /compact's
    ) as server:
        async with mm_acp(tmp_path, server, first, "--no-yolo") as (conn, _):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "three calls") == "end_turn"
        assert [first.last(c).field_meta["mm"]["status"] for c in ("c1", "c2", "c3")] == [
            "ok",
            "error",
            "rejected",
        ]
        # mm compacted the history, then was killed after the model asked for a call.
        folder = sessions_of(tmp_path, tmp_path / "home")
        flush_all()
        session = Session.load(folder, session_id)
        session.compact("The summary of it all.", [{"role": "system", "content": "summary"}])
        session.add_message({"role": "user", "content": "one more"})
        session.add_message(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c4",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "sleep 99"}'},
                    }
                ],
            }
        )
        session.save()
        session.close().result(10)  # type: ignore[union-attr]
        again = Recorder()
        async with mm_acp(tmp_path, server, again) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
            await caught_up(again)
    starts = again.starts()
    assert [u.tool_call_id for u in starts] == ["c1", "c2", "c3", "c4"]
    assert [u.status for u in starts] == ["completed", "failed", "failed", "failed"]
    assert [u.field_meta["mm"]["status"] for u in starts] == [
        "ok",
        "error",
        "rejected",
        "cancelled",
    ]
    assert "[error: only words]" in output_of(starts[0])
    assert output_of(starts[3]) == INTERRUPTED
    assert starts[3].title == "bash  sleep 99"
    users = [u.content.text for u in again.updates if isinstance(u, UserMessageChunk)]
    assert users == ["three calls", "one more"]  # the compacted question is replayed too
    assert again.text() == "Three calls."


async def test_load_replays_the_table_of_every_record_kind(tmp_path: Path) -> None:
    """The shared table of journal records (tests/support/journal_records.py), written as a
    session's journal and loaded: the editor gets what the conversation reader says, as the
    window draws it."""
    folder = sessions_of(tmp_path, tmp_path / "home")
    folder.mkdir(parents=True, exist_ok=True)
    records = [{**RECORDS[0], "cwd": str(tmp_path)}, *RECORDS[1:]]
    journal = folder / f"{RECORDS[0]['id']}.jsonl"
    journal.write_text("".join(json.dumps(record) + "\n" for record in records))
    client = Recorder()
    with ScriptedServer() as server:
        async with mm_acp(tmp_path, server, client) as (conn, _):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(tmp_path), session_id="table", mcp_servers=[])
            await caught_up(client)
    users = [u.content.text for u in client.updates if isinstance(u, UserMessageChunk)]
    assert users == ["fix it", "thanks"]
    assert client.thoughts() == "list first"
    assert client.text() == "Looking.You're welcome."
    starts = client.starts()
    assert [(u.field_meta["mm"]["tool"], u.field_meta["mm"]["status"]) for u in starts] == [
        ("bash", "ok"),
        ("bash", "error"),
        ("edit_file", "ok"),
        ("ask_agent", "ok"),
        ("bash", "ok"),
        ("bash", "cancelled"),
    ]
    assert len({u.tool_call_id for u in starts}) == 6  # the repeated id made two calls
    assert [u.status for u in starts] == ["completed", "failed", *["completed"] * 3, "failed"]
    assert starts[0].title == "bash  ls"
    assert output_of(starts[3]) == "helper answered (16 characters)"
    assert output_of(starts[5]) == INTERRUPTED


async def test_the_context_goes_to_the_editor_as_usage_updates(tmp_path: Path) -> None:
    """The window the server reports is learned once; every ContextUsage becomes a
    usage_update; shortening an output sends no text (the log says it) and the answer is only
    the model's."""
    client = Recorder()
    script = [
        Reply(tool_calls=[call("bash", {"command": "seq 1 8000"}, id="c1")]),
        Reply("done"),
        Reply("again"),
    ]
    with ScriptedServer(
        *script, serves="llama.cpp", context_window=2048, report_usage=True
    ) as server:
        async with mm_acp(tmp_path, server, client) as (conn, log):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "count") == "end_turn"
            other = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert await ask(conn, other, "hello") == "end_turn"
            text = log.read_text()
        lookups = [(r.method, r.path) for r in server.lookups]
    usages = [u for u in client.updates if isinstance(u, UsageUpdate)]
    assert len(usages) >= 3
    assert all(u.size == 2048 and 0 < u.used <= 2048 for u in usages)
    fixed = [(u.field_meta or {}).get("mm", {}).get("fixed", 0) for u in usages]
    assert all(0 < f <= 800 for f in fixed)  # the fixed prompt's part, within its budget
    assert client.text() == "doneagain"
    assert client.thoughts() == ""
    assert "bash's output of " in text and "the session journal keeps it whole" in text
    assert "context window: 2,048 tokens (llama.cpp /props)" in text
    assert lookups.count(("GET", "/props")) == 1  # once for the process, not per session


@pytest.mark.slow
async def test_mcp_servers_of_session_new_and_load_are_used(tmp_path: Path) -> None:
    """An editor's MCP servers (ACP's stdio entries) are honoured as mcpServers are: the
    prompt waits for them, their tools are declared as `<server>__<tool>`, a call shows as
    `<server>: <tool>`; one that cannot start costs a line in the log. session/load starts the
    servers it names for the session reopened (those of the session it replaces stop); all are
    stopped when the editor goes."""
    import sys

    from acp.schema import EnvVariable

    pidfile = tmp_path / "pids"
    server_script = str(MCP_SERVER)
    files = McpServerStdio(
        name="My files",
        command=sys.executable,
        args=[server_script],
        env=[
            EnvVariable(name="MCP_TEST_PIDFILE", value=str(pidfile)),
            EnvVariable(name="MCP_TEST_LINGER", value="1"),  # mm must stop it, not its EOF
        ],
    )
    broken = McpServerStdio(name="broken", command="/bin/false", args=[], env=[])
    client = Recorder()
    with ScriptedServer(
        Reply(tool_calls=[call("My_files__echo", {"text": "from the editor"})]),
        Reply("fine"),
        Reply(tool_calls=[call("My_files__add", {"a": 1, "b": 2})]),
        Reply(" again"),
    ) as server:
        async with mm_acp(tmp_path, server, client) as (conn, log):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[files, broken])
            assert await ask(conn, session.session_id, "hi") == "end_turn"
            with pytest.raises(acp.RequestError):
                await conn.new_session(cwd="relative/folder", mcp_servers=[])
            (pid,) = [int(line) for line in pidfile.read_text().split()]
            assert alive(pid)
            await conn.load_session(
                cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[files]
            )
            assert await ask(conn, session.session_id, "add") == "end_turn"
            first, second = [int(line) for line in pidfile.read_text().split()]
            assert first == pid and alive(second)
            assert wait_until(lambda: not alive(first), 5), "the replaced session's server"
        text = log.read_text()
        requests = server.requests
    caps = init.agent_capabilities
    assert caps is not None and caps.mcp_capabilities is not None
    assert (caps.mcp_capabilities.http, caps.mcp_capabilities.sse) == (True, False)
    names = requests[0].tool_names
    assert names[:4] == ["bash", "read_file", "write_file", "edit_file"]
    assert "My_files__echo" in names and not any(n.startswith("broken__") for n in names)
    started = client.start("My_files__echo")
    assert started.title == "My_files: echo  from the editor"
    statuses = client.statuses(started.tool_call_id)
    assert statuses == ["pending", "in_progress", "completed", "completed"]  # then replayed
    assert output_of(client.last(started.tool_call_id)) == "from the editor"
    replayed = [u for u in client.starts() if u.tool_call_id == started.tool_call_id][-1]
    assert replayed.title == "My_files: echo  from the editor"
    assert tool_messages(requests[1]) == ["from the editor"]
    assert "[warning: MCP server broken did not start" in text
    assert tool_messages(requests[3]) == ["from the editor", "3"]
    assert client.text() == "fine" + "fine" + " again"  # the answer, replayed, the next
    assert wait_until(lambda: not alive(second), 5), "the editor's MCP server outlived mm"


@pytest.mark.slow
async def test_configured_mcp_servers_are_shared_by_the_sessions(tmp_path: Path) -> None:
    import sys

    pidfile = tmp_path / "pids"
    server_script = str(MCP_SERVER)
    entry = {"command": sys.executable, "args": [server_script]}
    entry["env"] = {"MCP_TEST_PIDFILE": str(pidfile), "MCP_TEST_LINGER": "1"}
    configure_mcp(tmp_path, {"t": entry})
    client = Recorder()
    with ScriptedServer(
        Reply(tool_calls=[call("t__add", {"a": 1, "b": 2})]),
        Reply("one"),
        Reply(tool_calls=[call("t__add", {"a": 3, "b": 4})]),
        Reply("two"),
    ) as server:
        async with mm_acp(tmp_path, server, client) as (conn, _):
            first = await start(conn, tmp_path)
            assert await ask(conn, first, "add") == "end_turn"
            second = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert await ask(conn, second, "add") == "end_turn"
            running = [int(line) for line in pidfile.read_text().split()]
        requests = server.requests
    assert len(running) == 1  # one server for the process, not one per session
    assert tool_messages(requests[1]) == ["3"] and tool_messages(requests[3]) == ["7"]
    assert wait_until(lambda: not alive(running[0]), 5), "the MCP server outlived mm"


def configure_mcp(project: Path, servers: dict[str, Any]) -> None:
    """The project's mcpServers, trusted by mm_acp's home."""
    (project / ".mm").mkdir()
    (project / ".mm" / "config.yaml").write_text(json.dumps({"mcpServers": servers}))
    trust_project_file(project, project / "home")


async def one_prompt(
    project: Path, client: Recorder, replies: list[Reply], servers: list[Any]
) -> tuple[list[Any], str]:
    """One prompt in a session/new with the editor's MCP `servers`: the model's requests and
    mm's log."""
    with ScriptedServer(*replies) as server:
        async with mm_acp(project, server, client) as (conn, log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            try:
                session = await conn.new_session(cwd=str(project), mcp_servers=servers)
            except acp.RequestError as exc:  # what mm logged says why
                raise AssertionError(f"session/new: {exc}\nmm's log:\n{log.read_text()}") from exc
            assert await ask(conn, session.session_id, "go") == "end_turn"
            text = log.read_text()
        return server.requests, text


@pytest.mark.slow
async def test_an_editor_server_named_as_a_configured_one_is_offered_apart(
    tmp_path: Path,
) -> None:
    """The editor's `t` beside the configured `t`: both servers' tools are offered, the
    editor's as `t_2__<tool>`, and the log says so; the configured entry's unset `${VAR}` is
    said in the log too, as the other front ends say it at start."""
    import sys

    from acp.schema import EnvVariable

    server_script = str(MCP_SERVER)
    entry = {
        "command": sys.executable,
        "args": [server_script],
        "env": {"WHO": "configured", "TOKEN": "${MM_TEST_SURELY_UNSET}"},
    }
    configure_mcp(tmp_path, {"t": entry})
    editors = McpServerStdio(
        name="t",
        command=sys.executable,
        args=[server_script],
        env=[EnvVariable(name="WHO", value="editor")],
    )
    replies = [
        Reply(tool_calls=[call("t__env", {"name": "WHO"}), call("t_2__env", {"name": "WHO"})]),
        Reply("both"),
    ]
    requests, text = await one_prompt(tmp_path, Recorder(), replies, [editors])
    names = requests[0].tool_names
    assert "t__env" in names and "t_2__env" in names
    assert tool_messages(requests[1]) == ["configured", "editor"]
    assert "MCP server t of the session is named t_2: the configuration has a server t" in text
    assert (
        "MCP server t: ${MM_TEST_SURELY_UNSET} is not set in mm's environment — it expands to "
        "nothing" in text
    )


@pytest.mark.slow
@pytest.mark.parametrize("late", ["configured", "editor"])
async def test_a_name_both_pools_make_stays_the_configured_servers(
    tmp_path: Path, late: str
) -> None:
    """The configured `t`'s tool `echo__loud` and the editor's `t__echo`'s tool `loud` are both
    `t__echo__loud`: the configured one keeps it whichever server is ready first (it is shared
    by the other sessions), the editor's is offered as `t__echo__loud_2`, and the log says so."""
    import sys

    from acp.schema import EnvVariable

    server_script = str(MCP_SERVER)
    delay = {"MCP_TEST_START_DELAY": "1"}
    entry = {
        "command": sys.executable,
        "args": [server_script],
        "env": {"MCP_TEST_ALIAS": "echo__loud", **(delay if late == "configured" else {})},
    }
    configure_mcp(tmp_path, {"t": entry})
    env = {"MCP_TEST_ALIAS": "loud", **(delay if late == "editor" else {})}
    editors = McpServerStdio(
        name="t__echo",
        command=sys.executable,
        args=[server_script],
        env=[EnvVariable(name=k, value=v) for k, v in env.items()],
    )
    client = Recorder()
    loud = [call("t__echo__loud", {"text": "one"}), call("t__echo__loud_2", {"text": "two"})]
    requests, text = await one_prompt(
        tmp_path, client, [Reply(tool_calls=loud), Reply("ok")], [editors]
    )
    names = requests[0].tool_names
    assert len(names) == len(set(names)) and {"t__echo__loud", "t__echo__loud_2"} <= set(names)
    assert tool_messages(requests[1]) == ["one", "two"]
    assert client.start("t__echo__loud").title == "t: echo__loud  one"
    assert client.start("t__echo__loud_2").title == "t__echo: loud  two"
    assert (
        "[warning: MCP server t__echo: its tool loud is offered as t__echo__loud_2 — "
        "t__echo__loud is the name of t's tool echo__loud]" in text
    )


async def test_a_call_written_as_text_says_so_in_its_meta(tmp_path: Path) -> None:
    """A call the model wrote in its text is a tool call for the editor like any other; its
    `_meta["mm"]` says it was read from the answer's text, and the text is not a message."""
    (tmp_path / "notes.txt").write_text("the notes\n")
    client = Recorder()
    reply = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'
    with ScriptedServer(Reply(reply), Reply("done")) as server:
        async with mm_acp(tmp_path, server, client) as (conn, _):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "read") == "end_turn"
        second = server.requests[1]
    assert "the notes" in tool_messages(second)[0]
    [started] = client.starts()
    assert started.field_meta == {"mm": {"tool": "read_file", "from_text": True}}
    assert started.title == "read_file  notes.txt"
    assert client.text() == "done"
