"""MCP servers' tools (mm_tui/tools/mcp/), against a real MCP server: tests/support/mcp_server.py,
made with the SDK's FastMCP, run on stdio as a child process and over streamable HTTP on 127.0.0.1.
The model is the scripted OpenAI-compatible server; mm is put together by the real start-up
(`startup.start`), so what is tested is what `mm` runs: the configuration, the pool started in
the background, the tools declared, the permission box, the guards, the counters.

Each server process writes its pid to a file (MCP_TEST_PIDFILE), for the tests that check it
is gone when it should be.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from support.engine import of, turn
from support.env import clean_env
from support.mcp_helpers import (
    MODEL,
    SERVER,
    declared,
    finished,
    mm_with,
    pids,
    stdio,
    warnings_of,
)
from support.processes import alive
from support.program import mm
from support.scripted_server import Reply, ScriptedServer, call, closed_port_url
from support.trusting import trust_project_file
from support.waiting import await_until, wait_until

from mm_tui.config import ConfigError, McpServer, Settings, load_settings
from mm_tui.core.events import (
    Decision,
    Event,
    PermissionRequested,
    ToolCallStarted,
    ToolProgress,
    TurnEnded,
)
from mm_tui.engine.guards import LOOP_WARNING
from mm_tui.startup import start
from mm_tui.tools.mcp import McpTool, tool_name
from mm_tui.tools.mcp.link import Outcome, result_outcome
from mm_tui.tools.mcp.tool import short_args, unique_name

TOOLS = ["add", "crash", "echo", "env", "fail", "grow", "picture", "sleep", "untyped"]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The test server over streamable HTTP on a free port of 127.0.0.1: its URL and pidfile."""
    url = closed_port_url("/mcp")
    port = url.rsplit(":", 1)[1].split("/")[0]
    pidfile = tmp_path / "http.pids"
    log = (tmp_path / "http-server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", port],
        env=clean_env(
            tmp_path, MCP_TEST_PIDFILE=str(pidfile), MCP_TEST_STREAMS=str(tmp_path / "streams")
        ),
        stdout=log,
        stderr=log,
    )

    def listening() -> bool:
        import socket

        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", int(port))) == 0

    try:
        assert wait_until(listening, 30), "the MCP server never listened"
        yield url, pidfile
    finally:
        process.kill()
        process.wait()
        log.close()


# --------------------------------------------------------------------------- configuration


def config_error(tmp_path: Path, text: str) -> str:
    (tmp_path / ".mm").mkdir(exist_ok=True)
    (tmp_path / ".mm" / "config.yaml").write_text(text)
    trust_project_file(tmp_path, tmp_path / "home")
    with pytest.raises(ConfigError) as caught:
        load_settings(cwd=tmp_path, home=tmp_path / "home", environ={})
    return str(caught.value)


def test_mcp_servers_take_the_shape_every_client_uses(tmp_path: Path) -> None:
    (tmp_path / ".mm").mkdir()
    (tmp_path / ".mm" / "config.yaml").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "npx", "args": ["-y", "x"], "env": {"A": "b"}},
                    "web": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
                    "typed": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
                    "slow": {"type": "stdio", "command": "srv", "startupTimeout": 90},
                }
            }
        )
    )
    trust_project_file(tmp_path, tmp_path / "home")
    settings = load_settings(cwd=tmp_path, home=tmp_path / "home", environ={})
    servers = settings.mcp_servers
    assert servers["files"].transport == "stdio" and servers["files"].env == {"A": "b"}
    assert servers["web"].transport == "http" and servers["web"].headers == {"X-Key": "k"}
    assert servers["typed"].transport == "http"
    assert (servers["slow"].startup_timeout, servers["slow"].timeout) == (90, 60)
    assert (servers["files"].startup_timeout, servers["files"].timeout) == (10, 60)


