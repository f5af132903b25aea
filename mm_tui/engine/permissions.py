"""Who decides whether a tool call runs, by the session's mode, with decisions `s` and `n`
remembered for the rest of the session. The rule lives here alone: the engine applies it, and
tells front ends when a call runs (`ToolCallRunning`) rather than letting them guess.

The modes (`--mode`, `mode` in the config, Shift+Tab in the window, ACP's session modes):
- `ask`: a call that wants permission asks, unless the person answered `s` or `n` for its tool;
- `auto` (yolo): nothing asks;
- `plan`: the model looks and plans but changes nothing: write_file and edit_file are not
  declared (and refused if called), every bash command asks whatever was answered before, and
  the system prompt tells the model it is planning (`PLAN_NOTE`)."""

from __future__ import annotations

from mm_tui.core.events import Decision, Mode

MODES: tuple[Mode, ...] = ("ask", "auto", "plan")
PLAN_HIDDEN = frozenset({"write_file", "edit_file"})  # the tools plan mode does not declare
PLAN_ASKS = frozenset({"bash"})  # the tools plan mode asks for at every call

PLAN_NOTE = """\

You are in plan mode: the person wants a plan before anything changes. Read the code and run
commands that only look (each command is shown to the person first); do not change files. End
with a short numbered plan of the changes you would make. The person switches modes to let you
carry it out."""

MODE_TITLES: dict[Mode, str] = {
    "ask": "Ask",
    "auto": "Auto",
    "plan": "Plan",
}


def plan_refusal(tool: str) -> str:
    """What the model hears when it calls a tool plan mode does not declare."""
    return (
        f"[error: {tool} is not available in plan mode — the person has not allowed changes "
        "yet; finish the plan instead]"
    )


class Permissions:
    def __init__(self, yolo: bool, mode: Mode | None = None) -> None:
        self.mode: Mode = mode or ("auto" if yolo else "ask")
        self._remembered: dict[str, Decision] = {}

    @property
    def yolo(self) -> bool:
        return self.mode == "auto"

    def hides(self, tool: str) -> bool:
        """Whether the mode keeps `tool` from the model (not declared, refused when called)."""
        return self.mode == "plan" and tool in PLAN_HIDDEN

    def without_asking(self, tool: str, tool_wants_permission: bool) -> Decision | None:
        """The decision that stands for a call without a question: allowed for a tool that never
        asks and under `auto`, else the one remembered (`s` or `n`) in `ask`; None when the
        person must be asked (in `plan`, for every bash command whatever was answered)."""
        if self.mode == "plan" and tool in PLAN_ASKS:
            return None
        if not tool_wants_permission or self.mode == "auto":
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
