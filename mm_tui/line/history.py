"""Line mode's memory of what was typed at its prompt, and its line editing: the standard
library's `readline` (GNU readline, or libedit on macOS), when it imports and both stdin and stdout
are a terminal. prompt_toolkit would be a second keyboard stack beside Textual's for one prompt
line; readline gives Up/Down, Ctrl-R and the person's ~/.inputrc for nothing. Without it (a Python
built without readline, Windows, piped input) `input()` reads plain lines as it always did.
Requests typed at the `›` prompt are kept in `$XDG_STATE_HOME/mm/line_history`
(`~/.local/state/mm/line_history`), the last 1000, each through the session's redactor first
(a key pasted into a request is kept as `[redacted]`).

The file sits in mm's state folder, where the commands the model runs may write (the sandbox
lets them): a command could put a symbolic link there, to `~/.bashrc` say, and the next request
would have been appended to it. So the file is opened with O_NOFOLLOW, never through a link, and
used only when what was opened is a regular file of the person's own with no other name (a hard
link to a file elsewhere is refused too); anything else (a link, a folder, a FIFO, a device, a
file of another user) turns the history off for the run with one warning, and is never read,
written or followed. Cutting the file back to its last entries writes a new file and renames it
over the old name: a rename replaces a link planted meanwhile, never what it points to. Not
covered: the folder `mm` itself being a link (the sandbox does not let commands write in
`~/.local/state`, where it lives)."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

from mm_tui.core.files import NotRegularFile, write_atomically

HISTORY_LIMIT = 1000
# Commands that leave mm are not worth recalling: Up at the next start would offer to quit.
UNRECORDED = {"/quit", "/exit"}
# The most of an old history file read back: a huge or foreign file must not slow the start.
HISTORY_READ_LIMIT = 1 << 20


def history_path() -> Path:
    """Where line mode keeps the requests typed at its prompt between runs: mm's state folder,
    beside the logs of asked agents (`XDG_STATE_HOME`, which tests point at a folder of their
    own)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "mm" / "line_history"


def line_editor() -> ModuleType | None:
    """The readline module when it imports and the keyboard and the screen are a terminal; None
    otherwise, and `input()` reads plain lines (piped input has nothing to edit or recall, and
    must not be added to the history of what a person typed)."""
    try:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        interactive = False
    if not interactive:
        return None
    try:
        import readline
    except ImportError:
        return None
    return readline


# A terminal escape sequence (CSI, e.g. a colour), in a prompt.
ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def readline_prompt(prompt: str) -> str:
    """`prompt` with each escape sequence between \\x01 and \\x02, readline's marks for what takes
    no room on the screen: without them readline counts colour codes as columns and draws a
    recalled line, and the cursor, that many columns off."""
    return ESCAPE_SEQUENCE.sub(lambda m: f"\x01{m[0]}\x02", prompt)


def _escape(entry: str) -> str:
    return entry.replace("\\", "\\\\").replace("\n", "\\n")


def _unescape(line: str) -> str:
    return re.sub(r"\\([\\n])", lambda m: "\n" if m[1] == "n" else "\\", line)


