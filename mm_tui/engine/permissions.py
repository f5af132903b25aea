"""Who decides whether a tool call runs: yolo, or the person, with decisions `s` and `n`
remembered for the rest of the session."""

from __future__ import annotations

from mm_tui.core.events import Decision


class Permissions:
    def __init__(self, yolo: bool) -> None:
        self.yolo = yolo
        self._remembered: dict[str, Decision] = {}

    def must_ask(self, tool: str, tool_wants_permission: bool) -> bool:
        return not self.yolo and tool_wants_permission and tool not in self._remembered

    def remembered(self, tool: str) -> Decision | None:
        """The standing decision for a tool (`s` or `n`), or None. Meaningless under yolo."""
        if self.yolo:
            return None
        return self._remembered.get(tool)

    def record(self, tool: str, decision: Decision) -> None:
        if decision in (Decision.ALLOW_SESSION, Decision.NEVER):
            self._remembered[tool] = decision

    def standing(self) -> dict[str, Decision]:
        """Decisions remembered for the session, for the help screen."""
        return dict(self._remembered)

    def reset(self) -> None:
        self._remembered.clear()
