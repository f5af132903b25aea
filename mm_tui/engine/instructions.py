"""Project instructions: the AGENTS.md files, appended to the system prompt.

Which files, in the order they enter the prompt:

1. the person's own: `$XDG_CONFIG_HOME/mm/AGENTS.md`, by default `~/.config/mm/AGENTS.md`;
2. the project's: one per folder, from the repository's root (the nearest folder, the working
   folder or one above it, that holds `.git`) down to the working folder; with no repository,
   the working folder's alone.

Nearer files come later, so that what the folder at hand says is read last and wins. A folder
with no AGENTS.md gives its CLAUDE.md instead, when it has one.

Their text is appended to the system prompt in force, the built-in one or a configured
`systemPrompt` (which replaces only the built-in prompt), each file under a header naming its
path, as `Engine.system_prompt` does. They are read when a session starts: at start-up, and
again at `/new`, so that an edited AGENTS.md counts from the next session on; a resumed session
goes on with the system message it was started with.

Size: all files together give at most LIMIT bytes (32 KiB) of text. The room goes nearest file
first; the file that does not fit is cut (at a line's end when one is near) and those farther
away are left out, each with a warning naming it. A file that cannot be read (not UTF-8, a
folder, not permitted, a pipe) costs a warning naming it and is skipped, never a crash.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Mapping
from pathlib import Path

from mm_tui.core.files import NotRegularFile, open_regular
from mm_tui.core.frozen import frozen
from mm_tui.core.paths import user_config_dir

NAMES = ("AGENTS.md", "CLAUDE.md")  # the first one a folder holds is read
LIMIT = 32 * 1024  # bytes of text, all files together
LIMIT_TEXT = "32 KiB"
MIN_PIECE = 512  # bytes: with less room than this left, a file is left out rather than cut
CUT_MARK = f"[… cut here: mm reads at most {LIMIT_TEXT} of project instructions]"
BOM = b"\xef\xbb\xbf"


@frozen
class InstructionFile:
    path: Path
    shown: str  # how the prompt, the notes and /help name it: relative to cwd, or ~/…
    text: str
    size: int  # bytes of the file
    cut: bool = False


@frozen
class Instructions:
    """The instruction files read for a session, in prompt order, and the warnings of reading
    them. `Instructions()` is none at all, and `reread()` of it reads nothing."""

    files: tuple[InstructionFile, ...] = ()
    warnings: tuple[str, ...] = ()
    cwd: Path | None = None  # where they were looked for; None: nowhere
    home: Path | None = None
    environ: Mapping[str, str] | None = None

    def section(self) -> str:
        """What the system prompt gets after its own text; "" when there is no file."""
        if not self.files:
            return ""
        parts = [
            "# Project instructions\n\n"
            "The person's and the project's instruction files follow (paths relative to "
            f"{self.cwd}). Follow them; where they disagree, the later file wins."
        ]
        parts += [f"## {file.shown}\n\n{file.text.strip()}" for file in self.files]
        return "\n\n".join(parts)

    def appended_to(self, prompt: str) -> str:
        section = self.section()
        return f"{prompt}\n\n{section}" if section else prompt

    def note(self) -> str | None:
        """The start-up note that says what was read; None when nothing was."""
        if not self.files:
            return None
        return "project instructions: " + ", ".join(file.shown for file in self.files)

    def listing(self) -> list[tuple[str, str]]:
        """(path, what of it was read) for each file, then ("", warning) for each warning: what
        /help shows."""
        rows = [
            (
                file.shown,
                f"{_size(len(file.text.encode()))} of {_size(file.size)}, cut"
                if file.cut
                else _size(file.size),
            )
            for file in self.files
        ]
        return rows + [("", warning) for warning in self.warnings]

    def reread(self) -> Instructions:
        """The same places read again (a new session)."""
        if self.cwd is None:
            return self
        return load_instructions(self.cwd, home=self.home, environ=self.environ)


def repository_root(cwd: Path) -> Path | None:
    """The nearest folder, `cwd` or one above it, that holds `.git` (a folder, or the file of a
    worktree or a submodule)."""
    for folder in (cwd, *cwd.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def load_instructions(
    cwd: Path, *, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> Instructions:
    """Read the instruction files for a session working in `cwd` (see the module's text)."""
    cwd = Path(os.path.abspath(cwd))
    home_dir = Path.home() if home is None else home
    root = repository_root(cwd)
    above = [] if root is None else cwd.parents[: len(cwd.relative_to(root).parts)]
    places = [user_config_dir(home, environ), *reversed(above), cwd]
    warnings: list[str] = []
    found: list[tuple[Path, str, bytes, int]] = []  # path, shown, raw (at most LIMIT + more)
    seen: set[Path] = set()
    for index, folder in enumerate(places):
        path = _pick(folder)
        if path is None:
            continue
        real = Path(os.path.realpath(path))
        if real in seen:  # the person's folder is the project's (mm run in ~/.config/mm)
            continue
        seen.add(real)
        shown = _shown(path, cwd, home_dir, in_project=index > 0)
        read = _read(path, shown, warnings)
        if read is not None:
            found.append((path, shown, *read))
    files = _fit(found, warnings)
    return Instructions(tuple(files), tuple(warnings), cwd, home, environ)


def _pick(folder: Path) -> Path | None:
    """The folder's instruction file: AGENTS.md, else CLAUDE.md; anything by that name counts
    (a folder, a broken link: it is warned about, not passed over)."""
    for name in NAMES:
        path = folder / name
        if os.path.lexists(path):
            return path
    return None


def _shown(path: Path, cwd: Path, home: Path, *, in_project: bool) -> str:
    if in_project:
        return os.path.relpath(path, cwd)
    if path.is_relative_to(home):
        return f"~/{path.relative_to(home)}"
    return str(path)


def _read(path: Path, shown: str, warnings: list[str]) -> tuple[bytes, int] | None:
    """The file's first bytes (enough to fill LIMIT and to know it does not fit) and its size;
    None, with a warning, when it cannot be read as text."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            raw = f.read(LIMIT + len(BOM) + 4)
    except IsADirectoryError:
        warnings.append(f"[warning: {shown} is a folder, not a file — skipped]")
        return None
    except NotRegularFile:
        warnings.append(f"[warning: {shown} is not a regular file — skipped]")
        return None
    except OSError as exc:
        warnings.append(f"[warning: {shown} cannot be read ({exc.strerror or exc}) — skipped]")
        return None
    whole = len(raw) < LIMIT + len(BOM) + 4
    try:
        # An end cut in the middle of a character is no error: that part is cut anyway.
        codecs.getincrementaldecoder("utf-8")().decode(raw, final=whole)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        warnings.append(
            f"[warning: {shown} is not UTF-8 text (line {line}, byte 0x{raw[exc.start]:02x})"
            " — skipped]"
        )
        return None
    return raw.removeprefix(BOM), max(size, len(raw))


def _fit(found: list[tuple[Path, str, bytes, int]], warnings: list[str]) -> list[InstructionFile]:
    """The files within LIMIT bytes in all, the nearest first served; blank files dropped."""
    room = LIMIT
    kept: list[InstructionFile] = []
    for path, shown, raw, size in reversed(found):
        if not raw.strip():
            continue
        if len(raw) <= room:
            text = raw.decode("utf-8")
            kept.append(InstructionFile(path, shown, text, size))
            room -= len(raw)
            continue
        if room < MIN_PIECE:
            warnings.append(
                f"[warning: {shown} left out: project instructions take at most {LIMIT_TEXT} "
                "in all]"
            )
            continue
        text = _cut(raw, room)
        kept.append(InstructionFile(path, shown, text, size, cut=True))
        warnings.append(
            f"[warning: {shown} cut: project instructions take at most {LIMIT_TEXT} in all]"
        )
        room = 0
    kept.reverse()
    return kept


def _cut(raw: bytes, room: int) -> str:
    """At most `room` bytes of `raw` as text, ending at a line's end when one is near, and the
    mark that says so."""
    piece = raw[: room - len(CUT_MARK.encode()) - 2]
    end = piece.rfind(b"\n")
    if end >= len(piece) - 1024:
        piece = piece[: end + 1]
    text = piece.decode("utf-8", errors="ignore")  # only a character cut in two is dropped
    return text.rstrip("\n") + "\n" + CUT_MARK


def _size(count: int) -> str:
    return f"{count} bytes" if count < 1024 else f"{count / 1024:.1f} KiB"
