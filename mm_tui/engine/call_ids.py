"""Tool-call ids of their own. Ids are the model's, and models repeat them (the same id for two
calls of one answer, or the `call_0` of every answer): `distinct_ids` gives each call of the
conversation its own, since the result names its call by id and a strict server refuses a
repeated one.

`CallIds` keeps the ids a history holds as the history grows, so that each answer is checked
against what was added since the last one: reading the whole history at every answer cost a
turn of 2,000 calls 0.4 ms a call at its end, growing with the turn (docs/performance.md)."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice
from typing import Any

from mm_tui.engine.model_stream import ToolCall


class CallIds:
    """The ids of the tool calls in one history, read once per message. A history that is
    another list, or shorter than what was read, or whose last message read is no longer
    there (a compaction, a resumed session, /new) is read again whole. A message replaced in
    place keeps its calls' ids (`Session.shorten` cuts a result's text only)."""

    def __init__(self) -> None:
        self._history: list[dict[str, Any]] | None = None
        self._read = 0
        self._last: dict[str, Any] | None = None
        self._taken: set[str] = set()

    def taken(self, messages: list[dict[str, Any]]) -> set[str]:
        """The ids of the calls in `messages` (not to be changed by the caller)."""
        read = self._read
        if (
            messages is not self._history
            or len(messages) < read
            or (read and messages[read - 1] is not self._last)
        ):
            self._history, read, self._taken = messages, 0, set()
        taken = self._taken
        for message in islice(messages, read, None):
            for earlier in message.get("tool_calls") or ():
                if isinstance(earlier, dict):
                    taken.add(str(earlier.get("id")))
        self._read = len(messages)
        self._last = messages[-1] if messages else None
        return taken


def distinct_ids(
    calls: tuple[ToolCall, ...],
    messages: list[dict[str, Any]],
    known: CallIds | None = None,
) -> tuple[ToolCall, ...]:
    """`calls` (an answer's) with an id of their own each: one the conversation so far
    (`messages`, its ids kept by `known` from one answer to the next) or an earlier call of the
    answer already has becomes `<id>-2`, `-3`... The answer is recorded and its results sent
    with the new id, so call and result stay paired, where a repeated id would make a strict
    server refuse the conversation and pair a result with the wrong call when a session is
    shown again."""
    taken = (known or CallIds()).taken(messages)
    mine: set[str] = set()
    out = []
    for call in calls:
        new = call.id
        n = 1
        while new in taken or new in mine:
            n += 1
            new = f"{call.id}-{n}"
        mine.add(new)
        out.append(call if new == call.id else replace(call, id=new))
    return tuple(out)
