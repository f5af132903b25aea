"""Line mode's memory of what was typed at its prompt, and its line editing: the standard
library's `readline` (GNU readline, or libedit on macOS), when it imports and both stdin and stdout
are a terminal. prompt_toolkit would be a second keyboard stack beside Textual's for one prompt
line; readline gives Up/Down, Ctrl-R and the person's ~/.inputrc for nothing. Without it (a Python
built without readline, Windows, piped input) `input()` reads plain lines as it always did.
Requests typed at the `›` prompt are kept in `$XDG_STATE_HOME/mm/line_history`
(`~/.local/state/mm/line_history`), the last 1000."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from mm_tui.core.files import NotRegularFile, open_regular, write_atomically

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


def read_history(path: Path, limit: int = HISTORY_LIMIT) -> tuple[list[str], int]:
    """The last `limit` entries of a history file and how many lines it holds. One entry a
    line, a newline inside one (a multi-line paste) written `\\n` and a backslash `\\\\`. A
    line that is not UTF-8 or holds a NUL byte is skipped: a damaged file loses those lines, not
    the others. Raises OSError when the file cannot be read (FileNotFoundError at the first
    run)."""
    try:
        f = open_regular(path)  # a FIFO would block, /dev/zero never end
    except IsADirectoryError:  # a folder in the way is said as any other file that is none
        raise NotRegularFile(path) from None
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
    ) -> None:
        self.readline = readline
        self.path = path
        self.limit = limit
        self.warn = warn or (lambda message: None)
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
        old one or the new one."""
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
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o600)
            with os.fdopen(fd, "ab") as f:
                f.write((_escape(line) + "\n").encode("utf-8", "replace"))
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
