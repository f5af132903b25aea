"""The real `mm -acp` driven by a client written with the official TypeScript SDK
(@agentclientprotocol/sdk, pinned in tests/node_acp/package.json): an editor's ACP library, not
the Python package the other ACP tests use. tests/node_acp/client.mjs asks protocolVersion 0,
makes a session and lists it, then in a second `mm -acp` loads that session and prompts it; every
message mm sends is checked against the SDK's own schemas on the way.

Needs Node.js and the SDK installed (`npm ci --prefix tests/node_acp`, which `make test` runs
when npm is there); skipped with the reason otherwise."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import acp
import pytest
from support.env import clean_env
from support.program import MM
from support.scripted_server import Reply, ScriptedServer
from support.session_helpers import sessions_of

CLIENT = Path(__file__).parents[1] / "node_acp" / "client.mjs"
SDK = CLIENT.parent / "node_modules" / "@agentclientprotocol" / "sdk"
ANSWER = "Hello from the scripted model"


def node_or_skip() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js not found: the official ACP SDK client test needs node and npm")
    if not SDK.is_dir():
        pytest.skip(
            "the official ACP SDK is not installed in tests/node_acp/node_modules: "
            "`npm ci --prefix tests/node_acp` (make test runs it when npm is available)"
        )
    return node


@pytest.mark.slow
def test_the_official_typescript_sdk_drives_mm_acp(tmp_path: Path) -> None:
    node = node_or_skip()
    work = tmp_path / "work"
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir()
    with ScriptedServer() as server:
        server.script(Reply(ANSWER))
        done = subprocess.run(
            [node, str(CLIENT), *MM, "-acp", "--base-url", server.base_url, "--model", "m1"],
            cwd=work,
            env=clean_env(home),
            capture_output=True,
            text=True,
            timeout=100,
        )
        chats = list(server.requests)
    assert done.returncode == 0, f"the SDK client failed:\n{done.stderr}\n{done.stdout}"
    seen = json.loads(done.stdout)
    # whatever the SDK's schemas refused, dropped or repaired in what mm sent
    assert seen["problems"] == []
    assert seen["updatesOnTheWire"] == seen["updatesTheSdkAccepted"]
    # asked 0 (not a version), told the latest: the SDK's, which is also the Python package's
    assert seen["askedProtocolVersion"] == 0
    assert seen["protocolVersion"] == seen["sdkProtocolVersion"] == acp.PROTOCOL_VERSION
    assert seen["secondProtocolVersion"] == acp.PROTOCOL_VERSION
    assert seen["agentCapabilities"]["loadSession"] is True
    # the new session is listed before any prompt, by its own process and by another one,
    # which loads it and answers the prompt in it
    session_id = seen["sessionId"]
    assert session_id in seen["listedBeforePrompt"]
    assert session_id in seen["listedBySecond"]
    assert seen["stopReason"] == "end_turn"
    assert "agent_message_chunk" in seen["updateKinds"]["prompt"]
    assert seen["text"] == ANSWER
    assert seen["sessionIdsOfUpdates"] == [session_id]
    assert len(chats) == 1 and "hi" in json.dumps(chats[0].messages[-1])
    files = list(sessions_of(work, home).glob(f"{session_id}*.jsonl"))
    assert files and ANSWER in files[0].read_text()
