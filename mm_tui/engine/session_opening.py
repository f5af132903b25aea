"""Opening a saved session: its journal read (locked first when the session is to be continued,
a torn last line skipped and said), its records replayed into a `Session`, the calls a kill left
without a result answered, a format-1 file converted to a journal, and a session another mm
writes continued in a copy.

`Session.load` and `Session.replayed` hand their work to `load` and `replayed` here, giving
them the class, so that this module needs nothing of `session.py`, which imports it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mm_tui.core.journal_records import Header, HistoryRecord
from mm_tui.engine.journal_lock import JournalBusy, open_for_append, release_descriptor
from mm_tui.engine.session_files import (
    CONVERTED_SUFFIX,
    JOURNAL_SUFFIX,
    OLD_SUFFIX,
    SESSION_ID,
    SESSION_VERSION,
    SessionBusy,
    SessionError,
    answer_interrupted_tool_calls,
    checked_header,
    exists,
    now,
    read_journal,
    replay_history,
    settled,
)
from mm_tui.engine.session_v1 import old_records, read_old


def load(cls: Any, folder: Path, session_id: str, *, claim: bool = False, fork: bool = True) -> Any:
    """Reopen a session. A damaged journal raises SessionError and is left as it is; a torn
    last line is skipped, with a warning in `warnings`.

    `claim`: the session is to be continued, so its journal is locked for this process
    before it is read (nothing another mm writes can come between the reading and the
    lock). When another mm holds it, the session goes on in a fork, said in `warnings`, or
    with `fork` False SessionError says so."""
    folder = Path(folder)
    if not re.fullmatch(SESSION_ID, session_id):
        raise SessionError(f"mm: {session_id!r} is not a session id")
    path = folder / f"{session_id}{JOURNAL_SUFFIX}"
    old = folder / f"{session_id}{OLD_SUFFIX}"
    if not exists(path) and exists(old):
        return _converted(cls, folder, session_id, old)
    claimed, busy = _claimed(path, session_id, fork) if claim else (None, False)
    try:
        records, whole, torn = read_journal(path)
        if busy:  # the turn the other mm is in is its own: the copy starts before it
            records, torn = settled(records), 0
        session: Any = replayed(cls, folder, session_id, records)
    except BaseException:
        if claimed is not None:
            release_descriptor(*claimed)
        raise
    session._reopen_at = whole
    session._claim = claimed
    session._written = len(session.records)
    if torn:
        session.warnings.append(
            f"the last line of {path} was cut short ({torn} bytes: mm was stopped while "
            "writing it) and is skipped; everything before it is here"
        )
    _answer_interrupted(session)
    if busy:
        session._fork()
    return session


def _answer_interrupted(session: Any) -> None:
    """Calls a kill left without a result get `INTERRUPTED`, so a server takes the history
    (new records of the next save, or a history record when they go in the middle)."""
    repaired = answer_interrupted_tool_calls(session.messages)
    if repaired == session.messages:
        return
    session.repaired = True
    if repaired[: len(session.messages)] == session.messages:
        session.messages = repaired  # the answers are new records of the next save
    else:
        session.messages = repaired
        session._seen = len(repaired)
        session.records.append(HistoryRecord(time=now(), messages=tuple(repaired)).to_json())


def replayed(cls: Any, folder: Path, session_id: str, records: list[dict[str, Any]]) -> Any:
    """A session from its records; raises SessionError for records that do not make one."""
    path = folder / f"{session_id}{JOURNAL_SUFFIX}"
    header = checked_header(path, records)
    session: Any = cls(
        folder,
        session_id,
        cwd=header.cwd,
        model=header.model,
        provider=header.provider,
        base_url=header.base_url,
        created=header.created,
    )
    history = replay_history(path, records)
    session.records = records
    session.messages = history.messages
    session.tool_results = history.tool_results
    session.turns, session.errors = history.turns, history.errors
    session.updated = max(session.updated, history.updated)
    session._seen = len(history.messages)
    session.model = history.model or session.model
    return session


def _converted(cls: Any, folder: Path, session_id: str, old: Path) -> Any:
    """Open a format-1 file: read it, write its journal, keep the old file as `<id>.v1.json`."""
    data = read_old(old)
    header = Header(
        version=SESSION_VERSION,
        id=session_id,
        created=data["created"],
        cwd=data["cwd"],
        model=data["model"],
        provider=data["provider"],
        base_url=data["base_url"],
    )
    records = [header.to_json(), *old_records(data)]
    session: Any = replayed(cls, folder, session_id, records)
    session.updated = max(session.updated, data["updated"])
    try:
        session.save(touch=False)
        future = session.sync()
        if future is not None:
            future.result(30)
        failure = session._journal.take_failure() if session._journal else None
        if failure is not None:
            raise failure
        os.replace(old, folder / f"{session_id}{CONVERTED_SUFFIX}")
    except OSError as exc:
        # It still opens; the conversion is tried again at the next save or resume.
        session._journal, session._written, session._reopen_at = None, 0, None
        session.warnings.append(f"mm: {old}: could not be converted to a journal yet ({exc})")
    repaired = answer_interrupted_tool_calls(session.messages)
    if repaired != session.messages and repaired[: len(session.messages)] == session.messages:
        session.messages, session.repaired = repaired, True
    return session


def _claimed(
    path: Path, session_id: str, fork: bool
) -> tuple[tuple[int, tuple[int, int]] | None, bool]:
    """The journal opened and locked for this process, and whether another mm holds it (then
    SessionBusy without `fork`). A file mm cannot write is not claimed: reading says why, or
    the first save does."""
    try:
        return open_for_append(path), False
    except JournalBusy:
        if not fork:
            raise SessionBusy(
                f"mm: session {session_id} is open in another mm process, which writes "
                "it; close it there, or open it in a terminal (`mm --resume "
                f"{session_id}`), which goes on in a copy"
            ) from None
        return None, True
    except OSError:
        return None, False
