"""The session's modes (engine/permissions.py): ask, auto and plan, against the scripted server on
127.0.0.1 through the real provider client: what each request declares and says, what runs,
what asks; and where the mode comes from (the config, the flags, a project's config)."""

from __future__ import annotations

from pathlib import Path

from support.engine import make_engine, turn
from support.scripted_server import Reply, ScriptedServer, call

from mm_tui.cli import _overrides, parser
from mm_tui.config import Settings
from mm_tui.core.events import (
    Decision,
    ModeChanged,
    PermissionRequested,
    ToolCallFinished,
)
from mm_tui.engine.permissions import PLAN_NOTE, Permissions, plan_refusal


def declared(body: dict) -> list[str]:
    return sorted(tool["function"]["name"] for tool in body.get("tools", []))


def test_the_rule_of_each_mode() -> None:
    plan = Permissions(yolo=True, mode="plan")
    assert plan.hides("write_file") and plan.hides("edit_file") and not plan.hides("bash")
    plan.record("bash", Decision.ALLOW_SESSION)
    assert plan.without_asking("bash", True) is None  # every command asks, whatever was said
    assert plan.without_asking("read_file", False) == Decision.ALLOW_ONCE
    auto = Permissions(yolo=False, mode="auto")
    assert auto.yolo and auto.without_asking("bash", True) == Decision.ALLOW_ONCE
    assert Permissions(yolo=True).mode == "auto" and Permissions(yolo=False).mode == "ask"
    ask = Permissions(yolo=True, mode="ask")
    assert ask.without_asking("bash", True) is None and not ask.hides("write_file")


async def test_plan_mode_declares_no_edits_asks_every_command_and_says_it_plans(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    script = [
        Reply(tool_calls=[call("bash", {"command": "cat a.txt"}, id="c1")]),
        Reply(tool_calls=[call("write_file", {"path": "a.txt", "content": "new\n"}, id="c2")]),
        Reply("1. change a.txt"),
        Reply(tool_calls=[call("write_file", {"path": "a.txt", "content": "new\n"}, id="c3")]),
        Reply("done"),
    ]
    with ScriptedServer(*script) as server:
        engine = make_engine(tmp_path, server)  # yolo, as by default
        events = []
        engine.set_mode("plan", events.append)
        assert events == [ModeChanged(mode="plan", previous="auto")]
        asked: list[str] = []

        def answer(request: PermissionRequested) -> Decision:
            asked.append(request.tool)
            return Decision.ALLOW_SESSION

        planned = await turn(engine, "plan the change", answer)
        assert asked == ["bash"]  # yolo is off in plan mode, for every command
        first = server.requests[0].body
        assert "write_file" not in declared(first) and "edit_file" not in declared(first)
        assert "bash" in declared(first) and "read_file" in declared(first)
        assert first["messages"][0]["content"].endswith(PLAN_NOTE)
        refused = [e for e in planned if isinstance(e, ToolCallFinished) and e.call_id == "c2"]
        assert refused[0].status == "error" and refused[0].output == plan_refusal("write_file")
        assert (tmp_path / "a.txt").read_text() == "old\n"
        # the journal keeps the history as it was: the note is only in what was sent
        assert not engine.session.messages[0]["content"].endswith(PLAN_NOTE)
        # Leaving plan mode: the tools come back, the note goes, the change is made.
        engine.set_mode("auto")
        await turn(engine, "carry out the plan")
        last = server.requests[-1].body
        assert "write_file" in declared(last)
        assert not last["messages"][0]["content"].endswith(PLAN_NOTE)
        assert (tmp_path / "a.txt").read_text() == "new\n"
        await engine.aclose()


async def test_a_second_plan_command_asks_again_though_the_first_was_allowed_for_the_session(
    tmp_path: Path,
) -> None:
    script = [
        Reply(tool_calls=[call("bash", {"command": "echo one"}, id="c1")]),
        Reply(tool_calls=[call("bash", {"command": "echo two"}, id="c2")]),
        Reply("done"),
    ]
    with ScriptedServer(*script) as server:
        engine = make_engine(tmp_path, server, mode="plan")
        asked: list[str] = []

        def answer(request: PermissionRequested) -> Decision:
            asked.append(request.call_id)
            return Decision.ALLOW_SESSION

        await turn(engine, "look", answer)
        assert asked == ["c1", "c2"]
        await engine.aclose()


def test_the_mode_comes_from_the_flags_over_the_config() -> None:
    def mode_of(*argv: str) -> object:
        return _overrides(parser().parse_args(list(argv)))["mode"]

    assert mode_of() is None  # the config decides
    assert mode_of("--mode", "plan") == "plan"
    assert mode_of("--no-yolo") == "ask" and mode_of("--yolo") == "auto"
    assert mode_of("--yolo", "--mode", "plan") == "plan"  # --mode wins
    assert Settings(mode="plan").mode == "plan"