# O_NOFOLLOW: a link planted at the path is refused (ELOOP), never followed. O_NONBLOCK: a FIFO
# opens at once instead of waiting for its other end. O_NOCTTY: a terminal does not become
# mm's. O_CLOEXEC: no command mm starts inherits the descriptor.
_SAFE_FLAGS = (
    os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def open_history(path: Path, flags: int) -> int:
    """A descriptor of the history file opened with `flags` (O_CREAT makes it 0600), when it is
    a regular file of this user's with no other name; OSError otherwise, worded for the
    warning: a symbolic link, a folder, a FIFO or a device, a file of another user, a file with
    other names (hard links). What is opened is looked at through the descriptor (fstat), so a
    file swapped between a look and the open cannot pass."""
    try:
        fd = os.open(path, flags | _SAFE_FLAGS, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EMLINK and os.path.islink(path)):
            raise OSError(errno.ELOOP, "a symbolic link, not followed", str(path)) from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO with no reader, a folder
            raise NotRegularFile(path) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(path)
        getuid = getattr(os, "getuid", None)
        if getuid is not None and info.st_uid != getuid():
            raise OSError(errno.EPERM, "not a file of yours", str(path))
        if info.st_nlink > 1:
            raise OSError(errno.EPERM, "a file with other names (hard links)", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_history(path: Path, limit: int = HISTORY_LIMIT) -> tuple[list[str], int]:
    """The last `limit` entries of a history file and how many lines it holds. One entry a
    line, a newline inside one (a multi-line paste) written `\\n` and a backslash `\\\\`. A
    line that is not UTF-8 or holds a NUL byte is skipped: a damaged file loses those lines, not
    the others. Raises OSError when the file cannot be read (FileNotFoundError at the first
    run) or is not one to trust (`open_history`)."""
    f = os.fdopen(open_history(path, os.O_RDONLY), "rb")
    with f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - HISTORY_READ_LIMIT)
        f.seek(start)
        data = f.read(HISTORY_READ_LIMIT)
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # the first one is cut
    if lines and not lines[-1]:
        lines.pop()
    entries: list[str] = []
    for raw in lines:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if "\x00" in text or not text.strip():
            continue
        entry = _unescape(text)
        if not entries or entries[-1] != entry:
            entries.append(entry)
    return entries[-limit:], len(lines)


class LineHistory:
    """The requests typed at line mode's prompt, for Up/Down: readline's own list, filled from a
    file at the start and appended to it after each request, so a new run recalls the last one's.

    Permission answers are read through the same `input()`, so readline's automatic recording is
    turned off and only `run_line` adds, for requests. Empty lines and a repeat of the last entry
    are not added; the list and the file keep the last `limit` entries (the file is cut back to
    them at the next start). A file that cannot be read or written (no permission, a folder in
    the way) costs the persisting, never line mode: `warn` says so once, and the history of this
    run still works."""

    def __init__(
        self,
        readline: ModuleType,
        path: Path | None,
        limit: int = HISTORY_LIMIT,
        warn: Callable[[str], None] | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.readline = readline
        self.path = path
        self.limit = limit
        self.warn = warn or (lambda message: None)
        # what the file gets of an entry: the session's redactor (the list of this run keeps
        # what was typed, for Up)
        self.redact = redact or (lambda text: text)
        readline.set_auto_history(False)
        clear = getattr(readline, "clear_history", None)  # missing from some libedit builds
        if clear is not None:
            clear()
        for entry in self._load():
            readline.add_history(entry)

    def _load(self) -> list[str]:
        if self.path is None:
            return []
        try:
            entries, lines = read_history(self.path, self.limit)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._stop(exc)
            return []
        if lines > self.limit:
            self._rewrite(entries)
        return entries

    def _rewrite(self, entries: list[str]) -> None:
        """The file cut back to `entries`, through a new file renamed over it: a crash leaves the
        old one or the new one, and a link planted at the path since it was read is replaced
        by the new file, not written through (a rename does not follow a link)."""
        assert self.path is not None
        data = "".join(_escape(e) + "\n" for e in entries).encode("utf-8", "replace")
        with contextlib.suppress(OSError):
            write_atomically(self.path, data, new_mode=0o600)

    def _stop(self, exc: OSError) -> None:
        self.warn(f"history not kept: {self.path}: {exc.strerror or exc}")
        self.path = None

    def entries(self) -> list[str]:
        """The entries Up walks back through, oldest first."""
        rl = self.readline
        items = (rl.get_history_item(i) for i in range(1, rl.get_current_history_length() + 1))
        return [item for item in items if item is not None]

    def add(self, line: str) -> None:
        """Records a request typed at the prompt."""
        rl = self.readline
        if not line.strip() or line.strip() in UNRECORDED or "\x00" in line:
            return
        count = rl.get_current_history_length()
        if count and rl.get_history_item(count) == line:
            return
        rl.add_history(line)
        while rl.get_current_history_length() > self.limit:
            rl.remove_history_item(0)
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # 0600: a request can hold what its writer would not show everyone on the machine
            fd = open_history(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(fd, "ab") as f:
                f.write((_escape(self.redact(line)) + "\n").encode("utf-8", "replace"))
        except OSError as exc:
            self._stop(exc)


def terminal_state() -> list | None:
    """The keyboard's terminal settings before readline changes them."""
    try:
        import termios

        return termios.tcgetattr(sys.stdin.fileno())
    except (ImportError, OSError, ValueError):
        return None


def restore_terminal(state: list) -> None:
    """The terminal as it was before a read that is abandoned in the middle (Ctrl-C twice at the
    prompt): readline had turned echo off and bracketed paste on, and its thread dies with the
    process without turning them back, leaving the shell blind."""
    try:
        import termios

        termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, state)
        sys.stdout.write("\x1b[?2004l")
        sys.stdout.flush()
    except (ImportError, OSError, ValueError):
        pass


@contextlib.contextmanager
def keys_not_echoed() -> Iterator[None]:
    """While a turn prints: what the person types is not echoed by the terminal into the
    middle of the answer. It waits in the terminal's buffer and shows at the next prompt,
    where readline reads it (a permission question's readline echoes for itself). The
    terminal's settings come back after, however the turn ends."""
    try:
        import termios

        fd = sys.stdin.fileno()
        before = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        yield
        return
    quiet = list(before)
    quiet[3] = before[3] & ~termios.ECHO
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            termios.tcsetattr(fd, termios.TCSANOW, before)
