"""What a session remembers between its client's requests: a turn's updates name tool calls by
ids and paths given earlier in the session, and a prompt must know whether one already runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mm_tui.engine.turn import Engine


@dataclass
class AcpSession:
    """One ACP session: its engine and what the translation of its events needs to remember."""

    id: str
    engine: Engine
    conn: Any  # the client's connection, where the session's updates go
    prompting: bool = False
    cancel_requested: bool = False
    used_ids: set[str] = field(default_factory=set)  # ACP tool call ids given in this session
    ids: dict[tuple[str | None, str], str] = field(default_factory=dict)  # this turn's calls
    locations: dict[str, tuple[str, ...]] = field(default_factory=dict)  # by ACP id
    text_sent: bool = False  # agent text went out in this turn (an error then starts a paragraph)

    def acp_id(self, agent: str | None, call_id: str, *, new: bool = False) -> str:
        """The ACP id of an engine call: the model's own id, unless a model reused one in this
        session (small servers count from 0 each answer) or the call is a child agent's."""
        key = (agent, call_id)
        if not new and key in self.ids:
            return self.ids[key]
        base = f"{agent}:{call_id}" if agent else call_id
        candidate, n = base, 1
        while candidate in self.used_ids:
            n += 1
            candidate = f"{base}#{n}"
        self.used_ids.add(candidate)
        self.ids[key] = candidate
        return candidate

    async def send(self, update: Any) -> None:
        await self.conn.session_update(session_id=self.id, update=update)
