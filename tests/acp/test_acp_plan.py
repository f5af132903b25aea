"""The model's task list (the todo tool) reaches an editor as ACP `plan` updates, the whole list
each time, with the protocol's states. The real `mm -acp` on the scripted server, driven by the
acp package's own client."""

from __future__ import annotations

from pathlib import Path

from acp.schema import AgentPlanUpdate
from support.acp_helpers import Recorder, ask, mm_acp, start
from support.scripted_server import Reply, ScriptedServer, call

STEPS = [
    {"step": "read greet.py", "state": "done"},
    {"step": "fix the typo", "state": "in_progress"},
    {"step": "run the tests", "state": "pending"},
]


async def test_the_task_list_is_the_session_s_plan(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("todo", {"steps": STEPS}, id="t1")]), Reply("ok")]
    editor = Recorder()
    with ScriptedServer(*script) as server:
        async with mm_acp(tmp_path, server, editor) as (conn, _log):
            session_id = await start(conn, tmp_path)
            assert await ask(conn, session_id, "plan it") == "end_turn"
    (plan,) = [u for u in editor.updates if isinstance(u, AgentPlanUpdate)]
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read greet.py", "completed"),
        ("fix the typo", "in_progress"),
        ("run the tests", "pending"),
    ]
