"""The engine says when a call runs (`ToolCallRunning`), after any question, by its one permission
rule (`Permissions.without_asking`): front ends no longer guess it."""

from __future__ import annotations

from pathlib import Path

from support.engine import make_engine, of
from support.engine import turn as run
from support.scripted_model import ScriptedModel, calls, say

from mm_tui.core.events import (
    Decision,
    PermissionRequested,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
)
from mm_tui.engine.permissions import Permissions


def test_the_rule() -> None:
    asking = Permissions(yolo=False)
    assert asking.without_asking("read_file", False) == Decision.ALLOW_ONCE  # never asks
    assert asking.without_asking("bash", True) is None  # the person is asked
    asking.record("bash", Decision.ALLOW_ONCE)  # once: not remembered
    assert asking.without_asking("bash", True) is None
    asking.record("bash", Decision.ALLOW_SESSION)
    assert asking.without_asking("bash", True) == Decision.ALLOW_SESSION
    asking.record("write_file", Decision.NEVER)
    assert asking.without_asking("write_file", True) == Decision.NEVER
    assert Permissions(yolo=True).without_asking("bash", True) == Decision.ALLOW_ONCE


async def test_running_comes_after_the_answer_and_never_for_a_rejected_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    model = ScriptedModel(
        calls(
            ("bash", {"command": "echo allowed"}, "c1"),
            ("bash", {"command": "echo refused"}, "c2"),
            ("read_file", {"path": "a.txt"}, "c3"),
            # the edit's preview fails (no such text): nothing to ask, and it runs to its error
            ("edit_file", {"path": "a.txt", "edits": [{"old": "absent", "new": "x"}]}, "c4"),
        ),
        say("done"),
    )
    engine = make_engine(tmp_path, model, yolo=False)
    answers = iter([Decision.ALLOW_ONCE, Decision.REJECT])
    events = await run(engine, "go", lambda request: next(answers))
    order = [
        (type(e).__name__, e.call_id)
        for e in events
        if isinstance(e, ToolCallStarted | PermissionRequested | ToolCallRunning | ToolCallFinished)
    ]
    assert order == [
        ("ToolCallStarted", "c1"),
        ("PermissionRequested", "c1"),
        ("ToolCallRunning", "c1"),
        ("ToolCallFinished", "c1"),
        ("ToolCallStarted", "c2"),
        ("PermissionRequested", "c2"),
        ("ToolCallFinished", "c2"),  # rejected: it never ran
        ("ToolCallStarted", "c3"),
        ("ToolCallRunning", "c3"),  # read_file never asks
        ("ToolCallFinished", "c3"),
        ("ToolCallStarted", "c4"),
        ("ToolCallRunning", "c4"),  # nothing to ask: it runs, and fails by itself
        ("ToolCallFinished", "c4"),
    ]
    finished = {e.call_id: e.status for e in of(events, ToolCallFinished)}
    assert finished == {"c1": "ok", "c2": "rejected", "c3": "ok", "c4": "error"}
    assert [e.tool for e in of(events, ToolCallRunning)] == ["bash", "read_file", "edit_file"]


async def test_a_call_s_time_is_its_run_not_the_wait_for_the_answer(tmp_path: Path) -> None:
    """An `ls` allowed after six seconds took no six seconds: the time a call reports counts
    from its start after the answer; a rejected call ran for none. The window's live line
    counts from the same moment (`ToolCallRunning`)."""
    now = [100.0]
    model = ScriptedModel(
        calls(("bash", {"command": "true"}, "c1"), ("bash", {"command": "true"}, "c2")),
        say("done"),
    )
    engine = make_engine(tmp_path, model, yolo=False, clock=lambda: now[0])
    answers = iter([Decision.ALLOW_ONCE, Decision.REJECT])

    def after_six_seconds(request: PermissionRequested) -> Decision:
        now[0] += 6.0  # the person takes their time
        return next(answers)

    events = await run(engine, "go", after_six_seconds)
    elapsed = {e.call_id: e.elapsed for e in of(events, ToolCallFinished)}
    assert elapsed == {"c1": 0.0, "c2": 0.0}, elapsed

    from mm_tui.window.transcript.store import Transcript

    clock = [0.0]
    transcript = Transcript(clock=lambda: clock[0])
    for event in events:
        if isinstance(event, ToolCallStarted | ToolCallRunning) and event.call_id == "c1":
            transcript.apply(event)
            clock[0] = 6.0
    (item,) = [i for i in transcript.items if getattr(i, "call_id", "") == "c1"]
    assert item.started == 6.0  # its live time counts from the run, not from the question
