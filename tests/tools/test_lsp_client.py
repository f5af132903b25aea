"""The client's protocol duties, against a small scripted server (tests/lsp_fixtures/
fake_server.py) that can be made to hang, to ask, to flood its stderr and to record what it got:
the cases a real server will not show on demand."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from lsp_fixtures.support import fake_server, read_log
from support.processes import alive
from support.waiting import await_until, wait_until

from mm_tui.config import LspServer, Settings
from mm_tui.tools.base import ToolContext
from mm_tui.tools.lsp import LspArgs, LspTool
from mm_tui.tools.lsp.client import LspClient, ResponseError, path_to_uri


async def logged(log: Path, wanted, timeout: float = 5.0) -> list[dict]:
    """The messages of the log that `wanted` takes, once there is one (the server writes its
    log while the client goes on)."""
    found: list[dict] = []

    def seen() -> bool:
        found[:] = [m for m in read_log(log) if wanted(m)]
        return bool(found)

    await await_until(seen, timeout)
    return found


def make(tmp_path: Path, *options: str, name: str = "fake", ext: str = ".py", **kw):
    log = tmp_path / "log.jsonl"
    server = fake_server(log, *options, name=name, ext=ext)
    tool = LspTool([server], tmp_path, **kw)
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    return tool, ctx, log


async def test_initialize_framing_and_sync(tmp_path: Path) -> None:
    tool, ctx, log = make(tmp_path)
    (tmp_path / "a.py").write_text("x = 1  # é 👋\n")
    try:
        result = await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        assert result.output == "fake hover"
        await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        (tmp_path / "a.py").write_text("x = 2  # é 👋\n")
        await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
    finally:
        await tool.aclose()
    messages = read_log(log)
    methods = [m.get("method") for m in messages]
    init = messages[0]
    assert init["method"] == "initialize"
    assert init["params"]["rootUri"] == path_to_uri(tmp_path)
    assert init["params"]["workspaceFolders"] == [
        {"uri": path_to_uri(tmp_path), "name": tmp_path.name}
    ]
    caps = init["params"]["capabilities"]
    assert caps["general"]["positionEncodings"] == ["utf-16"]
    assert caps["textDocument"]["documentSymbol"]["hierarchicalDocumentSymbolSupport"] is True
    assert caps["textDocument"]["definition"]["linkSupport"] is True
    assert caps["workspace"]["workspaceEdit"]["documentChanges"] is True
    assert "diagnostic" in caps["textDocument"] and "rename" in caps["textDocument"]
    assert methods[1] == "initialized"
    # opened once, then one whole-document change when the content moved, none when it did not
    assert methods.count("textDocument/didOpen") == 1
    changes = [m for m in messages if m.get("method") == "textDocument/didChange"]
    assert len(changes) == 1
    assert changes[0]["params"]["textDocument"]["version"] == 2
    assert changes[0]["params"]["contentChanges"] == [{"text": "x = 2  # é 👋\n"}]
    opened = next(m for m in messages if m.get("method") == "textDocument/didOpen")
    assert opened["params"]["textDocument"]["languageId"] == "python"
    assert opened["params"]["textDocument"]["text"] == "x = 1  # é 👋\n"
    assert methods.count("textDocument/hover") == 3
    # the polite stop: shutdown without params (not null), then exit
    shutdown = next(m for m in messages if m.get("method") == "shutdown")
    assert "params" not in shutdown
    assert methods[-2:] == ["shutdown", "exit"]
    assert "params" not in messages[-1]


async def test_server_requests_are_answered(tmp_path: Path) -> None:
    tool, ctx, log = make(tmp_path, "--ask")
    (tmp_path / "a.py").write_text("x = 1\n")
    try:
        await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        for id_ in ("c1", "c2", "c3", "c4"):
            await logged(log, lambda m, id_=id_: m.get("id") == id_ and "method" not in m)
        answers = {m["id"]: m for m in read_log(log) if "method" not in m}
        assert answers["c1"]["result"] == [None, None]  # workspace/configuration
        assert answers["c2"]["result"] is None  # window/workDoneProgress/create
        assert answers["c3"]["result"] is None  # client/registerCapability
        assert answers["c4"]["error"]["code"] == -32601  # unknown: method not found
        # the registration was kept: diagnostics are pulled from this server
        result = await tool.run(LspArgs(action="diagnostics", path="a.py"), ctx)
        assert result.output == "no diagnostics: a.py is clean"
        assert any(m.get("method") == "textDocument/diagnostic" for m in read_log(log))
    finally:
        await tool.aclose()


async def test_workspace_apply_edit_is_carried_out(tmp_path: Path) -> None:
    tool, ctx, log = make(tmp_path, "--apply")
    target = tmp_path / "a.py"
    target.write_text("x = 1\n")
    try:
        await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        await logged(log, lambda m: m.get("id") == "c5" and "method" not in m)
        answers = {m["id"]: m for m in read_log(log) if "method" not in m}
        assert answers["c5"]["result"] == {"applied": True}
        assert target.read_text() == "# applied by the server\nx = 1\n"
    finally:
        await tool.aclose()


async def test_a_server_that_does_not_answer_gives_text(tmp_path: Path) -> None:
    tool, ctx, log = make(
        tmp_path, "--hang", "textDocument/hover", name="gopls", ext=".go", request_timeout=0.5
    )
    (tmp_path / "main.go").write_text("package main\n\nfunc main() {}\n")
    try:
        result = await tool.run(LspArgs(action="hover", path="main.go", symbol="main"), ctx)
        assert result.status == "error"
        assert result.output == (
            "[lsp: gopls: hover failed: no answer within 0.5s — the server was stopped; "
            "the next call starts it again]"
        )
        assert tool.manager.running() == []  # stuck: stopped
        # the next call starts a fresh one, which serves other requests
        result = await tool.run(LspArgs(action="symbols", path="main.go"), ctx)
        assert result.output == "no symbols found in main.go"
        starts = [m for m in read_log(log) if m.get("method") == "initialize"]
        assert len(starts) == 2
    finally:
        await tool.aclose()


async def test_a_server_that_never_initializes(tmp_path: Path) -> None:
    tool, ctx, _ = make(tmp_path, "--hang", "initialize", initialize_timeout=0.5)
    (tmp_path / "a.py").write_text("x = 1\n")
    result = await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
    assert result.output == (
        "[lsp: fake: hover failed: the server did not answer initialize within 0.5s]"
    )
    assert tool.manager.running() == []
    await tool.aclose()


async def test_no_definition_found_and_no_diagnostics_received(tmp_path: Path) -> None:
    tool, ctx, _ = make(tmp_path, name="gopls", ext=".go")
    (tmp_path / "main.go").write_text(
        'package main\n\nimport "fmt"\n\nfunc greet() {}\n\nfunc main() { greet() }\n'
    )
    try:
        result = await tool.run(LspArgs(action="definition", path="main.go", line=5, column=4), ctx)
        assert result.output == "[lsp: no definition found for the symbol at main.go:5:4]"
        result = await tool.run(LspArgs(action="definition", path="main.go", symbol="greet"), ctx)
        assert result.output == "[lsp: no definition found for the symbol at main.go:5:6]"
        result = await tool.run(LspArgs(action="diagnostics", path="main.go"), ctx)
        assert result.output.startswith("no diagnostics received for main.go within 3s (")
        (tmp_path / "main.go").write_text("package main\n\nfunc greet() {}\n")
        result = await tool.run(LspArgs(action="hover", path="main.go", line=3, column=40), ctx)
        assert result.output == "[lsp: column 40 is past the end of line 3 (15 characters)]"
    finally:
        await tool.aclose()


async def test_a_flooded_stderr_does_not_block(tmp_path: Path) -> None:
    tool, ctx, _ = make(tmp_path, "--flood", str(2_000_000))
    (tmp_path / "a.py").write_text("x = 1\n")
    try:
        result = await asyncio.wait_for(
            tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx), 20
        )
        assert result.output == "fake hover"
        client = tool.manager.running()[0].client
        assert client.stderr_excerpt().endswith("the end of the flood")
    finally:
        await tool.aclose()


RUSTUP_ERROR = (
    "error: rustup could not choose a version of rust-analyzer to run, because one wasn't "
    "specified explicitly, and no default is configured."
)
FRAME = "std::backtrace_rs::backtrace::libunwind::trace at library/backtrace/src/libunwind.rs:116"


async def test_a_failing_server_is_quoted_from_its_first_line(tmp_path: Path) -> None:
    """A real program as the server: it writes a long stderr (what is wrong, then a backtrace
    of 25 kB) and exits, as rust-analyzer's rustup proxy does without a toolchain. The text
    keeps the first lines, which say what is wrong, and the last, with what was cut between."""
    script = tmp_path / "failing-ls"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "{RUSTUP_ERROR}" >&2\n'
        "echo \"help: run 'rustup default stable' to set a default toolchain.\" >&2\n"
        "i=0\n"
        f'while [ $i -lt 250 ]; do echo "  $i: {FRAME}" >&2; i=$((i+1)); done\n'
        'echo "note: run with RUST_BACKTRACE=full for a verbose backtrace." >&2\n'
        "exit 1\n"
    )
    script.chmod(0o755)
    server = LspServer(name="rust-analyzer", command=str(script), extensions=[".rs"])
    tool = LspTool([server], tmp_path)
    (tmp_path / "main.rs").write_text("fn main() {}\n")
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    try:
        result = await tool.run(LspArgs(action="symbols", path="main.rs"), ctx)
    finally:
        await tool.aclose()
    assert result.status == "error"
    output = result.output
    mark = re.search(r"\n\[… (\d+) characters cut …\]\n", output)
    assert mark is not None, output
    first = output[: mark.start()].split("\n")
    # (on a busy machine its exit may be seen after its output closed: either is said)
    assert re.fullmatch(
        r"\[lsp: rust-analyzer: symbols failed: the server (exited \(exit status 1\)|closed its "
        r"output): " + re.escape(RUSTUP_ERROR),
        first[0],
    ), output
    assert first[1] == "help: run 'rustup default stable' to set a default toolchain.", output
    assert all(line.endswith(FRAME) for line in first[2:]), output
    last = output[mark.end() :].split("\n")
    assert last[-1] == "note: run with RUST_BACKTRACE=full for a verbose backtrace.]"
    assert len(last) > 1 and all(line.endswith(FRAME) for line in last[:-1]), output
    assert len(result.output) < 800  # a few lines, not the whole backtrace


async def test_a_missing_command_is_a_text_failure(tmp_path: Path) -> None:
    server = LspServer(name="ghost", command="/nonexistent/ghost-ls", extensions=[".py"])
    tool = LspTool([server], tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    result = await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
    assert result.status == "error"
    assert result.output.startswith("[lsp: ghost: hover failed: cannot start /nonexistent/ghost-ls")


async def test_client_request_errors_and_exit(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    server = fake_server(log)
    client = LspClient("fake", server.command, server.args, tmp_path)
    await client.start()
    assert client.server_info == {"name": "fake"}
    assert await client.request("textDocument/definition", {}) is None
    proc = client._proc
    await client.close()
    assert proc is not None and proc.returncode == 0  # it left on `exit`, not killed
    assert not client.alive
    try:
        await client.request("textDocument/hover", {})
    except ResponseError:
        raise AssertionError("a stopped server cannot answer") from None
    except Exception as exc:  # noqa: BLE001
        assert "stopped" in str(exc) or "exited" in str(exc)


def test_a_server_stranded_on_a_closed_event_loop_is_replaced(tmp_path: Path) -> None:
    """Each `mm -p` turn or test may run its own event loop: a server whose pipes belong to a
    loop that is gone is killed and started again on the loop now running."""
    tool, ctx, _ = make(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    args = LspArgs(action="hover", path="a.py", symbol="x")
    assert asyncio.run(tool.run(args, ctx)).output == "fake hover"
    first = tool.manager.running()[0].client
    first_pid = first.pid
    assert asyncio.run(tool.run(args, ctx)).output == "fake hover"
    second = tool.manager.running()[0].client
    second_pid = second.pid
    assert second is not first and first_pid != second_pid
    assert wait_until(lambda: exited(first_pid), 2)
    asyncio.run(tool.aclose())  # from yet another loop: the process is killed, not awaited
    assert wait_until(lambda: exited(second_pid), 2)


def exited(pid: int) -> bool:
    """Whether the process has exited, reaped here when it is a child of ours (its event loop,
    which would have reaped it, is gone)."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not ours, or reaped already
        return not alive(pid)
    return done != 0
