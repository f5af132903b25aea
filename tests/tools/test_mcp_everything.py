"""mm's MCP client against the reference server the protocol's authors publish for clients to
test with (@modelcontextprotocol/server-everything, pinned in tests/mcp_everything): what only a
real, complete server shows (an embedded resource, progress, roots, a tool that runs only as a
task). The model is the scripted OpenAI-compatible server; mm is put together by the real
start-up. Needs Node.js and the server installed (`npm ci --prefix tests/mcp_everything`, which
`make test` runs when npm is there); skipped with the reason otherwise."""

from __future__ import annotations

from pathlib import Path

from support.engine import of, turn
from support.mcp_helpers import declared, everything, finished, mm_with, warnings_of
from support.scripted_server import Reply, ScriptedServer, call

from mm_tui.core.events import ToolProgress
from mm_tui.window.transcript.store import Transcript

TASK_ONLY = (
    "[warning: MCP server e: its tool simulate-research-query is not offered — it runs only as "
    "a task, which mm does not support]"
)


async def test_an_embedded_text_resource_reaches_the_model_whole(tmp_path: Path) -> None:
    """A server may return a file's contents as an embedded resource (GitHub's does): the
    model gets its text under a line with its uri; a blob stays a line that says what it is."""
    text = call("e__get-resource-reference", {"resourceType": "Text", "resourceId": 1}, id="c1")
    blob = call("e__get-resource-reference", {"resourceType": "Blob", "resourceId": 1}, id="c2")
    with ScriptedServer(Reply(tool_calls=[text, blob]), Reply("done")) as server:
        async with mm_with(tmp_path, server, {"e": everything()}) as (engine, said):
            events = await turn(engine, "read it")
        requests = server.requests
    assert warnings_of(said) == [TASK_ONLY]  # (see below)
    first, second = (f.output.split("\n") for f in finished(events))
    assert first[0] == "Returning resource reference for Resource 1:"
    assert first[1] == "[resource: demo://resource/dynamic/text/1 (text/plain)]"
    assert first[2].startswith("Resource 1: This is a plaintext resource created at ")
    assert first[3] == "You can access this resource using the URI: demo://resource/dynamic/text/1"
    assert second[1].startswith("[resource: demo://resource/dynamic/blob/1 (text/plain, ")
    assert second[1].endswith(" bytes)]")
    assert requests[1].messages[-2]["content"] == "\n".join(first)


async def test_a_tool_that_runs_only_as_a_task_is_not_offered(tmp_path: Path) -> None:
    """`execution.taskSupport: required`: a plain call of it always fails, so it is left out,
    with a warning that says why; the server's other tools are offered."""
    with ScriptedServer() as server:
        async with mm_with(tmp_path, server, {"e": everything()}) as (engine, said):
            names = declared(engine)
    assert "e__echo" in names and "e__trigger-long-running-operation" in names
    assert "e__simulate-research-query" not in names
    assert warnings_of(said) == [TASK_ONLY]


async def test_a_long_call_reports_its_progress(tmp_path: Path) -> None:
    """The call carries a progress token; the server's progress notifications become
    `ToolProgress` events of the call, which the window's status line shows."""
    long = call("e__trigger-long-running-operation", {"duration": 1.5, "steps": 3}, id="c1")
    with ScriptedServer(Reply(tool_calls=[long]), Reply("done")) as server:
        async with mm_with(tmp_path, server, {"e": everything()}) as (engine, _):
            events = await turn(engine, "go")
    progress = of(events, ToolProgress)
    assert [(p.call_id, p.tool, p.text) for p in progress] == [
        ("c1", "e__trigger-long-running-operation", "1/3"),
        ("c1", "e__trigger-long-running-operation", "2/3"),
        ("c1", "e__trigger-long-running-operation", "3/3"),
    ]
    assert finished(events)[0].output.startswith("Long running operation completed.")
    transcript = Transcript()
    states = []
    for event in events:
        transcript.apply(event)
        if isinstance(event, ToolProgress):
            states.append(transcript.state)
    assert states == ["Running 1/3", "Running 2/3", "Running 3/3"]
    assert transcript.state is None  # the turn ended


async def test_the_project_folder_is_offered_as_the_root(tmp_path: Path) -> None:
    """mm declares roots and answers roots/list with the project folder: the server registers
    its get-roots-list tool only for a client that declares roots."""
    roots = call("e__get-roots-list", {}, id="c1")
    with ScriptedServer(Reply(tool_calls=[roots]), Reply("done")) as server:
        async with mm_with(tmp_path, server, {"e": everything()}) as (engine, _):
            names = declared(engine)
            events = await turn(engine, "roots?")
    assert "e__get-roots-list" in names
    (output,) = [f.output for f in finished(events)]
    assert output.startswith("Current MCP Roots (1 total):")
    assert f"1. {tmp_path.name}\n   URI: {tmp_path.resolve().as_uri()}\n" in output
