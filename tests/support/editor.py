"""An editor for `mm -acp`, as the ACP package's client: it keeps every session update, and
knows when it has handled all those the agent sent.

The connection hands each notification to a task of its own, so a response may arrive before
the updates sent ahead of it are handled. Given to the connection as an observer (`observers=
[editor.observe]`, a keyword of `acp.spawn_agent_process`), `observe` counts the updates as they
are read, in order; `caught_up` says when as many have been handled:

    await load_session(...)
    assert await await_until(editor.caught_up), "the replay never arrived whole"
"""

from __future__ import annotations

from typing import Any

import acp
from acp.connection import StreamDirection, StreamEvent
from acp.meta import CLIENT_METHODS

SESSION_UPDATE = CLIENT_METHODS["session_update"]


class Editor(acp.Client):
    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.announced = 0  # session updates read from the agent

    def observe(self, event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING and event.message.get("method") == (
            SESSION_UPDATE
        ):
            self.announced += 1

    def caught_up(self) -> bool:
        """Whether every session update read so far has been handled."""
        return len(self.updates) >= self.announced

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
