"""`/undo [N]` for an engine: the snapshot before each turn, then the plan and its changes
(engine/undo/ says what is recorded and how it is restored).

The journal says which snapshot belongs to which turn (a `snapshot` record at each turn's
start, an `undo` record for each /undo, engine/undo/log.py), so a resumed session can undo
the turns it had. The model is told what was undone with the next request: a note before the
person's next words, in the same user message (a message of its own would put two user
messages in a row, which some servers' templates refuse).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from mm_tui.config.folders import project_key
from mm_tui.core.events import EngineError, FilesRestored
from mm_tui.core.frozen import frozen
from mm_tui.core.journal_records import SnapshotRecord, UndoRecord
from mm_tui.core.paths import user_state_dir
from mm_tui.engine.session_files import now
from mm_tui.engine.turn_state import Emit
from mm_tui.engine.undo.log import read_log
from mm_tui.engine.undo.snapshot import ProjectTooBig
from mm_tui.engine.undo.snapshots import Snapshots, UndoDone, UndoError, UndoPlan
from mm_tui.engine.undo.store import Manifest

if TYPE_CHECKING:
    from pathlib import Path

    from mm_tui.core.redact import Redactor
    from mm_tui.engine.recorder import SessionRecorder
    from mm_tui.engine.session import Session


class Engine(Protocol):
    """What /undo needs of `engine.turn.Engine` (named, not imported: the engine imports this
    module)."""

    cwd: Path
    undo_note: str | None
    recorder: SessionRecorder
    redactor: Redactor

    @property
    def busy(self) -> bool: ...

    @property
    def session(self) -> Session: ...

    @property
    def snapshots(self) -> Snapshots: ...


__all__ = ["PendingUndo", "UndoDone", "UndoError", "UndoPlan", "project_snapshots"]

BUSY = "a turn is running: /undo waits for its end"


def project_snapshots(engine: Engine) -> Snapshots:
    """The snapshots of the engine's folder, in mm's state folder; the session's own folder and
    the state folder are not recorded when they are in the project."""
    state = user_state_dir()
    return Snapshots(
        engine.cwd,
        state / "undo" / project_key(engine.cwd),
        (state, engine.session.folder),
        secrets=engine.redactor.secrets,
    )


async def snapshot_before(engine: Engine, turn: int, emit: Emit) -> None:
    """Record the project's files before turn `turn`, off the loop; a failure costs a warning
    (the turn goes on, /undo cannot go back past it)."""
    said = engine.snapshots.too_big
    try:
        sid, _ = await asyncio.to_thread(engine.snapshots.take)
    except ProjectTooBig as exc:
        sid = ""
        if not said:  # said once a session, not at every turn
            emit(
                EngineError(
                    where="undo",
                    level="warning",
                    message=f"[warning: the project is too big for /undo to record ({exc.strerror})"
                    " — /undo is off for it in this session]",
                )
            )
    except OSError as exc:
        sid = ""
        emit(
            EngineError(
                where="undo",
                level="warning",
                message=f"[warning: the project's files could not be recorded before this turn "
                f"({exc.strerror or exc}): /undo cannot go back past it]",
            )
        )
    session = engine.session
    engine.recorder.save(
        emit, lambda: session.save_record(SnapshotRecord(time=now(), turn=turn, snapshot=sid))
    )


@frozen
class PendingUndo:
    """A plan waiting for the person's yes, with what applying it needs."""

    plan: UndoPlan
    wanted: Manifest
    current: Manifest
    records: int  # the journal's length when it was made: anything since makes it stale


async def plan_undo(engine: Engine, turns: int | None = None) -> PendingUndo:
    """What `/undo [turns]` will do (the files as they are now recorded first, off the loop);
    UndoError saying why it cannot be done. Right after an /undo, `/undo` alone redoes it;
    `/undo N` goes N turns further back."""
    if engine.busy:
        raise UndoError(BUSY)
    if turns is not None and turns < 1:
        raise UndoError("/undo N: N is a number of turns, 1 or more")
    log = read_log(engine.session.records)
    if log.last_undo is not None and turns is None:
        record = log.last_undo[0]
        target, turn, count, redo = record.before, record.turn, record.turns, True
    else:
        count = turns or 1
        if not log.turns:
            raise UndoError("no turn to undo: the files are recorded before each turn")
        if count > len(log.turns):
            can = "1 turn" if len(log.turns) == 1 else f"{len(log.turns)} turns"
            raise UndoError(f"/undo {count}: only {can} can be undone")
        turn, target = log.turns[-count]
        redo = False
    records = len(engine.session.records)
    try:
        plan, wanted, current = await asyncio.to_thread(
            engine.snapshots.plan, target, turn=turn, turns=count, redo=redo
        )
    except OSError as exc:
        raise UndoError(f"the files cannot be recorded: {exc.strerror or exc}") from None
    return PendingUndo(plan, wanted, current, records)


async def apply_undo(engine: Engine, pending: PendingUndo, emit: Emit) -> UndoDone:
    """Make the plan's changes (off the loop), record them in the journal, tell the front end
    (`FilesRestored`) and, with the next request, the model."""
    if engine.busy:
        raise UndoError(BUSY)
    if pending.records != len(engine.session.records):
        raise UndoError("the session went on since this /undo was planned: ask /undo again")
    plan = pending.plan
    done = await asyncio.to_thread(engine.snapshots.apply, plan, pending.wanted, pending.current)
    record = UndoRecord(
        time=now(),
        snapshot=plan.target,
        before=plan.before,
        turn=plan.turn,
        turns=plan.turns,
        redo=plan.redo,
        text=done.text,
        note=done.note,
    )
    session = engine.session
    engine.recorder.save(emit, lambda: session.save_record(record))
    engine.undo_note = done.note
    emit(FilesRestored(text=done.text, redo=plan.redo))
    return done
