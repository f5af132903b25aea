"""Files as every layer reads and writes them: one reader of regular files that cannot block on
a pipe, one atomic writer, and where a path a person or a model gave leads.

Why a reader of its own: `Path.read_bytes` on a FIFO waits for a writer that may never come, and
on /dev/zero never ends; a model that names one, or a file swapped for one, would freeze mm.

Why a writer of its own: a file rewritten in place is half-written when mm is killed in the
middle; written to a temporary file beside it and renamed over it, it is the old or the new one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO, NamedTuple

TEMP_SUFFIX = ".tmp"
# O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
# O_NOCTTY: a terminal opened by mistake does not become mm's controlling terminal.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
# O_EXCL: a name that exists, a symbolic link included, is never written through.
_CREATE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class NotRegularFile(OSError):
    """A device, socket or pipe where a file was expected; `strerror` is "not a regular file"."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


class FileContent(NamedTuple):
    data: bytes
    mode: int  # the permission bits (stat.S_IMODE), for a rewrite that keeps them


# -- reading -----------------------------------------------------------------------------------


def _check_regular(mode: int, path: str | os.PathLike[str]) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path)


def open_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> BinaryIO:
    """`path` (a symbolic link followed) opened for reading, when it is a regular file.

    Raises FileNotFoundError, PermissionError, IsADirectoryError, `NotRegularFile` (a device,
    socket or pipe), or another OSError. The path is looked at before it is opened, so that a
    device is never opened at all (opening some does something), then opened non-blocking and
    looked at again through the descriptor: a pipe swapped in between cannot block the open, and
    is refused before anything is read.

    With `dir_fd` (an open folder, `open_folder`), `path` is a name in that folder and a
    symbolic link is NOT followed (ELOOP): the caller checked where the folder really is, and a
    link swapped in for the name since cannot lead elsewhere (`core/file_access.py`)."""
    follow = dir_fd is None
    flags = READ_FLAGS if follow else READ_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow).st_mode
    if stat.S_ISLNK(mode):
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(path))
    _check_regular(mode, path)
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        _check_regular(os.fstat(fd).st_mode, path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> FileContent:
    """The bytes and permission bits of a regular file; raises as `open_regular`."""
    with open_regular(path, dir_fd=dir_fd) as f:
        mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
        return FileContent(f.read(), mode)


# -- folders -----------------------------------------------------------------------------------

_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def open_folder(
    path: str | os.PathLike[str], *, dir_fd: int | None = None, follow: bool = True
) -> int:
    """A descriptor of the folder `path` (symbolic links followed unless `follow` is False),
    for the `dir_fd` forms here: what is done through it stays in that folder, whatever is
    renamed or linked meanwhile. The caller closes it."""
    flags = _FOLDER_FLAGS if follow else _FOLDER_FLAGS | getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, dir_fd=dir_fd)


def fd_path(fd: int) -> str:
    """Where an open file or folder really is, as the kernel knows it (links and `..` resolved):
    Linux's /proc/self/fd, macOS's F_GETPATH. OSError where neither is there."""
    if sys.platform != "darwin":
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:
            if os.path.isdir("/proc/self/fd"):
                raise  # `fd` is not open
            # not "missing": the caller would take it for the file's absence
            raise OSError(errno.ENOTSUP, "this system cannot tell where an open file is") from None
    import fcntl

    raw = fcntl.fcntl(fd, 50, b"\0" * 1024)  # F_GETPATH
    return os.fsdecode(raw.split(b"\0", 1)[0])


def read_text(path: str | os.PathLike[str]) -> str:
    """A regular file's text, as UTF-8; a byte that is not UTF-8 becomes U+FFFD rather than an
    error (for text read to be searched or shown, not to be written back). Raises as
    `open_regular`."""
    return read_regular(path).data.decode("utf-8", errors="replace")


# -- writing -----------------------------------------------------------------------------------


def write_atomically(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    new_mode: int = 0o666,
    temp: Path | None = None,
    sync: bool = True,
    dir_fd: int | None = None,
) -> None:
    """Replace (or create) `path` with `data` in one step: the bytes go to a temporary file in
    the same folder, which is then renamed over `path`. A crash or a kill at any moment leaves
    the old file or the new one, never a part of one; a reader sees one or the other. `path` is
    the file itself: a caller writing through a symbolic link passes what it points to
    (`write_target`). The folder must exist. On failure the temporary file is removed and the
    error raised.

    `mode`: the permission bits the file gets, exactly (set on the descriptor, the umask not
    applied): an existing file's, so that rewriting it keeps them. None: `new_mode` less the
    umask, the bits any program creating the file would give it; 0o600 keeps a file to its
    owner (a session, a history: they may hold whatever the tools read).

    `temp`: the temporary file's name, when the caller needs to know it (the session journal's
    carry the process id, so that a later run can remove those a killed one left); anything
    already there is removed first and never written through. None: a fresh random name,
    `.<name>.<random>.tmp`.

    `sync`: the data reaches the disk before the rename (fsync), so that a power cut cannot
    leave an empty file under the new name. A caller that rewrites a small file after every
    change, and can lose the last one, turns it off. The folder is not synced: the rename may
    still be undone by a power cut (the old file comes back), never half done.

    `dir_fd`: an open folder (`open_folder`); `path` (and `temp`) are then names in it, and the
    file is made and renamed there, never through a link: the name itself is replaced, whatever
    was swapped in for it since the caller checked the folder."""
    # With a mode to set, the file starts owner-only: never more open than the old one was.
    create_mode = new_mode if mode is None else 0o600
    if temp is None:
        while True:
            # os.urandom, as secrets.token_hex is, without secrets' import (hmac, hashlib)
            temp = path.parent / f".{path.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
            try:
                fd = os.open(temp, _CREATE_FLAGS, create_mode, dir_fd=dir_fd)
                break
            except FileExistsError:
                continue
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        fd = os.open(temp, _CREATE_FLAGS, create_mode, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def write_target(path: Path) -> Path:
    """The file a write to `path` changes: what a symbolic link points to (the link is kept,
    and the real file replaced), else `path` itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


# -- paths -------------------------------------------------------------------------------------


def resolve_path(name: str | os.PathLike[str], cwd: Path) -> Path:
    """A path a person or a model gave: `~` expanded, relative to `cwd` unless absolute. Not
    made absolute otherwise (`cwd` may be relative), no symbolic link followed."""
    path = Path(name).expanduser()
    return path if path.is_absolute() else cwd / path
