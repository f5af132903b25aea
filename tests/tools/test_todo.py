"""The todo tool: the model's task list, sent whole each time, read back to it in a few lines,
and handed to the front ends as one event; what a call that cannot be a list gets; and the list
found again in a resumed conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.engine import make_engine, turn
from support.scripted_model import ScriptedModel, calls, say

from mm_tui.core.events import TodoStep, TodoUpdated, ToolCallFinished
from mm_tui.tools.todo import MAX_STEP, MAX_STEPS, last_todo_list

STEPS = [
    {"step": "read greet.py", "state": "done"},
    {"step": "fix the typo", "state": "in_progress"},
    {"step": "run the tests", "state": "pending"},
]


async def run_todo(tmp_path: Path, *arguments: object) -> tuple[list, list[str]]:
    """The turn's events, and the results the model read."""
    model = ScriptedModel(
        calls(*[("todo", args, f"t{n}") for n, args in enumerate(arguments)]), say("ok")
    )
    engine = make_engine(tmp_path, model)
    events = await turn(engine, "go")
    await engine.aclose()
    return events, [m["content"] for m in engine.session.messages if m["role"] == "tool"]


async def test_the_list_goes_to_the_front_ends_and_back_to_the_model(tmp_path: Path) -> None:
    events, read = await run_todo(tmp_path, {"steps": STEPS})
    (updated,) = [e for e in events if isinstance(e, TodoUpdated)]
    assert updated.steps == (
        TodoStep("read greet.py", "done"),
        TodoStep("fix the typo", "in_progress"),
        TodoStep("run the tests", "pending"),
    )
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.status == "ok"
    assert read == ["[x] read greet.py\n[>] fix the typo\n[ ] run the tests"]
    assert finished.output == "1/3 done · now: fix the typo"  # what the call's line shows


async def test_what_cannot_be_a_list_gets_a_clear_answer(tmp_path: Path) -> None:
    too_many = {"steps": [{"step": f"s{n}", "state": "pending"} for n in range(MAX_STEPS + 1)]}
    two_now = {
        "steps": [{"step": "a", "state": "in_progress"}, {"step": "b", "state": "in_progress"}]
    }
    bad_state = {"steps": [{"step": "a", "state": "started"}]}
    as_text = {"steps": json.dumps(STEPS)}  # small models send the array as a string
    events, outputs = await run_todo(tmp_path, too_many, two_now, bad_state, as_text)
    assert outputs[0] == f"[error: {MAX_STEPS + 1} steps — keep the list to {MAX_STEPS} at most]"
    assert outputs[1] == "[error: more than one step is in_progress — mark one, the one you do now]"
    assert outputs[2].startswith("[error: invalid arguments for todo: ")
    assert outputs[3].startswith("[x] read greet.py")
    assert len([e for e in events if isinstance(e, TodoUpdated)]) == 1  # only the good one


def test_the_last_list_of_a_conversation_is_found_again() -> None:
    def calling(arguments: str) -> dict:
        function = {"name": "todo", "arguments": arguments}
        return {"role": "assistant", "tool_calls": [{"id": "1", "function": function}]}

    long = "x" * (MAX_STEP + 50)
    messages = [
        {"role": "user", "content": "go"},
        calling(json.dumps({"steps": STEPS})),
        calling("{not json"),  # a broken call is passed over
        {"role": "tool", "content": "[x] ..."},
        calling(json.dumps({"steps": [{"step": long, "state": "done"}, {"step": "b"}]})),
    ]
    assert last_todo_list(messages) == (
        TodoStep("x" * (MAX_STEP - 1) + "…", "done"),
        TodoStep("b", "pending"),
    )
    assert last_todo_list(messages[:1]) is None


@pytest.mark.parametrize(
    ("setting", "window", "declared"),
    [
        ("auto", None, False),  # the window unknown: a small model's, perhaps
        ("auto", 8192, False),
        ("auto", 16384, True),
        (True, None, True),
        (False, 65536, False),
    ],
)
def test_todo_is_declared_to_a_model_with_room_for_it(
    tmp_path: Path, setting: object, window: int | None, declared: bool
) -> None:
    """`todoTool: auto` declares todo only when the window is known and at least 16k tokens:
    SmolLM2-135M, offered it, wrote empty task lists until the loop detector stopped it."""
    from mm_tui.engine.context_window import ContextWindow

    engine = make_engine(tmp_path, ScriptedModel(), todoTool=setting)
    if window is not None:
        engine.meter.window = ContextWindow(window, "test")
    names = [d["function"]["name"] for d in engine.tools()]
    assert ("todo" in names) == declared
