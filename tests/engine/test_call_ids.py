"""Each tool call of a conversation with an id of its own, and the history's ids kept as it
grows."""

from __future__ import annotations

from typing import Any

from mm_tui.engine.call_ids import CallIds, distinct_ids
from mm_tui.engine.model_stream import ToolCall


def test_repeated_ids_become_distinct():
    """Within an answer and against the conversation so far: the second `x` is `x-2`, and an
    id an earlier answer used moves on to the next free number."""
    earlier = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "y"}, {"id": "y-2"}]},
        {"role": "tool", "tool_call_id": "y"},
    ]
    calls = (ToolCall("x", "bash", "{}"), ToolCall("x", "bash", "1"), ToolCall("y", "a", ""))
    assert distinct_ids(calls, earlier) == (
        ToolCall("x", "bash", "{}"),
        ToolCall("x-2", "bash", "1"),
        ToolCall("y-3", "a", ""),
    )
    fresh = (ToolCall("z", "bash", "{}"),)
    assert distinct_ids(fresh, earlier) == fresh


class Counted(dict):
    """A message that counts how often its calls are looked at."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        if key == "tool_calls":
            Counted.reads += 1
        return super().get(key, default)


def answer(history: list[dict[str, Any]], known: CallIds, call_id: str) -> str:
    """A model's answer of one call named `call_id`, recorded as the round trip records it."""
    (call,) = distinct_ids((ToolCall(call_id, "bash", "{}"),), history, known)
    history.append(Counted(role="assistant", tool_calls=[{"id": call.id}]))
    history.append(Counted(role="tool", tool_call_id=call.id, content="ok"))
    return call.id


def test_a_growing_history_is_read_once_per_message():
    """A turn of 300 calls: each answer reads only the messages added since the one before
    (reading the whole history each time read 90,000 of them), and the ids are those a reading
    of the whole history gives."""
    history: list[dict[str, Any]] = [Counted(role="user", content="go")]
    known = CallIds()
    Counted.reads = 0
    ids = [answer(history, known, "call_0") for _ in range(300)]
    assert Counted.reads == len(history) - 2  # the last answer's two are not read yet
    assert ids[:3] == ["call_0", "call_0-2", "call_0-3"] and len(set(ids)) == 300
    assert known.taken(history) == set(ids)


def test_a_history_replaced_or_shortened_is_read_again():
    """An undo or a cut leaves a shorter list, or another message where the last one read was;
    a compaction or a resumed session gives another list: the ids are read again whole, and an
    id that left the history is free again."""
    known = CallIds()
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for _ in range(3):
        answer(history, known, "a")
    assert known.taken(history) == {"a", "a-2", "a-3"}
    del history[3:]  # the same list, shorter
    assert answer(history, known, "a") == "a-2"
    assert known.taken(history) == {"a", "a-2"}
    history[-1] = {"role": "assistant", "tool_calls": [{"id": "b"}]}  # the last read, replaced
    assert known.taken(history) == {"a", "a-2", "b"}
    edited = [{"role": "assistant", "tool_calls": [{"id": "c"}]}, *history[1:]]
    assert known.taken(edited) == {"a", "a-2", "b", "c"}  # another list, the same last message
    summary = [{"role": "user", "content": "a summary"}]
    assert answer(summary, known, "a") == "a"  # another list
    assert answer(history, known, "b") == "b-2"