def test_variables_in_an_entry_are_expanded_from_the_environment() -> None:
    entry = McpServer.model_validate(
        {
            "command": "${TOOLS}/server",
            "args": ["--token=${TOKEN}", "${MODE:-fast}", "${EMPTY:-}", "$TOKEN", "${TOKEN"],
            "env": {"KEY": "${TOKEN}", "GONE": "${NOT_SET}", "TWICE": "${NOT_SET}${EMPTY}"},
            "cwd": "${TOOLS}",
        }
    )
    environ = {"TOOLS": "/opt/t", "TOKEN": "s3cret", "EMPTY": ""}
    made, unset = entry.expanded(environ)
    assert made.command == "/opt/t/server"
    assert made.args == ["--token=s3cret", "fast", "", "$TOKEN", "${TOKEN"]
    assert made.env == {"KEY": "s3cret", "GONE": "", "TWICE": ""}
    assert made.cwd == "${TOOLS}"  # not among the keys other clients expand
    assert unset == ["NOT_SET"]  # once, and EMPTY is set (to nothing)
    assert entry.command == "${TOOLS}/server"  # the entry as written is kept
    web = McpServer.model_validate(
        {"url": "https://${HOST:-example.com}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    )
    made, unset = web.expanded(environ)
    assert (made.url, made.headers, unset) == (
        "https://example.com/mcp",
        {"Authorization": "Bearer s3cret"},
        [],
    )


async def test_a_stdio_server_gets_its_variables_and_a_note_says_which_are_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_process_left: None
) -> None:
    monkeypatch.setenv("MM_TEST_TOKEN", "tok-from-the-shell")
    monkeypatch.delenv("MM_TEST_NOT_SET", raising=False)
    entry = stdio(
        GIVEN="${MM_TEST_TOKEN}", OTHER="${MM_TEST_NOT_SET}", MODE="${MM_TEST_NOT_SET:-x}"
    )
    entry["args"] = ["${MM_TEST_SERVER}"]
    monkeypatch.setenv("MM_TEST_SERVER", str(SERVER))
    with ScriptedServer(
        Reply(
            tool_calls=[
                call("t__env", {"name": "GIVEN"}, id="c1"),
                call("t__env", {"name": "OTHER"}, id="c2"),
                call("t__env", {"name": "MODE"}, id="c3"),
            ]
        ),
        Reply("done"),
    ) as server:
        settings = Settings(
            baseUrl=server.base_url,
            model=MODEL,
            sessionsDir=str(tmp_path / "s"),
            mcpServers={"t": entry, "u": {"command": "${MM_TEST_NOT_SET}x"}},
        )
        started = await start(settings, tmp_path)
        try:
            await started.engine.registry.ready()
            events = await turn(started.engine, "go")
        finally:
            await started.engine.aclose()
    assert [f.output for f in finished(events)] == ["tok-from-the-shell", "", "x"]
    unset = [note for note in started.notes if "MM_TEST_NOT_SET" in note]
    assert unset == [
        "MCP servers t, u: ${MM_TEST_NOT_SET} is not set in mm's environment — it expands to "
        "nothing"
    ]


async def test_a_url_is_expanded(
    tmp_path: Path, http_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = http_server
    port = url.rsplit(":", 1)[1].split("/")[0]
    monkeypatch.setenv("MM_TEST_PORT", port)
    entry = {"url": "http://127.0.0.1:${MM_TEST_PORT}/mcp", "headers": {"X-Key": "${MM_TEST_PORT}"}}
    with ScriptedServer() as server:
        async with mm_with(tmp_path, server, {"web": entry}) as (engine, said):
            names = declared(engine)
    assert said == []
    assert "web__echo" in names


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("{files: {}}", "mcpServers.files: give command (a server on stdio) or url"),
        ('{files: {command: x, url: "http://a"}}', "mcpServers.files: give command or url, not"),
        ('{f: {type: sse, url: "http://a"}}', "mcpServers.f: type sse is not one mm speaks"),
        ("{f: {type: http, command: x}}", "mcpServers.f: type http needs url"),
        ('{f: {url: "ftp://a"}}', "mcpServers.f: url must start with http:// or https://"),
        ('{"my files": {command: x}}', 'mcpServers: server name "my files" may hold only'),
        ("{f: {comand: x}}", 'unknown key "mcpServers.f.comand" (did you mean "command"?)'),
        ("{f: {command: x, timeout: 0}}", "mcpServers.f.timeout: Input should be greater than 0"),
        ("{f: {command: x, env: {PORT: 80}}}", "mcpServers.f.env.PORT: Input should be a valid"),
    ],
)
def test_a_bad_entry_stops_start_up_with_one_line(tmp_path: Path, entry: str, reason: str) -> None:
    message = config_error(tmp_path, f"mcpServers: {entry}\n")
    assert message.startswith(f"mm: .mm/config.yaml: {reason}"), message
    assert "\n" not in message


# --------------------------------------------------------------------------- the tool's parts


