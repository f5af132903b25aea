"""Folders the tests work in: the demo's small project, in a per-test folder or, for pictures,
in the one fixed folder the pictures show.

Every test gets its own folder (pytest's tmp_path), so runs can go side by side. The exception is
the window pictures (tests/window/test_snapshots.py): the header shows the working folder, so it
must be the same path in every run, or the SVGs would differ. That folder is shared by every run on
the machine; `fixed_folder()` holds an exclusive lock on a file beside it (fcntl.flock) while a
test uses it, so two runs at once take turns instead of emptying each other's folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mm_tui.engine.playground import PLAYGROUND

FIXED_FOLDER = Path("/tmp/mm-test-playground")


def playground(folder: Path) -> Path:
    """The demo's small project in `folder`, emptied first."""
    shutil.rmtree(folder, ignore_errors=True)
    for name, content in PLAYGROUND.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return folder


@contextlib.contextmanager
def held(folder: Path) -> Iterator[Path]:
    """`folder`, for this process alone until the block ends: an exclusive lock on
    `folder`.lock (beside it: the folder itself is emptied and made again). Another process
    asking for it waits; the lock goes with the process, however it ends."""
    lock_path = folder.with_name(folder.name + ".lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def fixed_folder() -> Iterator[Path]:
    """The demo's project in FIXED_FOLDER, held for the duration of the block."""
    with held(FIXED_FOLDER) as folder:
        yield playground(folder)


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under `folder` and what it holds (a link: where it leads): any change shows.
    For the sandbox's tests, which check that a command changed nothing outside the project."""
    seen: dict[str, str] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root, name)
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                seen[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                seen[rel] = "/"
            else:
                seen[rel] = path.read_text()
    return seen


def live_in(monkeypatch: Any, home: Path, tmp: Path) -> None:
    """This process's HOME, TMPDIR and XDG folders in a test's own home and temp folder (what a
    command or a tool then works out from them), no fake Landlock ABI: the sandbox's tests."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("MM_SANDBOX_FAKE_ABI", raising=False)
