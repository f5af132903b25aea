"""The session folder's files, apart from the writer: reading a journal's records back (a torn
last line told from a damaged file), replacing a file in one step, making the folder, syncing a
rename, and clearing the temporary files of killed processes."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path
from typing import Any

from mm_tui.core.files import TEMP_SUFFIX, write_atomically


class JournalDamaged(Exception):
    """A line other than the last one is not a JSON object: the file is damaged, not torn."""

    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"line {line}: {why}")
        self.line = line
        self.why = why


def read_records(raw: bytes) -> tuple[list[dict[str, Any]], int, int]:
    """The records of a journal's bytes, the number of bytes of whole lines, and the size of a
    torn last line that was skipped (0 when none). A last line that does not parse, or has no
    newline, is torn: a kill in the middle of a write. Any other bad line raises JournalDamaged."""
    records: list[dict[str, Any]] = []
    pos = 0
    number = 0
    end = len(raw)
    while pos < end:
        number += 1
        newline = raw.find(b"\n", pos)
        last = newline == -1 or newline == end - 1
        stop = end if newline == -1 else newline
        line = raw[pos:stop]
        try:
            record = json.loads(line) if line.strip() else None
        except UnicodeDecodeError:
            if last:
                return records, pos, end - pos
            raise JournalDamaged(number, "not UTF-8 text") from None
        except ValueError as exc:
            if last:
                return records, pos, end - pos
            raise JournalDamaged(number, f"not JSON ({exc})") from None
        if newline == -1:  # whole JSON but no newline: the write stopped just before it
            return records, pos, end - pos
        if record is not None:
            if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                raise JournalDamaged(number, "not a journal record")
            records.append(record)
        pos = newline + 1
    return records, pos, 0


def replace_file(path: Path, data: bytes, *, sync: bool) -> None:
    """Replace `path` in one step (temporary file, rename): a reader sees the old or the new.
    Private to its owner; the temporary file named by the pid, for `remove_stale_temps`; with
    `sync`, the rename made durable too."""
    temp = path.parent / f".{path.name}.{os.getpid()}{TEMP_SUFFIX}"
    write_atomically(path, data, new_mode=0o600, temp=temp, sync=sync)
    if sync:
        fsync_folder(path.parent)


def make_folder(folder: Path) -> None:
    """Create the session folder; when something else stands in its way, say what."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        try:
            folder.stat()
        except OSError as exc:  # a link loop, or a link to nothing
            raise OSError(exc.errno, exc.strerror, str(folder)) from None
        raise NotADirectoryError(
            errno.ENOTDIR, "the session folder is a file, not a folder", str(folder)
        ) from None


def fsync_folder(folder: Path) -> None:
    """Make a rename itself durable: without it a power cut can bring the old file back."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a system that cannot open folders (Windows) cannot sync them either
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stale_temps(folder: Path) -> None:
    """Delete temporary files left by killed processes (`.<name>.<pid>.tmp`); those of live
    processes are in use."""
    try:
        temps = list(folder.glob(f".*{TEMP_SUFFIX}"))
    except OSError:
        return
    for temp in temps:
        pid = temp.name[: -len(TEMP_SUFFIX)].rpartition(".")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                temp.unlink()


def _alive(pid: int) -> bool:
    if os.name != "posix":  # elsewhere signal 0 is no probe; keep the file rather than guess
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True