def test_names_and_short_arguments() -> None:
    assert tool_name("files", "read") == "files__read"
    assert tool_name("files", "read.file v2") == "files__read_file_v2"  # what a model takes
    assert len(tool_name("s", "x" * 100)) == 64
    assert short_args({}) == ""
    assert short_args({"path": "notes.txt"}) == "notes.txt"
    assert short_args({"a": 1, "b": "two words"}) == "a=1 b=two words"
    assert short_args({"text": "line one\nline two"}) == "line one line two"
    assert len(short_args({"text": "x" * 500})) == 80
    taken = {"a__b", "a__b_2", "x" * 64}
    assert unique_name("a__c", taken.__contains__) == "a__c"
    assert unique_name("a__b", taken.__contains__) == "a__b_3"
    assert unique_name("x" * 64, taken.__contains__) == "x" * 62 + "_2"  # within the 64


async def test_two_tools_joined_to_one_name_are_both_offered(
    tmp_path: Path, no_process_left: None
) -> None:
    """Server `t`'s tool `echo__loud` and server `t__echo`'s tool `loud` are both
    `t__echo__loud`: the second one made gets a suffix, and a warning says so."""
    servers = {"t": stdio(MCP_TEST_ALIAS="echo__loud"), "t__echo": stdio(MCP_TEST_ALIAS="loud")}
    with ScriptedServer(
        Reply(
            tool_calls=[
                call("t__echo__loud", {"text": "one"}, id="c1"),
                call("t__echo__loud_2", {"text": "two"}, id="c2"),
            ]
        ),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, servers) as (engine, said):
            first, second = (
                engine.registry.get("t__echo__loud"),
                engine.registry.get("t__echo__loud_2"),
            )
            events = await turn(engine, "go")
        names = server.requests[0].tool_names
    assert isinstance(first, McpTool) and isinstance(second, McpTool)
    owners = {(first.server, first.tool), (second.server, second.tool)}
    assert owners == {("t", "echo__loud"), ("t__echo", "loud")}
    assert len(names) == len(set(names)) and {"t__echo__loud", "t__echo__loud_2"} <= set(names)
    assert warnings_of(said) == [
        f"[warning: MCP server {second.server}: its tool {second.tool} is offered as "
        f"t__echo__loud_2 — t__echo__loud is the name of {first.server}'s tool {first.tool}]"
    ]
    assert [f.output for f in finished(events)] == ["one", "two"]


def test_progress_reads_as_a_count_a_share_or_a_number() -> None:
    def text(progress: float, total: float | None, message: str = "") -> str:
        return ToolProgress(
            call_id="c", tool="t", progress=progress, total=total, message=message
        ).text

    assert text(2, 5) == "2/5"
    assert text(0.25, 1.0, "reading\nfiles") == "25% · reading files"
    assert text(7, None) == "7"
    assert text(3, 0) == "3"


def test_a_result_becomes_text() -> None:
    image = types.ImageContent(type="image", data="AAAA" * 25, mimeType="image/png")
    link = types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt")
    text = types.TextResourceContents(
        uri="file:///b.md", mimeType="text/markdown", text="# hi\n\nbody"
    )
    embedded = types.EmbeddedResource(type="resource", resource=text)
    blob = types.BlobResourceContents(uri="file:///c.bin", mimeType="image/x-raw", blob="AAAA")
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="first"),
            image,
            link,
            embedded,
            types.EmbeddedResource(type="resource", resource=blob),
        ]
    )
    outcome = result_outcome(result)
    assert outcome.text.split("\n") == [
        "first",
        "[image: image/png, 75 bytes]",
        "[resource link: file:///a.txt (a.txt)]",
        "[resource: file:///b.md (text/markdown)]",  # a text resource: its text follows
        "# hi",
        "",
        "body",
        "[resource: file:///c.bin (image/x-raw, 3 bytes)]",  # a blob: what it is
    ]
    assert not outcome.is_error
    failed = types.CallToolResult(content=[types.TextContent(type="text", text="no")], isError=True)
    assert result_outcome(failed, "s: t") == Outcome("[error: s: t failed]\nno", is_error=True)
    structured = types.CallToolResult(content=[], structuredContent={"n": 1})
    assert result_outcome(structured).text == '{"n": 1}'


def test_an_mcp_tool_declares_the_server_schema() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }
    tool = McpTool("web", "search", description="Search the web.", schema=schema, link=None)  # type: ignore[arg-type]
    declaration = tool.declaration()["function"]
    assert declaration["name"] == "web__search"
    assert declaration["description"] == "Search the web."
    assert declaration["parameters"] == {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }
    bare = McpTool("web", "ping", description=None, schema={}, link=None)  # type: ignore[arg-type]
    assert bare.parameters() == {"type": "object", "properties": {}}
    untyped = {"properties": {"q": {"type": "string"}}, "required": ["q"]}
    tool = McpTool("web", "find", description=None, schema=untyped, link=None)  # type: ignore[arg-type]
    assert tool.parameters() == {"type": "object", **untyped}  # its properties kept
    odd = McpTool("web", "odd", description=None, schema={"type": "string"}, link=None)  # type: ignore[arg-type]
    assert odd.parameters() == {"type": "object", "properties": {}}
    assert "ping" in bare.description() and "web" in bare.description()


