"""What a session's journal says of its snapshots and undos: which turns can be undone (each
with the snapshot taken before it), whether the last thing done was an /undo (then the next one
redoes it), and whether the model has yet to be told of one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mm_tui.core.frozen import mutable
from mm_tui.core.journal_records import RecordError, SnapshotRecord, UndoRecord, parse_record


@mutable
class UndoLog:
    turns: list[tuple[int, str]]  # (turn, snapshot before it) of the turns /undo can undo
    # the last /undo and the turns it undid, when nothing happened since (no turn): redo
    last_undo: tuple[UndoRecord, list[tuple[int, str]]] | None = None
    note: str | None = None  # what the model is told with the next request


def read_log(records: Iterable[Mapping[str, Any]]) -> UndoLog:
    """The journal's records, replayed for /undo."""
    log = UndoLog([])
    for raw in records:
        kind = raw.get("type")
        if kind == "message":
            message = raw.get("message")
            if isinstance(message, dict) and message.get("role") == "user":
                log.note = None
            continue
        if kind not in (SnapshotRecord.kind, UndoRecord.kind):
            continue
        try:
            record = parse_record(raw)
        except RecordError:  # a damaged record: passed over
            continue
        match record:
            case SnapshotRecord(turn=turn, snapshot=snapshot):
                log.turns.append((turn, snapshot))
                log.last_undo = None
            case UndoRecord(redo=False, turns=turns):
                undone = log.turns[-turns:] if turns else []
                del log.turns[len(log.turns) - len(undone) :]
                log.last_undo = (record, undone)
                log.note = record.note
            case UndoRecord(redo=True):
                if log.last_undo is not None:
                    log.turns.extend(log.last_undo[1])
                log.last_undo = None
                log.note = record.note
            case _:
                pass
    return log
