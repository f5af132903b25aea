"""Finding sessions: `--resume ID` and `--resume` over the session folders, and the sessions
list (read from the metadata files, so that listing does not read whole journals)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from mm_tui.engine.session import Session
from mm_tui.engine.session_files import (
    JOURNAL_SUFFIX,
    META_SUFFIX,
    SESSION_ID,
    SessionError,
    SessionInfo,
    id_of,
    mtime,
    read_journal,
    read_meta,
    session_paths,
)
from mm_tui.engine.session_v1 import meta_of_old, read_old


def latest_in(folder: Path) -> Session | None:
    """The session written last that holds a request (`--resume` without an id), or None
    when there is none. A session left empty (mm opened and closed without a request) is
    passed over: resuming it would hide the work of the one before; when all are empty,
    the newest.

    A damaged newest file is not passed over in silence: the person most likely meant that
    one, so its SessionError is raised, with how to open another."""
    folder = Path(folder)
    paths = sorted(session_paths(folder).values(), key=mtime, reverse=True)
    if not paths:
        return None
    newest: Session | None = None
    for index, path in enumerate(paths):
        try:
            session = Session.load(folder, id_of(path))
        except SessionError as exc:
            if index == 0:
                raise SessionError(
                    f"{exc} — it is the newest session file; --resume ID opens another"
                ) from None
            continue
        if any(m.get("role") == "user" for m in session.messages):
            return session
        newest = newest or session
    return newest


def find_session(folders: Sequence[Path], session_id: str, *, fork: bool = True) -> Session:
    """`--resume ID` over the session folders, the first first: a session found in a later one
    (the project's old `.mm/sessions`) moves to the first (`move_to`). Raises SessionError.
    The session is to be continued: its journal is claimed (`Session.load`), and one another
    mm writes goes on in a fork (with `fork` False: SessionError)."""
    for index, folder in enumerate(folders):
        folder = Path(folder)
        if re.fullmatch(SESSION_ID, session_id) and session_id in session_paths(folder):
            session = Session.load(folder, session_id, claim=not index, fork=fork)
            if index:
                session.move_to(folders[0])
            return session
    return Session.load(folders[0], session_id)  # its error: no such session


def latest_session(folders: Sequence[Path]) -> Session | None:
    """`--resume`: the newest session of the first folder that has any (moved to the first
    folder when found in a later one); None when none has."""
    for index, folder in enumerate(folders):
        session = latest_in(folder)
        if session is not None:
            if index:
                session.move_to(folders[0])
            elif session.path.exists():  # read again, claimed: see `Session.load`
                session = Session.load(folder, session.id, claim=True)
            return session
    return None


def list_sessions_in(folders: Sequence[Path]) -> list[SessionInfo]:
    """Every readable session of the folders, newest first; an id in two folders is listed
    once, as the first folder has it (a moved session's newer copy)."""
    seen: dict[str, SessionInfo] = {}
    for folder in folders:
        for info in list_sessions(folder):
            seen.setdefault(info.id, info)
    return sorted(seen.values(), key=lambda info: (info.updated, info.id), reverse=True)


def list_sessions(folder: Path) -> list[SessionInfo]:
    """Every readable session, newest first, from the metadata files (a journal without a
    readable one is read whole). Damaged files are left out, not fatal here."""
    folder = Path(folder)
    infos = []
    for session_id, path in session_paths(folder).items():
        try:
            if path.name.endswith(JOURNAL_SUFFIX):
                meta = read_meta(folder / f"{session_id}{META_SUFFIX}")
                if meta is None:
                    meta = Session.replayed(folder, session_id, read_journal(path)[0]).meta()
            else:
                meta = meta_of_old(read_old(path))
        except SessionError:
            continue
        infos.append(
            SessionInfo(
                id=session_id,
                created=meta["created"],
                updated=meta["updated"],
                title=meta["title"],
                message_count=meta["message_count"],
                cwd=meta["cwd"],
                model=meta["model"],
            )
        )
    infos.sort(key=lambda info: (info.updated, info.id), reverse=True)
    return infos