# --------------------------------------------------------------------------- stdio


async def test_tools_are_declared_and_a_call_reaches_the_model(
    tmp_path: Path, no_process_left: None
) -> None:
    with ScriptedServer(
        Reply(tool_calls=[call("t__echo", {"text": "hello mcp"}, id="c1")]), Reply("done")
    ) as server:
        async with mm_with(tmp_path, server, {"t": stdio()}) as (engine, said):
            events = await turn(engine, "say hello")
        requests = server.requests
    assert said == []
    names = requests[0].tool_names
    assert sorted(n for n in names if n.startswith("t__")) == [f"t__{t}" for t in TOOLS]
    assert "bash" in names  # the built-in tools as before
    echo = next(t for t in requests[0].tools if t["function"]["name"] == "t__echo")
    assert echo["function"]["description"] == "Say the text back."
    assert echo["function"]["parameters"]["properties"]["text"]["type"] == "string"
    assert echo["function"]["parameters"]["required"] == ["text"]
    untyped = next(t for t in requests[0].tools if t["function"]["name"] == "t__untyped")
    assert untyped["function"]["parameters"]["type"] == "object"  # a schema that named none
    assert untyped["function"]["parameters"]["properties"]["query"]["type"] == "string"
    assert requests[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "hello mcp",
    }
    started = of(events, ToolCallStarted)[0]
    assert started.title == "t: echo  hello mcp"
    assert started.display == "🔌 t: echo  hello mcp"
    assert started.tool == "t__echo" and started.kind == "other"
    assert [(f.status, f.output) for f in finished(events)] == [("ok", "hello mcp")]
    ended = of(events, TurnEnded)[0]
    assert ended.counters.mcp_calls == 1
    assert "🔌 1 mcp call(s)" in ended.recap()


async def test_an_error_result_an_image_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_process_left: None
) -> None:
    monkeypatch.setenv("MM_API_KEY", "sk-secret-of-mm")
    monkeypatch.setenv("SOME_TOKEN", "tok-of-the-shell")
    with ScriptedServer(
        Reply(
            tool_calls=[
                call("t__fail", {"reason": "the disk is on fire"}, id="c1"),
                call("t__picture", {}, id="c2"),
                call("t__env", {"name": "MM_API_KEY"}, id="c3"),
                call("t__env", {"name": "GIVEN"}, id="c4"),
            ]
        ),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, {"t": stdio(GIVEN="from the config")}) as (
            engine,
            _,
        ):
            events = await turn(engine, "go")
    results = [(f.status, f.output) for f in finished(events)]
    assert results == [
        ("error", "[error: t: fail failed]\nError executing tool fail: the disk is on fire"),
        ("ok", "[image: image/png, 72 bytes]\na red dot"),
        ("ok", "(unset)"),  # a stdio server gets a plain environment, not mm's keys
        ("ok", "from the config"),
    ]


async def test_a_changed_list_of_tools_is_offered_from_the_next_request(
    tmp_path: Path, no_process_left: None
) -> None:
    """The server adds a tool during a call and says so (notifications/tools/list_changed):
    the request that follows the call offers it, and the model can call it."""
    with ScriptedServer(
        Reply(tool_calls=[call("t__grow", {}, id="c1")]),
        Reply(tool_calls=[call("t__grown", {"text": "new here"}, id="c2")]),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, {"t": stdio()}) as (engine, said):
            events = await turn(engine, "grow")
        requests = server.requests
    assert "t__grown" not in requests[0].tool_names
    assert "t__grown" in requests[1].tool_names and "t__echo" in requests[1].tool_names
    assert [f.output for f in finished(events)] == ["grown", "new here"]
    assert said == []


async def test_the_guards_and_truncation_apply(tmp_path: Path, no_process_left: None) -> None:
    same = call("t__echo", {"text": "again and again"})
    with ScriptedServer(
        Reply(tool_calls=[call("t__echo", {"text": "x" * 100}, id="long")]),
        Reply(tool_calls=[same]),
        Reply(tool_calls=[same]),
        Reply(tool_calls=[same]),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, {"t": stdio()}, maxOutput=30) as (engine, _):
            events = await turn(engine, "go")
    outputs = [f.output for f in finished(events)]
    assert outputs[0] == "x" * 30 + "\n[... output truncated: 70 more characters ...]"
    assert outputs[1] == outputs[2] == "again and again"
    assert outputs[3].endswith(LOOP_WARNING)  # the third time the same call gave the same


