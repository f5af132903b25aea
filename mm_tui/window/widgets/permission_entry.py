"""The line a permission box opens for an answer that needs words: the rule to allow (as
suggested, editable; Tab switches where it is kept: this project or the person's own config)
or the reason a rejection gives the model. Enter gives it, Esc goes back to the a/s/r/n keys."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

PLACES = {
    "project": "this project (.mm/config.yaml)",
    "user": "every project (your own config.yaml)",
}


class PermissionEntry(Input):
    DEFAULT_CSS = """
    PermissionEntry { height: 1; border: none; padding: 0 1; background: $boost; }
    PermissionEntry:focus { border: none; }
    """
    BINDINGS = [
        Binding("tab", "switch_place", "where", show=False, priority=True),
        Binding("escape", "back", "back", show=False, priority=True),
    ]

    class Back(Message):
        """Esc: the box shows its keys again, unanswered."""

    class Switched(Message):
        """Tab: the rule is to be kept in the other place."""

    def __init__(self, kind: str, value: str = "", *, id: str | None = None) -> None:  # noqa: A002
        placeholder = "why: the model reads this" if kind == "reason" else "a pattern"
        super().__init__(value=value, placeholder=placeholder, id=id, select_on_focus=False)
        self.kind = kind  # "rule" or "reason"
        self.place = "project"

    def action_switch_place(self) -> None:
        if self.kind == "rule":
            self.place = "user" if self.place == "project" else "project"
            self.post_message(self.Switched())

    def action_back(self) -> None:
        self.post_message(self.Back())
