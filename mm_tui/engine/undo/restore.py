"""Putting the project back as a snapshot recorded it: first a plan (what will be restored,
brought back, deleted, and what cannot be), then, when the person said yes, the changes.

The plan compares two manifests: the snapshot's and one taken just before (which is what a
second /undo goes back to). A path recorded by name only on either side (a large file, a
skipped folder such as `.git`) is never touched: it is listed as left as it is, with why.

Applying never goes through a link and never leaves the project, whatever the tree holds now
(a command of the model may have planted a link to `~/.ssh` where a folder was): every path is
checked to be relative and plain (no `..`, no empty part), each folder on the way is opened with
O_NOFOLLOW relative to the one before it, a file is written to a temporary name in its folder
and renamed over the old name (a rename replaces a link, it does not write through it), and
links and files are removed by name (unlink removes a link, not what it points to). A path that
changed again since the plan was made (the person edited it meanwhile) is left as it is and
said so: nothing is overwritten that the plan did not see.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path

from mm_tui.core.files import write_atomically
from mm_tui.core.frozen import frozen
from mm_tui.engine.undo.store import DIR, FILE, LINK, Entry, Manifest, Store

RESTORE, CREATE, DELETE = "restore", "create", "delete"
"""What a change does: a path that changed gets its old contents (or kind, or mode) back, one
that was deleted is brought back, one that was created is deleted."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@frozen
class Change:
    """One path the plan changes."""

    path: str
    action: str  # RESTORE, CREATE or DELETE


@frozen
class Left:
    """A path that changed but is not restored, and why."""

    path: str
    why: str


@frozen
class Failed:
    """A change that could not be made, and why."""

    path: str
    why: str


def plan_changes(target: Manifest, current: Manifest) -> tuple[list[Change], list[Left]]:
    """What it takes to go from `current` back to `target`, in path order."""
    changes: list[Change] = []
    left: list[Left] = []
    for path in sorted(target.keys() | current.keys()):
        was, now = target.get(path), current.get(path)
        if was is not None and now is not None and _same(was, now):
            continue
        if not safe_path(path):
            left.append(Left(path, "not a plain path in the project"))
        elif now is None:
            assert was is not None
            if was.name_only:
                left.append(Left(path, f"deleted, but recorded by name only ({was.name_only})"))
            else:
                changes.append(Change(path, CREATE))
        elif was is None:
            if now.name_only:
                left.append(Left(path, f"new, recorded by name only ({now.name_only})"))
            else:
                changes.append(Change(path, DELETE))
        elif was.name_only or now.name_only:
            why = was.name_only or now.name_only
            left.append(Left(path, f"changed, but recorded by name only ({why})"))
        else:
            changes.append(Change(path, RESTORE))
    # a folder to delete that holds something left as it is stays too
    kept = [entry.path + "/" for entry in left]
    if kept:
        for change in [c for c in changes if c.action != CREATE]:
            inside = change.path + "/"
            if current[change.path].kind == DIR and any(k.startswith(inside) for k in kept):
                changes.remove(change)
                left.append(Left(change.path, "holds files recorded by name only"))
        left.sort(key=lambda entry: entry.path)
    return changes, left


def _same(was: Entry, now: Entry) -> bool:
    if was.kind != now.kind or was.mode != now.mode or was.name_only != now.name_only:
        return False
    if was.name_only:  # its size and times are all there is to compare
        return (was.size, was.mtime_ns) == (now.size, now.mtime_ns)
    return was.data == now.data