async def test_permission_is_asked_when_yolo_is_off(tmp_path: Path, no_process_left: None) -> None:
    with ScriptedServer(
        Reply(tool_calls=[call("t__echo", {"text": "hi"}, id="c1")]),
        Reply(tool_calls=[call("t__add", {"a": 2, "b": 3}, id="c2")]),
        Reply(tool_calls=[call("t__add", {"a": 4, "b": 5}, id="c3")]),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, {"t": stdio()}, yolo=False) as (engine, _):
            answers = [Decision.REJECT, Decision.ALLOW_SESSION]
            events = await turn(engine, "go", answer=lambda asked: answers.pop(0))
        requests = server.requests
    asked = of(events, PermissionRequested)
    assert [a.title for a in asked] == ["t: echo  hi", "t: add  a=2 b=3"]  # then remembered
    assert asked[1].details == 't: add\n{\n  "a": 2,\n  "b": 3\n}'
    results = [(f.status, f.output) for f in finished(events)]
    assert results == [("rejected", "[t__echo rejected by the user]"), ("ok", "5"), ("ok", "9")]
    assert requests[1].messages[-1]["content"] == "[t__echo rejected by the user]"


# --------------------------------------------------------------------------- streamable HTTP


async def test_a_server_over_streamable_http(tmp_path: Path, http_server: tuple[str, Path]) -> None:
    url, _ = http_server
    with ScriptedServer(
        Reply(tool_calls=[call("web__add", {"a": 20, "b": 22}, id="c1")]), Reply("done")
    ) as server:
        async with mm_with(tmp_path, server, {"web": {"url": url}}) as (engine, said):
            events = await turn(engine, "add")
        requests = server.requests
    assert said == []
    assert {f"web__{t}" for t in TOOLS} <= set(requests[0].tool_names)
    assert of(events, ToolCallStarted)[0].title == "web: add  a=20 b=22"
    assert requests[1].messages[-1]["content"] == "42"


async def test_an_http_server_that_goes_away_is_noticed_before_the_next_call(
    tmp_path: Path, http_server: tuple[str, Path]
) -> None:
    """Killed while idle: the stream it keeps open to mm breaks, nothing listens at its address
    any more, and its tools go at once, not at the next call."""
    url, pidfile = http_server
    with ScriptedServer(
        Reply(tool_calls=[call("web__echo", {"text": "anyone?"}, id="c1")]), Reply("done")
    ) as server:
        async with mm_with(tmp_path, server, {"web": {"url": url}}) as (engine, said):
            # the stream the server keeps open to mm, which its death breaks (the SDK opens it
            # after the handshake: on a loaded machine, later than mm is ready)
            streams = tmp_path / "streams"
            assert await await_until(streams.exists), "mm never opened the server's stream"
            for pid in pids(pidfile):
                subprocess.run(["kill", "-9", str(pid)], check=True)
            gone = await await_until(
                lambda: not any(n.startswith("web__") for n in declared(engine))
            )
            assert gone, "the server's tools outlived it"
            events = await turn(engine, "go")
    (output,) = [f.output for f in finished(events)]
    assert output == (
        f"[error: the MCP server web has stopped (lost the connection to {url}) — echo cannot "
        "run; its tools are gone for this session]"
    )
    assert warnings_of(said) == [
        f"[warning: MCP server web stopped (lost the connection to {url}) — its tools are gone "
        "for this session]"
    ]


async def test_an_http_server_that_dies_during_a_call(
    tmp_path: Path, http_server: tuple[str, Path]
) -> None:
    url, _pidfile = http_server
    with ScriptedServer(
        Reply(tool_calls=[call("web__crash", {}, id="c1")]), Reply("done")
    ) as server:
        async with mm_with(tmp_path, server, {"web": {"url": url}}) as (engine, said):
            events = await turn(engine, "go")
            tools_after = declared(engine)
    (output,) = [f.output for f in finished(events)]
    assert output == (
        f"[error: the MCP server web stopped during this call of crash (lost the connection to "
        f"{url}) — its tools are gone for this session]"
    )
    assert len(warnings_of(said)) == 1
    assert not any(name.startswith("web__") for name in tools_after)


# --------------------------------------------------------------------------- failures


