"""Who decides whether a tool call runs, by the session's mode, with decisions `s` and `n`
remembered for the rest of the session. The rule lives here alone: the engine applies it, and
tells front ends when a call runs (`ToolCallRunning`) rather than letting them guess.

The modes (`--mode`, `mode` in the config, Shift+Tab in the window, ACP's session modes):
- `ask`: a call that wants permission asks, unless the person answered `s` or `n` for its tool;
- `auto` (yolo): nothing asks;
- `plan`: the model looks and plans but changes nothing: write_file and edit_file are not
  declared (and refused if called), every bash command asks whatever was answered before, and
  the system prompt tells the model it is planning (`PLAN_NOTE`).

Over the modes stand the person's rules (`permission_rules.py`, the config's `permissions`): a
deny rule refuses in every mode (the caller refuses before asking here), an ask rule asks in
`ask` and `plan` even after an `s`, an allow rule lets a call run without a question (not a
bash command in `plan`). `auto` keeps only the deny rules, and asks when one of them might
match what cannot be known before the run (`$CMD -rf /`, a line the parser cannot read while
bash has deny rules): the shape of a command is no way around a rule."""

from __future__ import annotations

from mm_tui.config import Settings
from mm_tui.core.events import Decision, Mode
from mm_tui.core.text import one_line
from mm_tui.engine.permission_rules import PermissionRules, Verdict

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


def rule_refusal(rejection: str, tool: str, verdict: Verdict) -> str:
    """What the model hears for a call a deny rule refuses: which rule, and what it matched
    (`[command denied by the rule bash "rm *": rm -rf build]`), so that it neither asks
    again nor tries the same another way."""
    noun = rejection.removeprefix("[").split(" rejected", 1)[0]
    subject = one_line(verdict.subject, 120)
    return f'[{noun} denied by the rule {tool} "{verdict.rule}": {subject}]'


def with_reason(rejection: str, reason: str) -> str:
    """A refusal with the person's words: `[command rejected by the user: not on main]`."""
    reason = one_line(reason, 500)
    return f"{rejection.removesuffix(']')}: {reason}]" if reason else rejection


class Permissions:
    def __init__(
        self, yolo: bool, mode: Mode | None = None, rules: PermissionRules | None = None
    ) -> None:
        self.mode: Mode = mode or ("auto" if yolo else "ask")
        self.rules = rules or PermissionRules()
        self._remembered: dict[str, Decision] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> Permissions:
        return cls(settings.yolo, settings.mode, PermissionRules.from_config(settings.permissions))

    @property
    def yolo(self) -> bool:
        return self.mode == "auto"

    def hides(self, tool: str) -> bool:
        """Whether the mode keeps `tool` from the model (not declared, refused when called)."""
        return self.mode == "plan" and tool in PLAN_HIDDEN

    def without_asking(
        self, tool: str, tool_wants_permission: bool, verdict: Verdict | None = None
    ) -> Decision | None:
        """The decision that stands for a call without a question: allowed for a tool that never
        asks, under `auto` and by an allow rule, else the one remembered (`s` or `n`) in `ask`;
        None when the person must be asked (an ask rule; in `plan`, every bash command). A deny
        verdict is the caller's to refuse before this."""
        if verdict is not None and verdict.action == "ask":
            if self.mode != "auto" or self._doubt_in_auto(tool, verdict):
                return None
            return Decision.ALLOW_ONCE
        if self.mode == "plan" and tool in PLAN_ASKS:
            return None
        if self.mode == "auto":
            return Decision.ALLOW_ONCE
        remembered = self._remembered.get(tool)
        if remembered == Decision.NEVER:
            return remembered
        if not tool_wants_permission or (verdict is not None and verdict.action == "allow"):
            return Decision.ALLOW_ONCE
        return remembered

    def _doubt_in_auto(self, tool: str, verdict: Verdict) -> bool:
        """`auto` asks only where a deny rule might match what the rules cannot see."""
        if verdict.cause == "might":
            return True
        return verdict.cause == "unreadable" and self.rules.denies_any(tool)

    def record(self, tool: str, decision: Decision) -> None:
        if decision in (Decision.ALLOW_SESSION, Decision.NEVER):
            self._remembered[tool] = decision

    def standing(self) -> dict[str, Decision]:
        """Decisions remembered for the session, for the help screen."""
        return dict(self._remembered)

    def reset(self) -> None:
        self._remembered.clear()
