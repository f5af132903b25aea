"""One writer per journal: the descriptor that writes a journal holds an exclusive `flock` on it
for as long as the journal is open. Two processes appending to one journal would interleave
their records, and the history read back would send the model results that do not follow their
calls; another process that wants it gets `JournalBusy` (the session then goes on in a copy).
The lock goes with the descriptor, so a killed process leaves none behind. Within one process a
journal opened twice (a session reloaded) shares the one lock."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

try:
    import fcntl
except ImportError:  # no flock on this system: journals are not locked
    fcntl = None

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class JournalBusy(Exception):
    """Another process holds the journal's lock: it is writing the session."""


# A journal locked by this process: its inode -> [a descriptor of the locked open file, holders]
_locks: dict[tuple[int, int], list[int]] = {}


_locks_guard = threading.Lock()


def open_for_append(path: Path) -> tuple[int, tuple[int, int]]:
    """`path` opened for appending (never through a link) and locked for this process: the
    descriptor and the inode it locks (for `release_descriptor`). Raises JournalBusy when
    another process holds the lock, OSError when the file cannot be opened."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | NOFOLLOW)
    return lock_descriptor(fd)


def lock_descriptor(fd: int) -> tuple[int, tuple[int, int]]:
    """Lock the journal open on `fd` for this process, without waiting. Returns the descriptor
    to write with: `fd` itself, or, when this process has the journal locked already, a copy of
    the descriptor holding that lock (`fd` is closed), so that the lock lasts while either is
    open. Raises JournalBusy (and closes `fd`) when another process holds it."""
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    key = (info.st_dev, info.st_ino)
    with _locks_guard:
        held = _locks.get(key)
        if held is not None:
            os.close(fd)
            held[1] += 1
            return os.dup(held[0]), key
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise JournalBusy from None
            except OSError:  # a file system without locks: written unlocked, as before
                pass
        _locks[key] = [os.dup(fd), 1]
        return fd, key


def release_descriptor(fd: int, key: tuple[int, int]) -> None:
    """Close a descriptor `lock_descriptor` gave; the lock goes with the last of them."""
    with contextlib.suppress(OSError):
        os.close(fd)
    with _locks_guard:
        held = _locks.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del _locks[key]
            with contextlib.suppress(OSError):
                os.close(held[0])
