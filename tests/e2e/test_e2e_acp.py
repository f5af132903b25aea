"""5. `mm -acp` on the real server, driven by the ACP package's own client, for one prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import acp
from acp.schema import AgentMessageChunk
from e2e_helpers import saved_session
from support.editor import Editor as CountingEditor
from support.env import clean_env
from support.program import MM
from support.waiting import await_until


class Editor(CountingEditor):
    """Keeps every update; a permission request (none is expected: yolo) is rejected."""

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kw: Any):  # noqa: ANN201
        from acp.schema import DeniedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))


async def test_mm_acp_answers_one_prompt_on_the_real_server(server, project: Path, tmp_path: Path):
    editor = Editor()
    log = tmp_path / "mm-acp-stderr.log"
    with log.open("wb") as stderr:
        async with acp.spawn_agent_process(
            editor,
            *MM,
            "-acp",
            "--base-url",
            server.base_url,
            "--model",
            server.model_id,
            env=clean_env(project),
            cwd=project,
            transport_kwargs={"stderr": stderr},
            observers=[editor.observe],
        ) as (conn, _process):
            init = await asyncio.wait_for(
                conn.initialize(protocol_version=acp.PROTOCOL_VERSION), 60
            )
            assert init.protocol_version == acp.PROTOCOL_VERSION
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            response = await asyncio.wait_for(
                conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Hello!")]),
                240,
            )
            # the updates sent before the answer, handled
            assert await await_until(editor.caught_up), "updates were never handled"
    assert response.stop_reason == "end_turn", log.read_text()
    said = editor.text()
    assert said.strip()
    # One piece: llama-cpp-python loses a streamed tool call, so the model's probe has mm ask
    # it without streaming whenever tools go with the request (engine/model_probe.py). The
    # answer streamed to the editor piece by piece is held by tests/acp/test_acp_agent.py.
    assert sum(isinstance(u, AgentMessageChunk) for u in editor.updates) >= 1
    saved = saved_session(project)
    assert saved["messages"][-1] == {"role": "assistant", "content": said}