async def test_a_server_that_cannot_start_costs_one_warning(
    tmp_path: Path, no_process_left: None
) -> None:
    servers = {
        "missing": {"command": str(tmp_path / "no-such-server")},
        "dies": stdio(MCP_TEST_EXIT="cannot read my configuration"),
        "nothere": {"url": closed_port_url("/mcp")},
        "t": stdio(),
    }
    with ScriptedServer(
        Reply(tool_calls=[call("missing__echo", {"text": "?"}, id="c1")]),
        Reply(tool_calls=[call("t__add", {"a": 1, "b": 1}, id="c2")]),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, servers) as (engine, said):
            events = await turn(engine, "go")
        requests = server.requests
    warnings = sorted(warnings_of(said))
    assert len(warnings) == 3, warnings
    assert warnings[0].startswith("[warning: MCP server dies did not start (it closed the ")
    assert "cannot read my configuration" in warnings[0]
    assert warnings[1] == (
        f"[warning: MCP server missing did not start (no such command: {tmp_path}/no-such-server)"
        " — its tools are not offered]"
    )
    assert warnings[2].startswith("[warning: MCP server nothere did not start (cannot connect")
    names = requests[0].tool_names
    assert "t__echo" in names
    assert not [n for n in names if n.startswith(("missing__", "dies__", "nothere__"))]
    assert finished(events)[0].output.startswith('[error: there is no tool named "missing__echo"')
    assert finished(events)[1].output == "2"  # the rest works
    assert of(events, TurnEnded)[0].stop_reason == "end_turn"


