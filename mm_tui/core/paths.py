"""Where mm keeps the person's own configuration: one rule for every file there.

`$XDG_CONFIG_HOME/mm` when that variable holds an absolute path (the XDG Base Directory rule: a
relative one is ignored), else `~/.config/mm`: config.yaml, AGENTS.md and themes/ are all read
from this folder, so that a person who moved their configuration finds all of mm's there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def user_config_dir(home: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """mm's folder of the person's configuration (`home` and `environ`: the process's by
    default)."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    xdg = environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"
    return base / "mm"


def shown_path(path: Path, home: Path | None = None) -> str:
    """A path as a person reads it: `~/…` under their home folder."""
    home = Path.home() if home is None else home
    try:
        return f"~/{path.relative_to(home)}"
    except ValueError:
        return str(path)


def user_state_dir(home: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """mm's state folder: `$XDG_STATE_HOME/mm` when that variable holds an absolute path, else
    `~/.local/state/mm`. It holds what mm remembers for the person (sessions, the trusted
    project configs, line mode's history): outside every project, so that nothing a project
    holds, or a command run in it writes, is read back as the person's own."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    xdg = environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "state"
    return base / "mm"


PLAYGROUND_PREFIX = "mm-demo-"
"""The demo's playgrounds: `mm-demo-…` folders of the temp folder (engine/playground.py)."""


def is_playground(folder: Path) -> bool:
    """Whether `folder` is one of the demo's throw-away playgrounds, whose sessions are kept
    together (each demo has a playground of its own, so a demo session could not be resumed
    by the next demo)."""
    import tempfile

    return folder.name.startswith(PLAYGROUND_PREFIX) and folder.parent == Path(
        tempfile.gettempdir()
    )
