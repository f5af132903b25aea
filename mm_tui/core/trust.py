"""The record of the project config files the person trusted, and text made safe to show.

A project's `.mm/config.yaml` may hold keys that change what runs or where data goes
(config/project.py lists them). A command the model ran may have written that file, so mm
applies those keys only once the person said "trust" for that file's exact bytes. The answer
is remembered here, in mm's state folder (`core/paths.py`), outside every project:
`trusted-configs.jsonl`, one line a file, `{"path": <the config file's real path>, "sha256":
<its bytes' SHA-256>}`. An edited file has another hash and is asked about again; deleting
the record, or a line of it, revokes.

The record is the person's, so it is read and written with care: never through a symbolic link
(O_NOFOLLOW), only when it is a regular file owned by the person, replaced atomically. A record
that is not that, or that does not parse, means "nothing trusted", with a one-line warning: mm
asks again rather than stops or guesses.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from mm_tui.core.files import READ_FLAGS, write_atomically
from mm_tui.core.paths import user_state_dir
from mm_tui.core.terminal_text import safe_display

RECORD_NAME = "trusted-configs.jsonl"
_HEX = frozenset("0123456789abcdef")
# files.READ_FLAGS (no wait on a FIFO, no terminal taken) and never through a link
_READ_FLAGS = READ_FLAGS | getattr(os, "O_NOFOLLOW", 0)


class Record(NamedTuple):
    """What the record file holds: (real path, sha256) pairs, and why it was not read, if so."""

    entries: frozenset[tuple[str, str]]
    warning: str | None = None


def record_path(home: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Where the trusted project configs are remembered."""
    return user_state_dir(home, environ) / RECORD_NAME


def digest(data: bytes) -> str:
    """A config file's identity in the record: the SHA-256 of its bytes, in hex."""
    return hashlib.sha256(data).hexdigest()


def _refused(path: Path, why: str) -> str:
    return f"mm: {path}: {why}; no project config is trusted (mm asks again)"


def read_record(path: Path) -> Record:
    """The record at `path`: empty when there is none; empty with a warning when it is not a
    regular file of the person's, or not what mm writes. Never raises for what is on disk."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return Record(frozenset())
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Record(frozenset(), _refused(path, "a symbolic link, not followed"))
        return Record(frozenset(), _refused(path, f"cannot read: {exc.strerror or exc}"))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Record(frozenset(), _refused(path, "not a regular file"))
        if info.st_uid != os.getuid():
            return Record(frozenset(), _refused(path, "not owned by you"))
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError as exc:
        return Record(frozenset(), _refused(path, f"cannot read: {exc.strerror or exc}"))
    finally:
        os.close(fd)
    entries: set[tuple[str, str]] = set()
    for number, line in enumerate(b"".join(chunks).split(b"\n"), 1):
        if not line.strip():
            continue
        entry = _entry(line)
        if entry is None:
            return Record(frozenset(), _refused(path, f"line {number} is not a trust record"))
        entries.add(entry)
    return Record(frozenset(entries))


def _entry(line: bytes) -> tuple[str, str] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    where, sha = data.get("path"), data.get("sha256")
    if not isinstance(where, str) or not isinstance(sha, str):
        return None
    if len(sha) != 64 or not set(sha) <= _HEX:
        return None
    return where, sha


def remember(path: Path, real_path: str, sha256: str) -> str | None:
    """Add (real_path, sha256) to the record at `path`, replacing what it said of that file.
    Returns None, or the one line saying why it could not be remembered (the answer then holds
    for this run only). A record that is a link or not the person's is left as it is."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            info = None
        if info is not None and not (stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()):
            return f"mm: {path}: not a regular file of yours; the trust is not remembered"
        old = read_record(path)  # a broken one is replaced: the person just answered
        kept = sorted(entry for entry in old.entries if entry[0] != real_path)
        lines = [
            json.dumps({"path": where, "sha256": sha}, ensure_ascii=False)
            for where, sha in [*kept, (real_path, sha256)]
        ]
        write_atomically(path, ("\n".join(lines) + "\n").encode(), mode=0o600)
    except OSError as exc:
        return f"mm: {path}: cannot write ({exc.strerror or exc}); the trust is not remembered"
    return None


def visible(text: str) -> str:
    """`text` safe to print on one line of a terminal: what `safe_display`'s exact form shows
    as escapes (controls, ESC, C1, bidirectional overrides, invisible characters), and the
    newline and tab too, so that a value cannot clear the screen, move the cursor, hide what
    follows it or pass for another line of the question."""
    return safe_display(text, exact=True).replace("\n", "\\n").replace("\t", "\\t")