async def test_a_crash_mid_session_is_an_error_result_and_one_warning(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    with ScriptedServer(
        Reply(tool_calls=[call("t__crash", {}, id="c1")]),
        Reply(tool_calls=[call("t__echo", {"text": "still there?"}, id="c2")]),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, {"t": stdio(pidfile)}) as (engine, said):
            (pid,) = pids(pidfile)
            events = await turn(engine, "go")
            assert wait_until(lambda: not alive(pid), 5), "the crashed server is still there"
        requests = server.requests
    crashed, after = [f.output for f in finished(events)]
    assert crashed == (
        "[error: the MCP server t stopped during this call of crash (its connection closed: "
        "crashing on purpose) — its tools are gone for this session]"
    )
    assert after.startswith("[error: the MCP server t has stopped (its connection closed")
    assert after.endswith("echo cannot run; its tools are gone for this session]")
    assert warnings_of(said) == [
        "[warning: MCP server t stopped (its connection closed: crashing on purpose) — its "
        "tools are gone for this session]"
    ]
    assert "t__echo" in requests[0].tool_names
    assert not any(n.startswith("t__") for n in requests[1].tool_names)  # gone after the crash
    assert of(events, TurnEnded)[0].stop_reason == "end_turn"


async def test_a_call_that_hangs_times_out_and_stops_the_server(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    with ScriptedServer(
        Reply(tool_calls=[call("t__sleep", {"seconds": 60}, id="c1")]), Reply("done")
    ) as server:
        entry = {**stdio(pidfile), "timeout": 1}
        async with mm_with(tmp_path, server, {"t": entry}) as (engine, said):
            (pid,) = pids(pidfile)
            events = await turn(engine, "go")
            assert wait_until(lambda: not alive(pid), 10), "the hung server is still there"
            tools_after = declared(engine)
    assert [f.output for f in finished(events)] == [
        "[error: t: sleep got no answer within 1 s — the MCP server is stopped, and its tools "
        "are gone for this session]"
    ]
    # (without the timeout the call would end after its 60 s sleep, with the sleep's result)
    assert warnings_of(said) == [
        "[warning: MCP server t stopped (sleep got no answer within 1 s) — its tools are gone "
        "for this session]"
    ]
    assert not any(n.startswith("t__") for n in tools_after)


@pytest.mark.slow
async def test_a_server_that_hangs_at_start_times_out(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    entry = {**stdio(pidfile, MCP_TEST_START_DELAY="60"), "startupTimeout": 1}
    with ScriptedServer(Reply("fine")) as server:
        async with mm_with(tmp_path, server, {"slow": entry}) as (engine, said):
            events = await turn(engine, "hi")
        assert wait_until(lambda: pids(pidfile) and not alive(pids(pidfile)[0]), 10)
    # (without the timeout the server would have started, 60 s later, and said nothing)
    assert warnings_of(said) == [
        "[warning: MCP server slow did not start (no answer within 1 s) — its tools are not "
        "offered]"
    ]
    assert of(events, TurnEnded)[0].stop_reason == "end_turn"


async def test_a_cancelled_call_leaves_the_server_working(
    tmp_path: Path, no_process_left: None
) -> None:
    from mm_tui.core.events import ToolCallRunning

    record = tmp_path / "cancelled"
    with ScriptedServer(
        Reply(tool_calls=[call("t__sleep", {"seconds": 60}, id="c1")]),
        Reply(tool_calls=[call("t__echo", {"text": "still here"}, id="c2")]),
        Reply("done"),
    ) as server:
        async with mm_with(tmp_path, server, {"t": stdio(MCP_TEST_SLEEP_LOG=str(record))}) as (
            engine,
            said,
        ):
            events: list[Event] = []
            first = asyncio.ensure_future(engine.run_turn("sleep", events.append))
            running = await await_until(lambda: of(events, ToolCallRunning), 10)
            assert running, "the call never ran"
            slept = await await_until(lambda: record.exists(), 30)
            assert slept, "the server never started the call"
            engine.cancel()
            ended = await asyncio.wait_for(first, 5)
            # the server was told (notifications/cancelled) and stopped the work, while it runs
            told = await await_until(lambda: "cancelled" in record.read_text(), 30)
            assert told, "the server never heard the call was cancelled"
            second = await turn(engine, "echo")
    assert ended.stop_reason == "cancelled"
    assert [f.status for f in finished(events)] == ["cancelled"]
    assert [f.output for f in finished(second)] == ["still here"]
    assert said == []
    assert record.read_text() == "sleep started\nsleep cancelled\n"


async def test_a_server_that_hangs_at_start_holds_no_other_servers_tools(
    tmp_path: Path, no_process_left: None
) -> None:
    """The servers start at the same time: one that never answers its handshake does not
    keep the others' tools from the model while it hangs."""
    servers = {"slow": stdio(MCP_TEST_START_DELAY="600"), "fast": stdio()}
    with ScriptedServer() as server:
        settings = Settings(
            baseUrl=server.base_url,
            model=MODEL,
            sessionsDir=str(tmp_path / "s"),
            mcpServers=servers,
        )
        engine = (await start(settings, tmp_path)).engine
        try:
            offered = await await_until(lambda: "fast__echo" in declared(engine), 30)
            assert offered, "the fast server's tools never came"
            still = engine.registry.get("slow__echo") is None  # made once it is ready
        finally:
            await engine.aclose()
    assert still, "the slow server started after all"


async def test_servers_are_stopped_when_mm_closes(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    with ScriptedServer() as server:
        async with mm_with(tmp_path, server, {"a": stdio(pidfile), "b": stdio(pidfile)}) as (
            engine,
            _,
        ):
            running = pids(pidfile)
            assert len(running) == 2 and all(alive(pid) for pid in running)
    assert all(not alive(pid) for pid in running)  # gone once aclose returned


@pytest.mark.slow
async def test_a_request_before_the_servers_are_ready_has_the_tools_ready_so_far(
    tmp_path: Path, no_process_left: None
) -> None:
    """Start-up does not wait for a slow server: the first request goes with the built-in
    tools; once the server is ready, the next request has its tools. The server serves only
    once the test opens its gate, after the first turn: a start-up that waited for it would
    never end (the test's timeout)."""
    gate = tmp_path / "serve now"
    servers = {"late": stdio(MCP_TEST_START_GATE=str(gate))}
    with ScriptedServer(Reply("first"), Reply("second")) as server:
        settings = Settings(
            baseUrl=server.base_url,
            model=MODEL,
            sessionsDir=str(tmp_path / "s"),
            mcpServers=servers,
        )
        engine = (await start(settings, tmp_path)).engine
        try:
            await turn(engine, "one")
            gate.touch()
            await engine.registry.ready()
            await turn(engine, "two")
        finally:
            await engine.aclose()
        first, second = (r.tool_names for r in server.requests)
    assert not any(n.startswith("late__") for n in first) and "bash" in first
    assert "late__echo" in second


# --------------------------------------------------------------------------- front ends


@pytest.mark.slow
def test_mm_p_waits_for_the_servers_and_stops_them(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    (tmp_path / ".mm").mkdir()
    config = {
        "mcpServers": {
            "t": stdio(pidfile, MCP_TEST_LINGER="1"),
            "gone": {"command": str(tmp_path / "nothing-here")},
        }
    }
    (tmp_path / ".mm" / "config.yaml").write_text(json.dumps(config))
    trust_project_file(tmp_path, tmp_path)  # mm's home is the folder (clean_env)
    with ScriptedServer(
        Reply(tool_calls=[call("t__add", {"a": 3, "b": 4}, id="c1")]), Reply("seven")
    ) as server:
        done = mm("-p", "add", "--base-url", server.base_url, "--model", MODEL, cwd=tmp_path)
        requests = server.requests
    assert done.returncode == 0, done.stderr
    assert "t__add" in requests[0].tool_names  # -p waited for the server before its request
    assert "🔌 t: add  a=3 b=4" in done.stdout
    assert "🔌 1 mcp call(s)" in done.stdout
    assert "mm: [warning: MCP server gone did not start (no such command" in done.stderr
    (pid,) = pids(pidfile)
    assert not alive(pid)


@pytest.mark.slow
def test_line_mode_stops_the_servers_when_it_ends(tmp_path: Path) -> None:
    from support.program import MM

    pidfile = tmp_path / "pids"
    (tmp_path / ".mm").mkdir()
    config = {"mcpServers": {"t": stdio(pidfile, MCP_TEST_LINGER="1")}}
    (tmp_path / ".mm" / "config.yaml").write_text(json.dumps(config))
    trust_project_file(tmp_path, tmp_path)  # mm's home is the folder (clean_env)
    with ScriptedServer() as server:
        process = subprocess.Popen(
            [*MM, "--line", "--base-url", server.base_url, "--model", MODEL],
            cwd=tmp_path,
            env=clean_env(tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert wait_until(lambda: pids(pidfile), 30), "the server never started"
            (pid,) = pids(pidfile)
            assert alive(pid)
            out, _ = process.communicate(b"", timeout=30)  # end of input: line mode ends
        finally:
            process.kill()
    assert process.returncode == 0, out
    assert not alive(pid)


async def test_a_failing_server_is_said_in_line_mode(tmp_path: Path) -> None:
    """Line mode's printer shows a warning that comes outside a turn."""
    from io import StringIO

    from rich.console import Console

    from mm_tui.line.printer import LinePrinter

    out = StringIO()
    printer = LinePrinter(Console(file=out, width=200), 5, lambda request: None)
    with ScriptedServer() as server:
        servers = {"x": {"command": "/nonexistent/x"}}
        async with mm_with(tmp_path, server, servers, listen=False) as (engine, _):
            engine.registry.listen(printer)  # what was said before a listener, said now
            engine.registry.listen(printer)  # and only once
    assert out.getvalue().splitlines() == [
        "[warning: MCP server x did not start (no such command: /nonexistent/x) — its tools "
        "are not offered]"
    ]


def test_the_mcp_package_loads_the_sdk_only_when_a_server_starts() -> None:
    code = (
        "import sys, mm_tui.startup, mm_tui.tools.mcp; "
        "print(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.slow
async def test_the_window_shows_a_server_tool_line_the_box_and_a_warning(tmp_path: Path) -> None:
    from support.waiting import until
    from support.window_helpers import painted_soon, settle, started_app

    from mm_tui.window.transcript.store import ToolItem

    pidfile = tmp_path / "pids"
    linger = stdio(pidfile, MCP_TEST_LINGER="1")
    servers = {"t": linger, "broken": {"command": str(tmp_path / "no-such-server")}}
    with ScriptedServer(
        Reply(tool_calls=[call("t__echo", {"text": "hello window"})]),
        Reply(tool_calls=[call("t__add", {"a": 1, "b": 2})]),
        Reply("done"),
    ) as server:
        app = started_app(server.base_url, tmp_path, mcpServers=servers, yolo=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            assert app.engine is not None
            await app.engine.registry.ready()
            assert await painted_soon(pilot, app, "[warning: MCP server broken did not start")
            await pilot.press(*"go", "enter")
            asked: list[Any] = []
            for key in "ra":  # reject the first call, allow the second

                def a_new_question() -> bool:
                    return app.main.box.request is not None and app.main.box.request not in asked

                await until(a_new_question, "the question", pilot=pilot)
                asked.append(app.main.box.request)
                assert await painted_soon(pilot, app, "waiting for a/s/r/n")
                await pilot.press(key)
            await settle(pilot, app)
            assert await painted_soon(pilot, app, "‣ t: echo  hello window")
            assert await painted_soon(pilot, app, "‣ t: add  a=1 b=2")
            assert await painted_soon(pilot, app, "🔌 2 mcp call(s)")
            items = [i for i in app.main.transcript.items if isinstance(i, ToolItem)]
            (pid,) = pids(pidfile)
            assert alive(pid)
        requests = server.requests
    assert [(i.title, i.status, i.output) for i in items] == [
        ("t: echo  hello window", "rejected", "[t__echo rejected by the user]"),
        ("t: add  a=1 b=2", "ok", "3"),
    ]
    assert "t__echo" in requests[0].tool_names
    assert requests[1].messages[-1]["content"] == "[t__echo rejected by the user]"
    assert not alive(pid)  # the window closed: its server is stopped
