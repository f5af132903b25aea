"""The session's writes for an engine: each change saved as it happens (nothing of a turn is
lost when the process dies in the middle of it), the error records, the turn's record, and the
wait for the journal's fsync at a turn's end. A session folder that cannot be written costs one
warning, never the turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from mm_tui.core.events import EngineError, TurnEnded
from mm_tui.core.journal_records import ToolRecord
from mm_tui.engine.session import Session
from mm_tui.engine.turn_state import Emit


class SessionRecorder:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._warned = False  # the warning that the session cannot be written: said once

    def switch(self, session: Session) -> None:
        """`/new` or a session reopened: the one left is closed (its journal synced in the
        writer thread)."""
        if session is not self.session:
            self.session.close()
        self.session = session

    def save(self, emit: Emit, change: Callable[[], None] | None = None) -> None:
        """Save the session (after `change`, a Session method that records and saves)."""
        try:
            (change or self.session.save)()
        except OSError as exc:
            if not self._warned:
                self._warned = True
                emit(
                    EngineError(
                        where="session",
                        level="warning",
                        message=f"[warning: the session file cannot be written ({exc}) — "
                        "the turn goes on, but this session will not be resumable]",
                    ),
                )

    def error(self, emit: Emit, where: str, message: str) -> None:
        """An error the turn ends with: in the journal, then to the front end."""
        self.save(emit, lambda: self.session.add_error(where, message))
        emit(EngineError(where=where, message=message))

    def keep_partial(self, text: list[str], thought: list[str]) -> None:
        """What the model said before a failure stays in the history: nothing is lost."""
        if text:
            message = {"role": "assistant", "content": "".join(text)}
            self.session.add_message(message, thought="".join(thought) or None)

    def tool_result(self, call_id: str, output: str, tool: ToolRecord) -> None:
        """A call's result for the model, with what the journal keeps of the call (`tool`)."""
        self.session.add_message(
            {"role": "tool", "tool_call_id": call_id, "content": output}, tool=tool
        )

    def turn(self, emit: Emit, ended: TurnEnded) -> None:
        """The turn's record. What it says of the context is the figure its recap showed (a
        resumed session counts on from it), and whether the server counted any of it; nothing
        while the window is unknown."""
        usage, known = ended.usage, ended.context_window is not None
        self.save(
            emit,
            lambda: self.session.add_turn(
                counters=ended.counters,
                usage={
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                },
                elapsed=round(ended.elapsed, 3),
                stop_reason=ended.stop_reason,
                context_used=ended.context_used if known else None,
                context_window=ended.context_window,
                context_estimated=known and ended.context_estimated,
            ),
        )

    async def synced(self, emit: Emit) -> None:
        """Wait for the journal's fsync (in its writer thread: the loop goes on); a write that
        failed meanwhile is warned of now."""
        future = self.session.sync()
        if future is not None:
            waiting = asyncio.wrap_future(future)
            try:
                await asyncio.shield(waiting)
            except asyncio.CancelledError:  # the turn ends all the same; the sync goes on
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
            except OSError:
                pass
        self.save(emit)

    async def close(self) -> None:
        """Close the session's journal and wait for it, off the loop."""
        future = self.session.close()
        if future is not None:
            try:
                await asyncio.shield(asyncio.wrap_future(future))
            except (asyncio.CancelledError, OSError):
                pass
