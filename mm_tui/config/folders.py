"""Where a project's sessions and skills are: folders the settings name, or mm's state folder."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mm_tui.config.settings import Settings
from mm_tui.core.files import resolve_path
from mm_tui.core.paths import is_playground, user_state_dir


def resolve_dir(settings_value: str, cwd: Path) -> Path:
    """sessionsDir and skillsDir name folders of the project, so relative ones start at cwd."""
    return resolve_path(settings_value, cwd)


OLD_SESSIONS = Path(".mm/sessions")
"""Where sessions were kept before they moved to mm's state folder: still read, never written."""


def project_key(cwd: Path) -> str:
    """A readable name for a working folder that no other folder gets: its name (letters,
    digits, `.`, `_`, `-` kept, at most 40) and 12 hex digits of the SHA-256 of its real path."""
    real = os.path.realpath(cwd)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real))[:40].lstrip(".") or "root"
    return f"{name}-{_sha256()(os.fsencode(real)).hexdigest()[:12]}"


@functools.cache
def _sha256() -> Any:
    """SHA-256, from CPython's own implementation where it has one (`_sha2` from 3.12,
    `_sha256` before): the same digest as hashlib's, which loads OpenSSL's and whose import
    cost the way to ready 1.5 to 2 ms (docs/performance.md). hashlib where neither is built.
    Looked for once: Python does not remember an import that failed, and searches sys.path
    again at each."""
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256  # pyright: ignore[reportMissingImports]
        else:
            from _sha256 import sha256  # pyright: ignore[reportMissingImports]
    except ImportError:
        from hashlib import sha256
    return sha256


def sessions_folders(
    settings: Settings,
    cwd: Path,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Path, ...]:
    """Where this folder's sessions are: the first is where new ones are written, the others
    are only read (`--resume`, `/sessions`). `sessionsDir` names one folder (relative ones start
    at `cwd`); by default it is `$XDG_STATE_HOME/mm/sessions/<project key>/`, then the project's
    old `.mm/sessions`."""
    if settings.sessions_dir:
        return (resolve_dir(settings.sessions_dir, cwd),)
    if is_playground(cwd):  # every demo's sessions together: `mm --demo --resume` finds them
        return (user_state_dir(home, environ) / "sessions" / "demo",)
    state = user_state_dir(home, environ) / "sessions" / project_key(cwd)
    return (state, cwd / OLD_SESSIONS)


def known_sessions_folders(
    settings: Settings,
    cwd: Path,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Path, ...]:
    """The session folders of every project mm knows, for a list not limited to one folder
    (ACP's `session/list` without `cwd`): each project's folder in the state folder (the
    demo's playgrounds apart, unless `cwd` is one), and `cwd`'s own (its old `.mm/sessions`
    too: another project's old folder is known only to that project). An absolute
    `sessionsDir` holds every project's sessions already; a relative one is each project's
    own, and only `cwd`'s is known."""
    own = sessions_folders(settings, cwd, home=home, environ=environ)
    if settings.sessions_dir:
        return own
    root = user_state_dir(home, environ) / "sessions"
    try:
        others = sorted(
            entry for entry in root.iterdir() if entry.name != "demo" and entry.is_dir()
        )
    except OSError:  # no sessions yet, or a state folder that cannot be read
        others = []
    return (*own, *(folder for folder in others if folder not in own))
