"""core/files.py: the regular-file reader that cannot block on a pipe, the atomic writer, and
path resolution."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mm_tui.core import files
from mm_tui.core.files import (
    FileContent,
    NotRegularFile,
    open_regular,
    read_regular,
    read_text,
    resolve_path,
    write_atomically,
    write_target,
)

GUARD = 10.0  # seconds a read may take before it counts as blocked


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def within(seconds: float, action: Callable[[], Any]) -> Any:
    """`action()` in a thread: its result or its exception, or a failure when it blocks."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"blocked for more than {seconds:g}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path
    # A reader stuck in open() (the test failed) is let go: a writer opening the pipe frees it.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


# --- reading ----------------------------------------------------------------------------------


def test_a_regular_file_is_read_with_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello\n")
    path.chmod(0o640)
    assert read_regular(path) == FileContent(b"hello\n", 0o640)
    assert read_regular(str(path)).data == b"hello\n"


def test_a_symbolic_link_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_bytes(b"real")
    (tmp_path / "link.txt").symlink_to("real.txt")
    assert read_regular(tmp_path / "link.txt").data == b"real"


def test_a_fifo_is_refused_without_blocking(fifo: Path) -> None:
    with pytest.raises(NotRegularFile) as info:
        within(GUARD, lambda: read_regular(fifo))
    assert info.value.strerror == "not a regular file"
    assert info.value.filename == str(fifo)
    assert isinstance(info.value, OSError)


def test_a_fifo_swapped_in_after_the_first_look_is_refused_without_blocking(
    fifo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the second look closes: the path was a file when looked at, a pipe when
    opened. Opened non-blocking, the pipe is refused by the look through the descriptor."""
    regular = tmp_path / "regular"
    regular.write_bytes(b"x")
    real_stat = os.stat

    def stat_before_the_swap(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return real_stat(regular if Path(path) == fifo else path, *args, **kwargs)

    monkeypatch.setattr(files.os, "stat", stat_before_the_swap)
    with pytest.raises(NotRegularFile):
        within(GUARD, lambda: read_regular(fifo))


def test_a_device_is_refused() -> None:
    with pytest.raises(NotRegularFile):
        within(GUARD, lambda: read_regular("/dev/zero"))  # it would never end
    with pytest.raises(NotRegularFile):
        read_regular("/dev/null")


def test_a_directory_and_a_missing_file_say_what_they_are(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing" / "deeper")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_an_unreadable_file_is_a_permission_error(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"x")
    path.chmod(0)
    with pytest.raises(PermissionError):
        read_regular(path)


def test_open_regular_gives_a_file_to_seek_in(tmp_path: Path) -> None:
    path = tmp_path / "a"
    path.write_bytes(b"0123456789")
    with open_regular(path) as f:
        f.seek(-3, os.SEEK_END)
        assert f.read() == b"789"


def test_read_text_replaces_what_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "a"
    path.write_bytes(b"caf\xc3\xa9 \xff!")
    assert read_text(path) == "café \ufffd!"


# --- writing ----------------------------------------------------------------------------------


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_new_file_gets_the_mode_the_umask_allows(tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    write_atomically(path, b"data")
    assert path.read_bytes() == b"data"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask()
    assert temps(tmp_path) == []


def test_a_private_file_is_its_owners_only(tmp_path: Path) -> None:
    path = tmp_path / "private"
    write_atomically(path, b"secret", new_mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 & ~umask()


def test_a_rewrite_keeps_the_mode_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "script.sh"
    path.write_bytes(b"old")
    path.chmod(0o751)
    write_atomically(path, b"new", mode=read_regular(path).mode)
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


def test_a_named_temporary_file_is_replaced_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    temp = tmp_path / ".target.123.tmp"
    temp.symlink_to(victim)
    write_atomically(tmp_path / "target", b"data", temp=temp)
    assert victim.read_bytes() == b"precious"
    assert (tmp_path / "target").read_bytes() == b"data"
    assert not temp.exists() and not temp.is_symlink()


def test_a_failed_write_leaves_no_temporary_file_and_the_old_file(tmp_path: Path) -> None:
    folder = tmp_path / "in-the-way"
    folder.mkdir()
    (folder / "child").write_bytes(b"")
    with pytest.raises(OSError):
        write_atomically(folder, b"data")  # a file cannot be renamed over a folder
    assert temps(tmp_path) == []
    assert folder.is_dir()


def test_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "missing" / "file", b"data")


def test_write_target_follows_a_link_and_keeps_it(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_bytes(b"old")
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    assert write_target(link) == real
    assert write_target(real) == real
    write_atomically(write_target(link), b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert write_target(dangling) == tmp_path / "nowhere"


WRITER = """
import sys
from pathlib import Path
from mm_tui.core.files import write_atomically
write_atomically(Path(sys.argv[1]), b"N" * int(sys.argv[2]))
"""


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.2])
def test_a_writer_killed_midway_leaves_the_old_file_or_the_new(
    tmp_path: Path, delay: float
) -> None:
    """A child writing 64 MiB is killed as soon as its temporary file appears (then a little
    later): the target is the old bytes or the new ones, whole, never a mix nor a part."""
    target = tmp_path / "target"
    old = b"O" * 4096
    target.write_bytes(old)
    size = 64 * 1024 * 1024
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(size)], env=env)
    try:
        deadline = time.monotonic() + 30
        while not temps(tmp_path) and child.poll() is None:
            assert time.monotonic() < deadline, "the temporary file never appeared"
            time.sleep(0.001)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    data = target.read_bytes()
    assert data == old or data == b"N" * size


# --- paths ------------------------------------------------------------------------------------


def test_the_folder_forms_stay_in_the_folder_and_follow_no_link(tmp_path: Path) -> None:
    """With `dir_fd`, a name is opened in that folder and never through a link: a link swapped
    in for the name is refused to a read (ELOOP) and replaced, not written through, by a write;
    where the folder really is comes back from the kernel, whatever path led to it."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("secret\n")
    (tmp_path / "via").symlink_to(work)
    (work / "f.txt").symlink_to(elsewhere / "secret.txt")
    folder = files.open_folder(tmp_path / "via")
    try:
        assert files.fd_path(folder) == str(work)
        with pytest.raises(OSError) as raised:
            read_regular("f.txt", dir_fd=folder)
        assert raised.value.errno == errno.ELOOP
        write_atomically(Path("f.txt"), b"mine\n", dir_fd=folder)
        assert read_regular("f.txt", dir_fd=folder).data == b"mine\n"
    finally:
        os.close(folder)
    assert not (work / "f.txt").is_symlink()
    assert (elsewhere / "secret.txt").read_text() == "secret\n"
    assert sorted(p.name for p in work.iterdir()) == ["f.txt"]  # no temporary file left


def test_resolve_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cwd = tmp_path / "project"
    assert resolve_path("src/a.py", cwd) == cwd / "src/a.py"
    assert resolve_path("../b.py", cwd) == cwd / "../b.py"  # not folded, no link followed
    assert resolve_path("/etc/hosts", cwd) == Path("/etc/hosts")
    assert resolve_path("~/notes.md", cwd) == tmp_path / "home" / "notes.md"
    assert resolve_path(Path("x"), Path("rel")) == Path("rel/x")
