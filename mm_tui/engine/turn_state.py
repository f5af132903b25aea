"""What a turn carries between the engine's collaborators: the state of the turn under way, and
the exception that ends it early with a reason (the turn loop catches it, records it, and ends
the turn with it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

from mm_tui.core.events import Event, StopReason, Usage
from mm_tui.core.frozen import mutable
from mm_tui.engine.model_stream import ToolCall

Emit = Callable[[Event], None]


class StopTurn(Exception):  # noqa: N818 - control flow inside the loop
    """The turn ends here: `reason` for its recap, `message` for the person and the journal,
    `where` the error record names (generation, provider)."""

    def __init__(self, reason: StopReason, message: str, where: str) -> None:
        super().__init__(message)
        self.reason: StopReason = reason
        self.message = message
        self.where = where


@mutable
class TurnState:
    counters: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    pending: list[ToolCall] = field(default_factory=list)  # calls of the last message not answered
    titles: dict[str, str] = field(default_factory=dict)  # calls whose line a front end shows
    history: list[dict[str, Any]] = field(default_factory=list)  # as the turn started
    overflowed: bool = False  # the server refused the current request as too big, once

    def count(self, counter: str | None) -> None:
        if counter:
            self.counters[counter] = self.counters.get(counter, 0) + 1
