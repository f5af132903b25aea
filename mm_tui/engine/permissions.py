"""Who decides whether a tool call runs: yolo, or the person, with decisions `s` and `n`
remembered for the rest of the session. The rule lives here alone: the engine applies it, and
tells front ends when a call runs (`ToolCallRunning`) rather than letting them guess."""

from __future__ import annotations

from mm_tui.core.events import Decision


class Permissions:
    def __init__(self, yolo: bool) -> None:
        self.yolo = yolo
        self._remembered: dict[str, Decision] = {}

    def without_asking(self, tool: str, tool_wants_permission: bool) -> Decision | None:
        """The decision that stands for a call without a question: allowed under yolo or for a
        tool that never asks, else the one remembered (`s` or `n`); None when the person must
        be asked."""
        if self.yolo or not tool_wants_permission:
            return Decision.ALLOW_ONCE
        return self._remembered.get(tool)

    def record(self, tool: str, decision: Decision) -> None:
        if decision in (Decision.ALLOW_SESSION, Decision.NEVER):
            self._remembered[tool] = decision

    def standing(self) -> dict[str, Decision]:
        """Decisions remembered for the session, for the help screen."""
        return dict(self._remembered)

    def reset(self) -> None:
        self._remembered.clear()
