"""Child processes that fail: a language server that crashes, prints
garbage on its stdout, or hangs. The call fails with a clear message, no process is left behind
(not even a zombie), and the next call starts a fresh server that works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsp_fixtures.support import fake_server
from support.processes import state
from support.waiting import await_until

from mm_tui.config import Settings
from mm_tui.tools.base import ToolContext
from mm_tui.tools.lsp import LspArgs, LspTool

FAULTS = {
    "crash": (("--crash-on", "textDocument/hover"), "the server exited"),
    "garbage": (("--garbage-on", "textDocument/hover"), "fake: hover failed"),
    "hang": (
        ("--hang", "textDocument/hover"),
        "no answer within 0.5s — the server was stopped; the next call starts it again",
    ),
}


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_language_server_that_fails_is_replaced(tmp_path: Path, fault: str) -> None:
    options, said = FAULTS[fault]
    once = tmp_path / "misbehaved"
    server = fake_server(tmp_path / "log.jsonl", *options, "--once", str(once))
    tool = LspTool([server], tmp_path, request_timeout=0.5)
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    (tmp_path / "a.py").write_text("x = 1\n")
    try:
        # (a request timeout not honoured: a hung server's call would never end)
        result = await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        assert result.status == "error"
        assert result.output.startswith("[lsp: fake: hover failed:"), result.output
        assert said in result.output, result.output
        # the next call: a fresh server, which behaves
        result = await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        assert result.status == "ok", result.output
        assert "fake hover" in result.output
        starts = (tmp_path / "log.jsonl").read_text().count('"method": "initialize"')
        assert starts == 2  # the misbehaving server, then a fresh one
    finally:
        pids = [s.client.pid for s in tool.manager.running()]
        await tool.aclose()
    for pid in pids:
        gone = await await_until(lambda pid=pid: state(pid) is None, 3)  # reaped too
        assert gone, f"{pid} is left: {state(pid)}"
    # and no child of ours is a zombie
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    assert all(state(int(pid)) != "Z" for pid in children)


async def test_a_server_dead_but_not_yet_reaped_is_replaced(tmp_path: Path) -> None:
    """A killed server whose exit the loop has not seen yet (its pipes are already closed): the
    next call must start a fresh one, not write to the dead one twice and give up (seen on a
    busy CI machine, where reaping lags a SIGKILL)."""
    once = tmp_path / "muted"
    server = fake_server(
        tmp_path / "log.jsonl", "--mute-after", "textDocument/hover", "--once", str(once)
    )
    tool = LspTool([server], tmp_path)
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    (tmp_path / "a.py").write_text("x = 1\n")
    try:
        first = await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        assert first.status == "ok", first.output
        muted = tool.manager.running()[0].client
        stdout = Path(f"/proc/{muted.pid}/fd/1")
        # the pipes are closed once the server has answered
        assert await await_until(lambda: not stdout.exists(), 2), "the muted server's pipes stay"
        second = await tool.run(LspArgs(action="hover", path="a.py", symbol="x"), ctx)
        assert second.status == "ok", second.output
        assert "fake hover" in second.output
        starts = (tmp_path / "log.jsonl").read_text().count('"method": "initialize"')
        assert starts == 2
    finally:
        await tool.aclose()
