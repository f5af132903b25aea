"""The sandbox's policy applied to the file tools (read_file, write_file, edit_file, read_skill,
fetch_content's `output`): mm's own check, made in mm's process before anything is read,
created or truncated, whenever the `sandbox` setting is not `off`. It needs no kernel support:
it holds in `auto` on a kernel without Landlock too, and on macOS.

One judgement, `judge`, serves the tools and bash's `Confinement.explain`: a path is judged as
given (`..` folded, no link followed) and where it really is (links and `..` resolved; for a file
that does not exist yet, the real path of its deepest existing folder plus the rest). A read is
refused when either lies in a denied item (a secret, a terminal); a write when either lies in a
denied item or in mm's state folder, or when the real target is outside the write set.

Race-free: a command (run between two tool calls, or a background job during one) may swap a
part of a path for a symbolic link between a check and an open. So no path is checked and then
opened by name: the folder is opened (links followed), where it really is is read back from the
kernel (`files.fd_path`) and judged, and the last part is opened, or the file made and renamed,
relative to that folder's descriptor, never following a link there (`dir_fd` forms of
`core/files.py`). A link met as the last part is read (`readlink`) and followed by hand, each
step judged the same way. A read judges the opened file's own path once more.

Not covered: a hard link to a secret, made beforehand by the person (a command cannot make one
into the project: Landlock refuses it); mm's own writes of its own files (sessions, history,
config), which are not tool calls.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from mm_tui.core import files
from mm_tui.core.frozen import mutable
from mm_tui.core.paths import shown_path
from mm_tui.core.sandbox import (
    PROCESS,
    SECRET,
    STATE,
    TERMINAL,
    Policy,
    SandboxConfig,
    config_file,
    judge,
    make_policy,
)

_HOPS = 40  # links followed by hand, as the kernel's own limit


def file_policy(
    config: SandboxConfig, cwd: Path, env: Mapping[str, str] | None = None
) -> Policy | None:
    """The policy the file tools obey in `cwd` (the same as a command's there); None when the
    `sandbox` setting is off."""
    if config.mode == "off":
        return None
    return make_policy(config, Path(os.path.abspath(cwd)), os.environ if env is None else env)


class SandboxRefusal(PermissionError):
    """A refusal of the policy; `text` is what the model gets, saying why and how to allow it."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EACCES, reason)
        self.reason = reason  # `refused by mm's sandbox: … in ~/.config/mm/config.yaml`

    @property
    def text(self) -> str:
        """The tools' failure text: `[error: refused by mm's sandbox: …]`."""
        return f"[error: {self.reason}]"


def refusal(name: str, why: str, *, write: bool, leads_to: str | None = None) -> str:
    """Why `name` (the path as the model gave it) is refused and how to allow it, in the wording
    of bash's `[sandbox: …]` line; `SandboxRefusal.text` puts it in `[error: …]`."""
    shown = name if leads_to is None else f"{name} (it leads to {leads_to})"
    where = config_file()
    if why == TERMINAL:
        return (
            f"refused by mm's sandbox: {shown} is a terminal or a disk, which mm's commands "
            f"and tools may not open. To allow it, the person can set sandbox: off in {where}"
        )
    if why == PROCESS:
        verb = "read or write" if write else "read"
        return (
            f"refused by mm's sandbox: {shown} belongs to a running process (its environment and "
            f"memory hold secrets), which mm's commands and tools may not {verb}. To allow it, "
            f"the person can read it themselves, or set sandbox: off in {where}"
        )
    if why == SECRET:
        verb = "read or write" if write else "read"
        person = "change it themselves" if write else "read it themselves"
        return (
            f"refused by mm's sandbox: {shown} is a secret mm's commands and tools may "
            f"not {verb}. To allow it, the person can {person}, or set sandbox: off in {where}"
        )
    if why == STATE:
        return (
            f"refused by mm's sandbox: {shown} is in mm's own state folder, which mm's "
            "commands and tools may not write. To allow it, the person can write it themselves, "
            f"or set sandbox: off in {where}"
        )
    return (
        f"refused by mm's sandbox: {shown} is outside the folders mm may write (the "
        "project, the temp folder, ~/.cache, and sandboxWrite). To allow it, the person can "
        f"write it themselves, add the folder to sandboxWrite, or set sandbox: off in {where}"
    )


@mutable
class Place:
    """Where a tool's file really is: an open folder, checked, and a name in it that is no
    symbolic link (or does not exist yet). `real`: the folder's real path and the name."""

    folder: int
    name: str
    real: str
    exists: bool

    def read(self) -> files.FileContent:
        """The file's bytes and mode (`files.read_regular` in the folder, no link followed)."""
        return files.read_regular(self.name, dir_fd=self.folder)

    def write(self, data: bytes, mode: int | None = None) -> None:
        """The file replaced in one step in its folder (`files.write_atomically`)."""
        files.write_atomically(Path(self.name), data, mode=mode, dir_fd=self.folder)


class Gate:
    """The file tools' way to their files under the policy (None: the sandbox is off, nothing
    is judged, the same race-free opening is used). `name` in each call is the path as the
    model gave it, for the messages; FileNotFoundError, IsADirectoryError and the other
    OSErrors are raised as by `files`, and `SandboxRefusal` for what the policy refuses."""

    def __init__(self, policy: Policy | None, cwd: Path) -> None:
        self.policy = policy
        self.cwd = Path(os.path.abspath(cwd))

    def _absolute(self, name: str) -> str:
        path = files.resolve_path(name, self.cwd)
        return os.fspath(path if path.is_absolute() else Path(os.path.abspath(path)))

    def _check(
        self, name: str, given: str, real: str, write: bool, *, only_deny: bool = False
    ) -> None:
        """Raise `SandboxRefusal` when the policy refuses; `only_deny`: judge denied items only
        (a step on the way, or the path as given before its real path is known), while the
        text still says what the call was."""
        if self.policy is None:
            return
        why = judge(self.policy, given, real, write=write and not only_deny)
        if why is not None:
            leads = None if os.path.normpath(real) == given else shown_path(Path(real))
            raise SandboxRefusal(refusal(name, why, write=write, leads_to=leads))

    @contextlib.contextmanager
    def place(self, name: str, *, write: bool, make_folders: bool = False) -> Iterator[Place]:
        """The checked place of the file `name` leads to (links followed by hand); for a write,
        its missing folders made first when `make_folders`. The folder is closed on leaving."""
        path = self._absolute(name)
        given = os.path.normpath(path)
        # The path as given, before anything is opened: a denied item named outright. (Where
        # a write lands is judged on its real path below: a link may lead into the project.)
        self._check(name, given, given, write, only_deny=True)
        for _ in range(_HOPS):
            parent, last = os.path.split(path)
            if last in ("", ".", ".."):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
            if write and make_folders:
                folder = self._make_folders(name, given, parent)
            else:
                try:
                    folder = files.open_folder(parent)
                except FileNotFoundError:
                    # Judged where it would be, before saying it is missing: a refusal says why.
                    self._check(name, given, os.path.realpath(path), write)
                    raise
            try:
                real = os.path.join(files.fd_path(folder), last)
                try:
                    mode = os.stat(last, dir_fd=folder, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    mode = None
                if mode is not None and stat.S_ISLNK(mode):
                    self._check(name, given, real, write, only_deny=True)  # a step on the way
                    path = os.path.join(os.path.dirname(real), os.readlink(last, dir_fd=folder))
                    continue
                self._check(name, given, real, write)
                yield Place(folder, last, real, mode is not None)
                return
            finally:
                os.close(folder)
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)

    def _make_folders(self, name: str, given: str, parent: str) -> int:
        """The folder `parent` opened, its missing parts made one by one, each in a folder whose
        real path was judged writable, and opened without following a link."""
        missing: list[str] = []
        folder_path = parent
        while True:
            try:
                folder = files.open_folder(folder_path)
                break
            except FileNotFoundError:
                folder_path, part = os.path.split(folder_path)
                if not part:
                    raise
                missing.append(part)
        try:
            for part in reversed(missing):
                self._check(name, given, os.path.join(files.fd_path(folder), part), True)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=folder)
                inner = files.open_folder(part, dir_fd=folder, follow=False)
                os.close(folder)
                folder = inner
        except BaseException:
            os.close(folder)
            raise
        return folder

    def read_text(self, path: str | os.PathLike[str]) -> str:
        """A regular file's text (`files.read_text`'s decoding), judged for reading."""
        return self.read(os.fspath(path)).data.decode("utf-8", errors="replace")

    def read_for_writing(self, path: str | os.PathLike[str]) -> str:
        """An existing file's text, judged for writing as well (a file about to be changed:
        refused before it is shown to anyone as a change)."""
        with self.place(os.fspath(path), write=True) as place:
            if not place.exists:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
            return place.read().data.decode("utf-8", errors="replace")

    def rewrite(self, path: str | os.PathLike[str], data: bytes) -> None:
        """An existing file replaced in one step, its mode kept (a symbolic link followed and
        kept), judged for writing."""
        with self.place(os.fspath(path), write=True) as place:
            mode = stat.S_IMODE(os.stat(place.name, dir_fd=place.folder).st_mode)
            place.write(data, mode)

    def read(self, name: str) -> files.FileContent:
        """A regular file's bytes and mode, judged for reading (and the opened file judged
        again by its own path)."""
        with self.open(name) as f:
            mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
            return files.FileContent(f.read(), mode)

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[BinaryIO]:
        """A regular file opened for reading, judged as by `read`: for a reader that takes only
        the part it needs of a file that may be gigabytes long. Closed on leaving."""
        with self.place(name, write=False) as place:
            if not place.exists:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
            with files.open_regular(place.name, dir_fd=place.folder) as f:
                given = os.path.normpath(self._absolute(name))
                self._check(name, given, files.fd_path(f.fileno()), False)
                yield f


def gate(config: SandboxConfig, cwd: Path) -> Gate:
    """The gate of the file tools working in `cwd` under the `sandbox` settings `config`."""
    return Gate(file_policy(config, cwd), cwd)