def safe_path(path: str) -> bool:
    """A relative path of plain names: nothing that could lead out of the project."""
    if not path or path.startswith("/") or "\0" in path:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def apply_changes(
    root: str | os.PathLike[str],
    changes: list[Change],
    target: Manifest,
    current: Manifest,
    store: Store,
) -> tuple[list[Change], list[Failed]]:
    """Make `changes` under `root`; those made and those that failed."""
    failed: dict[str, Failed] = {}
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        by_depth = sorted(changes, key=lambda c: (c.path.count("/"), c.path))
        # 1. what is in the way goes, deepest first: created paths, and changed kinds
        for change in reversed(by_depth):
            now = current.get(change.path)
            was = target.get(change.path)
            if now is None or (was is not None and was.kind == now.kind):
                continue
            why = _guarded(root_fd, change.path, partial(_remove, now=now))
            if why:
                failed[change.path] = Failed(change.path, why)
        # 2. what the snapshot had comes back, shallowest first
        for change in by_depth:
            was = target.get(change.path)
            if was is None or change.path in failed:
                continue
            now = current.get(change.path)
            same_kind = now is not None and now.kind == was.kind
            put = partial(_put, was=was, now=now if same_kind else None, store=store)
            why = _guarded(root_fd, change.path, put)
            if why:
                failed[change.path] = Failed(change.path, why)
        # 3. folders' permission bits last (a read-only folder would refuse what goes in it)
        for change in reversed(by_depth):
            was = target.get(change.path)
            if was is None or was.kind != DIR or change.path in failed:
                continue
            why = _guarded(root_fd, change.path, partial(_chmod_dir, was=was))
            if why:
                failed[change.path] = Failed(change.path, why)
    finally:
        os.close(root_fd)
    done = [change for change in changes if change.path not in failed]
    return done, sorted(failed.values(), key=lambda f: f.path)


class _Refused(Exception):
    """A change not made, for the reason given."""


def _guarded(root_fd: int, path: str, act: Callable[[int, str], None]) -> str | None:
    """Run `act(folder_fd, name)` on `path`'s folder, opened safely; the reason it failed."""
    if not safe_path(path):
        return "not a plain path in the project"
    parts = path.split("/")
    fd = root_fd
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                raise _Refused("its folder is missing") from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _Refused("a link or a file stands where its folder was") from None
                raise
            if fd != root_fd:
                os.close(fd)
            fd = child
        act(fd, parts[-1])
    except _Refused as refused:
        return str(refused)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        if fd != root_fd:
            os.close(fd)
    return None


def _matches(fd: int, name: str, entry: Entry) -> bool:
    """Whether `name` in `fd` is still what `entry` recorded (never following a link)."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mode = st.st_mode
    if entry.kind == DIR:
        return stat.S_ISDIR(mode)
    if entry.kind == LINK:
        return stat.S_ISLNK(mode) and os.readlink(name, dir_fd=fd) == entry.data
    if entry.kind == FILE:
        return stat.S_ISREG(mode) and (st.st_size, st.st_mtime_ns, st.st_ino) == (
            entry.size,
            entry.mtime_ns,
            entry.ino,
        )
    return False


def _absent(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    return False


CHANGED_SINCE = "changed since /undo looked: left as it is"


def _remove(fd: int, name: str, now: Entry) -> None:
    if not _matches(fd, name, now):
        raise _Refused(CHANGED_SINCE)
    if now.kind == DIR:
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise _Refused("holds files /undo does not know: left as it is") from None
            raise
    else:
        os.unlink(name, dir_fd=fd)


def _put(fd: int, name: str, was: Entry, now: Entry | None, store: Store) -> None:
    """Make `name` what `was` recorded; `now`: what is there now, if of the same kind."""
    if now is not None:
        if not _matches(fd, name, now):
            raise _Refused(CHANGED_SINCE)
    elif not _absent(fd, name):
        raise _Refused("something new stands there: left as it is")
    if was.kind == DIR:
        if now is None:
            os.mkdir(name, 0o700, dir_fd=fd)
    elif was.kind == FILE:
        data = store.get(was.data or "")
        if data is None:
            raise _Refused("its copy in the snapshot is missing or damaged")
        write_atomically(Path(name), data, mode=was.mode, dir_fd=fd)
        os.utime(name, ns=(was.mtime_ns, was.mtime_ns), dir_fd=fd, follow_symlinks=False)
    elif was.kind == LINK:
        temp = f".{name}.{os.urandom(4).hex()}.tmp"
        os.symlink(was.data or "", temp, dir_fd=fd)
        try:
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
            raise
    else:
        raise _Refused("not a file, folder or link")


def _chmod_dir(fd: int, name: str, was: Entry) -> None:
    try:
        folder = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _Refused("a link or a file stands where the folder was") from None
        raise
    try:
        if stat.S_IMODE(os.fstat(folder).st_mode) != was.mode:
            os.fchmod(folder, was.mode)
    finally:
        os.close(folder)
