"""The permission questions waiting for the person, by (agent, call id).

A question travels as data (`PermissionRequested`, which a front end may keep, print or send
over ACP) and its answer comes back as a command: `Engine.answer(agent, call_id, decision)`,
which ends here. The engine asks its own questions; an asked agent's questions (its child
process asks over ACP) wait here too, under the agent's name, so one front end answers both
the same way. A question is withdrawn when its call ends without an answer (a cancelled turn,
a finished ask): an answer that comes later finds nothing and changes nothing.
"""

from __future__ import annotations

import asyncio

from mm_tui.core.events import Answer, Decision

Key = tuple[str | None, str]  # (the asked agent's name, or None for this agent; the call's id)


class Questions:
    def __init__(self) -> None:
        self._waiting: dict[Key, asyncio.Future[Answer]] = {}

    def ask(self, agent: str | None, call_id: str) -> asyncio.Future[Answer]:
        """A question for the call: the future its asker awaits. A question the same call
        already had is withdrawn first (one call, one question)."""
        self.withdraw(agent, call_id)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[(agent, call_id)] = future
        future.add_done_callback(lambda done: self._forget((agent, call_id), done))
        return future

    def answer(self, agent: str | None, call_id: str, answer: Decision | Answer) -> bool:
        """The person's answer for the call (a bare decision, or one with a reason or a rule);
        False when no question of it waits (answered already, withdrawn, or never asked)."""
        future = self._waiting.pop((agent, call_id), None)
        if future is None or future.done():
            return False
        future.set_result(answer if isinstance(answer, Answer) else Answer(answer))
        return True

    def withdraw(self, agent: str | None, call_id: str) -> None:
        """The call goes on without an answer: its question, if one waits, is dropped."""
        future = self._waiting.pop((agent, call_id), None)
        if future is not None and not future.done():
            future.cancel()

    def waiting(self, agent: str | None, call_id: str) -> bool:
        return (agent, call_id) in self._waiting

    async def settled(self, agent: str | None, call_id: str) -> None:
        """Until the call's question is answered or withdrawn (at once when none waits)."""
        future = self._waiting.get((agent, call_id))
        if future is not None:
            await asyncio.wait({future})

    def _forget(self, key: Key, done: asyncio.Future[Answer]) -> None:
        if self._waiting.get(key) is done:
            del self._waiting[key]
