"""The snapshots of one project and the /undo plans made from them (the package's docstring
says what is recorded and what is not)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from mm_tui.core.frozen import frozen
from mm_tui.engine.undo.restore import (
    CREATE,
    DELETE,
    RESTORE,
    Change,
    Failed,
    Left,
    apply_changes,
    plan_changes,
)
from mm_tui.engine.undo.snapshot import ProjectTooBig, scan
from mm_tui.engine.undo.store import Manifest, Store


class UndoError(Exception):
    """Why an /undo cannot be done, in words for the person."""


@frozen
class UndoPlan:
    """What an /undo will do: go back to `target` (the snapshot before turn `turn`, `turns`
    turns undone; or, `redo`, the files as they were before the last /undo), having recorded
    the files as they are now as `before`."""

    target: str
    before: str
    turn: int
    turns: int
    redo: bool
    changes: tuple[Change, ...]
    left: tuple[Left, ...]

    @property
    def title(self) -> str:
        if self.redo:
            return "/undo again: redo what the last /undo undid"
        turns = "the last turn" if self.turns == 1 else f"the last {self.turns} turns"
        return f"/undo {turns}: the files as they were before turn {self.turn}"

    def lines(self) -> list[str]:
        """The plan as the person reads it, a line a path."""
        lines = [f"{_VERB[change.action]:<10} {change.path}" for change in self.changes]
        lines += [f"{'left':<10} {left.path} ({left.why})" for left in self.left]
        return lines


_VERB = {RESTORE: "restore", CREATE: "bring back", DELETE: "delete"}


@frozen
class UndoDone:
    """An /undo done: what changed and what could not."""

    plan: UndoPlan
    done: tuple[Change, ...]
    failed: tuple[Failed, ...]

    @property
    def text(self) -> str:
        """One line for the person."""
        what = "redone" if self.plan.redo else f"undone ({_turns(self.plan.turns)})"
        counts = _counts(self.done) or "no file changed"
        failed = f"; {len(self.failed)} could not be: " if self.failed else ""
        failed += ", ".join(f"{f.path} ({f.why})" for f in self.failed[:5])
        left = f"; {len(self.plan.left)} left as they are" if self.plan.left else ""
        return f"undo: {what}: {counts}{failed}{left}"

    @property
    def note(self) -> str:
        """What the model is told, with the next request."""
        if self.plan.redo:
            head = "[mm: the person ran /undo again, which redid what the last /undo undid"
        else:
            head = (
                f"[mm: the person ran /undo: the project's files are back as they were before "
                f"turn {self.plan.turn} ({_turns(self.plan.turns)} undone; the conversation "
                "is kept, but what those turns did to the files is gone)"
            )
        parts = []
        for action, verb in ((RESTORE, "restored"), (CREATE, "brought back"), (DELETE, "deleted")):
            paths = [c.path for c in self.done if c.action == action]
            if paths:
                shown = ", ".join(paths[:20]) + (
                    f" and {len(paths) - 20} more" if len(paths) > 20 else ""
                )
                parts.append(f"{verb} {shown}")
        if self.failed:
            parts.append("could not restore " + ", ".join(f.path for f in self.failed[:20]))
        return (
            head
            + (": " + "; ".join(parts) if parts else "")
            + ". Read a file again before changing it.]"
        )


def _turns(n: int) -> str:
    return "1 turn" if n == 1 else f"{n} turns"


def _counts(changes: Iterable[Change]) -> str:
    counts = {RESTORE: 0, CREATE: 0, DELETE: 0}
    for change in changes:
        counts[change.action] += 1
    words = {RESTORE: "restored", CREATE: "brought back", DELETE: "deleted"}
    return ", ".join(f"{n} {words[a]}" for a, n in counts.items() if n)


def snapshot_id(now: datetime | None = None) -> str:
    """A new snapshot's id: sorts by time, unique by its random part."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{os.urandom(4).hex()}"


class Snapshots:
    """The snapshots of one project: `root`, kept in `folder`; `excluded`: folders not recorded
    (the session's, the state folder, when they are in the project)."""

    def __init__(
        self,
        root: Path,
        folder: Path,
        excluded: Iterable[Path] = (),
        secrets: Iterable[str] = (),
    ) -> None:
        self.root = root
        self.secrets = tuple(s.encode() for s in secrets)  # a file holding one: its name only
        self.store = Store(folder)
        real = os.path.realpath(root)
        self.excluded = frozenset(
            os.path.relpath(os.path.realpath(path), real).replace(os.sep, "/")
            for path in excluded
            if _inside(os.path.realpath(path), real)
        )
        self._last: tuple[str, Manifest] | None = None
        self.too_big = ""  # why the project cannot be recorded, once a walk found it too big

    def take(self) -> tuple[str, Manifest]:
        """Record the project's files now (in a thread: it reads the disk); the snapshot's id
        and manifest."""
        if self.too_big:
            raise ProjectTooBig(0, self.too_big)
        previous = self._previous()
        try:
            manifest = scan(
                self.root,
                self.store,
                previous[1] if previous else {},
                excluded=self.excluded,
                secrets=self.secrets,
            )
        except ProjectTooBig as exc:
            self.too_big = exc.strerror  # not walked again in this session: said once
            raise
        sid = snapshot_id()
        self.store.write(sid, manifest, previous)
        self._last = (sid, manifest)
        return sid, manifest

    def plan(
        self, target: str, *, turn: int, turns: int, redo: bool
    ) -> tuple[UndoPlan, Manifest, Manifest]:
        """The plan to go back to snapshot `target`, the files as they are now recorded first;
        with the two manifests. UndoError when the snapshot cannot be read."""
        if not target:
            raise UndoError(
                f"the files could not be recorded before turn {turn}: /undo cannot go back that far"
            )
        wanted = self.store.read(target)
        if wanted is None:
            raise UndoError(
                f"the snapshot before turn {turn} is missing or damaged ({self.store.folder})"
            )
        before, current = self.take()
        changes, left = plan_changes(wanted, current)
        plan = UndoPlan(target, before, turn, turns, redo, tuple(changes), tuple(left))
        return plan, wanted, current

    def apply(self, plan: UndoPlan, wanted: Manifest, current: Manifest) -> UndoDone:
        """Make the plan's changes (in a thread)."""
        done, failed = apply_changes(self.root, list(plan.changes), wanted, current, self.store)
        return UndoDone(plan, tuple(done), tuple(failed))

    def _previous(self) -> tuple[str, Manifest] | None:
        if self._last is None:
            latest = self.store.latest()
            manifest = self.store.read(latest) if latest else None
            if latest and manifest is not None:
                self._last = (latest, manifest)
        return self._last


def _inside(path: str, root: str) -> bool:
    return path != root and path.startswith(root.rstrip(os.sep) + os.sep)
