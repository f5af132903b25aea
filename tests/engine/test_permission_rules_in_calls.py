"""The permission rules as the engine applies them to a model's calls, in each mode, and the
answers that add to them: allow a pattern (written to the project's file, which stays trusted)
and reject with a reason."""

from __future__ import annotations

from pathlib import Path

from test_tool_calls import answer, results, tool_calls

from mm_tui.config import read_project
from mm_tui.config.rule_file import save_allow_rule, with_rule
from mm_tui.core.events import (
    Answer,
    Decision,
    Event,
    PermissionRequested,
    RuleAdded,
    RuleToSave,
)
from mm_tui.engine.model_stream import ToolCall
from mm_tui.engine.tool_calls import ToolCalls

RULES = {"bash": {"rm *": "deny", "git status": "allow", "echo asked *": "ask"}}


def bash(call_id: str, command: str) -> ToolCall:
    import json

    return ToolCall(call_id, "bash", json.dumps({"command": command}))


async def run(
    calls: ToolCalls, batch: list[ToolCall], answers: list[Decision | Answer]
) -> list[Event]:
    events: list[Event] = []
    given = iter(answers)

    def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, PermissionRequested):
            assert calls.questions.answer(None, event.call_id, next(given))

    await calls.run(batch, emit, answer(*batch))
    return events


def asked(events: list[Event]) -> list[str]:
    return [e.call_id for e in events if isinstance(e, PermissionRequested)]


async def test_a_deny_rule_refuses_in_auto_mode_and_names_itself(tmp_path: Path) -> None:
    (tmp_path / "keep").write_text("x")
    calls = tool_calls(tmp_path, permissions=RULES)  # yolo: auto, nothing asks
    events = await run(calls, [bash("c1", "ls && rm keep"), bash("c2", "echo fine")], [])
    assert asked(events) == []
    assert results(calls) == [
        ("c1", "rejected", '[command denied by the rule bash "rm *": rm keep]'),
        ("c2", "ok", "fine\n"),
    ]
    assert (tmp_path / "keep").exists()


async def test_auto_asks_only_where_a_deny_rule_might_match(tmp_path: Path) -> None:
    calls = tool_calls(tmp_path, permissions=RULES)
    batch = [
        bash("c1", 'CMD=echo; "$CMD" maybe'),
        bash("c2", "echo asked too"),
        bash("c3", "echo $("),
    ]
    events = await run(calls, batch, [Decision.ALLOW_ONCE, Decision.REJECT])
    # $CMD might be rm; the explicit ask rule is not auto's; an unreadable line might hide rm
    assert asked(events) == ["c1", "c3"]
    assert [status for _, status, _ in results(calls)] == ["ok", "ok", "rejected"]


async def test_in_ask_mode_rules_allow_and_ask_before_the_session_answers(tmp_path: Path) -> None:
    calls = tool_calls(tmp_path, yolo=False, permissions=RULES)
    batch = [
        bash("c1", "git status"),  # allowed by its rule: no question (not a repository: fails)
        bash("c2", "echo one"),  # no rule: asked, allowed for the session
        bash("c3", "echo two"),  # the session's answer stands
        bash("c4", "echo asked again"),  # an ask rule asks even after `s`
    ]
    events = await run(calls, batch, [Decision.ALLOW_SESSION, Decision.ALLOW_ONCE])
    assert asked(events) == ["c2", "c4"]
    assert [status for _, status, _ in results(calls)][1:] == ["ok", "ok", "ok"]


async def test_a_rejection_with_a_reason_gives_the_model_the_words(tmp_path: Path) -> None:
    calls = tool_calls(tmp_path, yolo=False)
    reason = Answer(Decision.REJECT, reason="not on main,\nuse a branch")
    await run(calls, [bash("c1", "echo hi")], [reason])
    assert results(calls) == [
        ("c1", "rejected", "[command rejected by the user: not on main, use a branch]")
    ]


