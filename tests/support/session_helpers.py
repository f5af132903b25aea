"""Reading what a session wrote, as the tests check it: the journal loaded back by the code that
`--resume` runs, after the writer thread has written everything queued."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mm_tui.config import Settings, sessions_folders
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import Session


def saved(session_or_folder: Session | Path, session_id: str | None = None) -> dict[str, Any]:
    """The session as it is on disk, as one document (`Session.to_dict`)."""
    if isinstance(session_or_folder, Session):
        folder, session_id = session_or_folder.folder, session_or_folder.id
    else:
        folder = Path(session_or_folder)
    assert session_id is not None
    flush_all()
    return Session.load(folder, session_id).to_dict()


def journal_files(folder: Path) -> list[Path]:
    """The session journals of a folder, by name."""
    flush_all()
    return sorted(p for p in Path(folder).glob("*.jsonl") if not p.name.startswith("."))


def sessions_of(cwd: Path, home: Path | None = None) -> Path:
    """Where `mm` run in `cwd` with the environment of `clean_env(home)` (home: `cwd` by
    default, as `support.program.mm` runs it) writes its sessions: mm's state folder."""
    from support.env import home_variables

    home = cwd if home is None else home
    return sessions_folders(Settings(), cwd, home=home, environ=home_variables(home))[0]
