"""A snapshot of the project's files: one walk with `os.scandir`, hashing only what changed.

An entry whose kind, permission bits, size, mtime, ctime and inode are those of the previous
manifest's is taken as unchanged, with its hash: a turn that changed three files of ten
thousand costs a walk and three reads. The ctime is in the comparison because no command can
set it back (`touch -d` sets the mtime): a change cannot hide from the next snapshot.

Nothing is followed: the walk goes folder by folder through descriptors opened with
O_NOFOLLOW, a link is recorded as a link (its target, never what it points to), and a file is
read through a descriptor opened without following a link, so that a link a command planted
(to `~/.ssh`, to `/etc`) is never read through, even one swapped in during the walk.

Recorded by name only (their path, kind, size and times, not their contents): files over
`max_size` (5 MB), anything that is not a file, folder or link, and the folders named in
`SKIPPED_NAMES` (`.git`, `node_modules`, `.venv`…), which are not entered. What `excluded` names
(the session's own folder, the state folder, when they are in the project) is not recorded.
A file that holds one of mm's keys (`secrets`: the API key of the configuration or the
environment, as the redactor knows them) is recorded by name only too: mm writes a key into no
file of its own, and a copy in the snapshots would be one.

A project too big to record (more than MAX_ENTRIES entries, or more than MAX_NEW_BYTES of
contents to keep in one snapshot: mm started in a home folder, a data set) stops the walk with
`ProjectTooBig`: copying gigabytes before every turn is not what anyone asked of /undo.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable

from mm_tui.engine.undo.store import (
    DIR,
    FILE,
    LARGE,
    LINK,
    OTHER,
    SECRET,
    SKIPPED,
    SPECIAL,
    Entry,
    Manifest,
    Store,
)

MAX_SIZE = 5 * 1024 * 1024
SKIPPED_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".jj",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
    }
)
MAX_DEPTH = 256  # a deeper folder is recorded by name only
MAX_ENTRIES = 100_000  # entries of a project that can be recorded
MAX_NEW_BYTES = 256 * 1024 * 1024  # contents one snapshot may keep (the first keeps them all)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class ProjectTooBig(OSError):
    """The project is too big to record before each turn; `strerror` says how."""


def open_root(root: str | os.PathLike[str]) -> int:
    """A descriptor of the project's folder (the folder itself may be reached through links:
    the person chose it)."""
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def scan(
    root: str | os.PathLike[str],
    store: Store,
    previous: Manifest,
    *,
    excluded: Iterable[str] = (),
    max_size: int = MAX_SIZE,
    secrets: Iterable[bytes] = (),
) -> Manifest:
    """The project under `root` as it is now; the contents of what changed since `previous`
    are kept in `store`."""
    walk = _Walk(store, previous, frozenset(excluded), max_size)
    walk.secrets = tuple(s for s in secrets if s)
    fd = open_root(root)
    try:
        walk.folder(fd, "", 0)
    finally:
        os.close(fd)
    return walk.manifest


class _Walk:
    def __init__(self, store: Store, previous: Manifest, excluded: frozenset[str], max_size: int):
        self.store = store
        self.previous = previous
        self.excluded = excluded
        self.max_size = max_size
        self.manifest: Manifest = {}
        self.kept = 0  # bytes of contents read to keep
        self.secrets: tuple[bytes, ...] = ()  # a file holding one is recorded by name only

    def _budget(self) -> None:
        if len(self.manifest) > MAX_ENTRIES:
            raise ProjectTooBig(0, f"it holds more than {MAX_ENTRIES:,} files and folders")
        if self.kept > MAX_NEW_BYTES:
            limit = MAX_NEW_BYTES // (1024 * 1024)
            raise ProjectTooBig(0, f"more than {limit:,} MB of files to keep at once")

    def folder(self, fd: int, prefix: str, depth: int) -> None:
        try:
            with os.scandir(fd) as listing:
                entries = list(listing)
        except OSError:  # unreadable: what it holds is not recorded
            return
        manifest, previous = self.manifest, self.previous
        self._budget()
        for item in entries:
            path = prefix + item.name
            if path in self.excluded:
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:  # gone meanwhile
                continue
            mode = st.st_mode
            sig = (stat.S_IMODE(mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            if stat.S_ISDIR(mode):
                if item.name in SKIPPED_NAMES or depth >= MAX_DEPTH:
                    manifest[path] = Entry(DIR, *sig, name_only=SKIPPED)
                    continue
                manifest[path] = Entry(DIR, sig[0], 0, 0, 0, 0)
                self.subfolder(fd, item.name, path, depth)
            elif stat.S_ISREG(mode):
                old = previous.get(path)
                if old is not None and old.kind == FILE and old[1:6] == sig:
                    manifest[path] = old
                elif st.st_size > self.max_size:
                    manifest[path] = Entry(FILE, *sig, name_only=LARGE)
                else:
                    entry = self.file(fd, item.name, sig)
                    if entry is not None:
                        manifest[path] = entry
            elif stat.S_ISLNK(mode):
                try:
                    target = os.readlink(item.name, dir_fd=fd)
                except OSError:
                    continue
                manifest[path] = Entry(LINK, *sig, data=target)
            else:
                manifest[path] = Entry(OTHER, *sig, name_only=SPECIAL)
        self._budget()

    def subfolder(self, fd: int, name: str, path: str, depth: int) -> None:
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:  # gone, or swapped for a link meanwhile: not entered
            return
        try:
            self.folder(child, path + "/", depth + 1)
        finally:
            os.close(child)

    def file(self, fd: int, name: str, sig: tuple[int, int, int, int, int]) -> Entry | None:
        """A file's entry with its contents kept; None when it cannot be read (gone, or
        swapped for something else meanwhile)."""
        try:
            file = os.open(name, _READ_FLAGS, dir_fd=fd)
        except OSError:
            return None
        try:
            st = os.fstat(file)
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_size:
                return None
            chunks = []
            while chunk := os.read(file, 1 << 20):
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(file)
        data = b"".join(chunks)
        if any(secret in data for secret in self.secrets):
            return Entry(FILE, *_sig(st), name_only=SECRET)
        self.kept += len(data)
        self._budget()
        digest = self.store.put(data)
        return Entry(
            FILE,
            stat.S_IMODE(st.st_mode),
            len(data),
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            data=digest,
        )


def tree_digest(manifest: Manifest) -> str:
    """One hash of what a manifest says the tree holds (paths, kinds, modes, contents, link
    targets; not times), for comparing two trees."""
    h = hashlib.sha256()
    for path in sorted(manifest):
        e = manifest[path]
        h.update(
            f"{path}\0{e.kind}\0{e.mode:o}\0{e.data}\0{e.name_only}\n".encode(
                errors="surrogateescape"
            )
        )
    return h.hexdigest()


def _sig(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