async def test_allowing_a_pattern_runs_the_call_keeps_the_rule_and_trusts_the_file(
    tmp_path: Path,
) -> None:
    calls = tool_calls(tmp_path, yolo=False)
    rule = RuleToSave(tool="bash", pattern="echo *", place="project")
    events = await run(calls, [bash("c1", "echo first")], [Answer(Decision.ALLOW_ONCE, rule=rule)])
    offered = [e.pattern for e in events if isinstance(e, PermissionRequested)]
    assert offered == ["echo *"]
    (added,) = [e for e in events if isinstance(e, RuleAdded)]
    assert (added.path, added.warning) == (".mm/config.yaml", "")
    assert added.text == 'bash "echo *" is allowed from now on (saved to .mm/config.yaml)'
    events = await run(calls, [bash("c2", "echo second")], [])
    assert asked(events) == []  # the rule holds in this session
    assert [status for _, status, _ in results(calls)] == ["ok", "ok"]
    project = read_project(tmp_path)
    assert project is not None
    assert project.data == {"permissions": {"bash": {"echo *": "allow"}}}
    assert project.trusted  # the person's own answer: the new bytes are trusted


def test_a_project_file_with_keys_not_trusted_is_not_written(tmp_path: Path) -> None:
    config = tmp_path / ".mm" / "config.yaml"
    config.parent.mkdir()
    config.write_text("yolo: true\n")  # written by whoever, never trusted
    rule = RuleToSave(tool="bash", pattern="make *")
    path, warning = save_allow_rule(rule, cwd=tmp_path)
    assert path == ""
    assert warning == (
        "the rule holds for this session only: .mm/config.yaml holds keys you have not "
        "trusted; run mm here to review it"
    )
    assert config.read_text() == "yolo: true\n"
    project = read_project(tmp_path)
    assert project is not None and not project.trusted


def test_the_users_own_file_gets_the_rule_with_its_comments_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    own = home / ".config" / "mm" / "config.yaml"
    own.parent.mkdir(parents=True)
    own.write_text("# mine\nmodel: qwen  # the good one\npermissions:\n  bash:\n    ls *: allow\n")
    rule = RuleToSave(tool="bash", pattern="git log *", place="user")
    path, warning = save_allow_rule(rule, cwd=tmp_path, home=home, environ={})
    assert (path, warning) == ("~/.config/mm/config.yaml", "")
    assert own.read_text() == (
        '# mine\nmodel: qwen  # the good one\npermissions:\n  bash:\n    "git log *": allow\n'
        "    ls *: allow\n"
    )


def test_rules_go_where_they_belong_in_a_file() -> None:
    def added(old: str, tool: str = "bash") -> str | None:
        import yaml

        return with_rule(old, yaml.safe_load(old) or {}, tool, "make *")

    assert added("") == 'permissions:\n  bash:\n    "make *": allow\n'
    assert added("model: x") == 'model: x\npermissions:\n  bash:\n    "make *": allow\n'
    assert added("permissions:\n    read_file:\n        '*': allow\ntheme: x\n") == (
        'permissions:\n    bash:\n        "make *": allow\n    read_file:\n'
        "        '*': allow\ntheme: x\n"
    )
    assert added("permissions: {bash: {ls *: allow}}\n") is None  # a flow mapping: by hand


def test_a_trusted_project_file_gets_the_rule_and_stays_trusted(tmp_path: Path) -> None:
    from mm_tui.config import trust_project

    config = tmp_path / ".mm" / "config.yaml"
    config.parent.mkdir()
    config.write_text("yolo: false  # ask first\n")
    before = read_project(tmp_path)
    assert before is not None and before.untrusted and not before.trusted
    assert trust_project(before) is None  # the person said "trust"
    path, warning = save_allow_rule(RuleToSave(tool="bash", pattern="make *"), cwd=tmp_path)
    assert (path, warning) == (".mm/config.yaml", "")
    assert config.read_text() == (
        'yolo: false  # ask first\npermissions:\n  bash:\n    "make *": allow\n'
    )
    after = read_project(tmp_path)
    assert after is not None and after.trusted
