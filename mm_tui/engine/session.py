"""Session files: one JSON file per session, rewritten atomically whenever the history changes.

A crash or a kill at any moment must leave the last complete state on disk, so a save writes a
temporary file beside the real one, syncs it, renames it over the real one and syncs the folder.
The temporary file is named after the session and the process (`.<id>.<pid>.json.tmp`): two mm
processes saving at once never write into the same file, and a later save can tell a leftover of
a killed process (its pid is gone) from a save still in progress elsewhere.

The api key has no field here: a session file holds nothing that cannot be shown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mm_tui.engine.redact import in_json, redact_data

SESSION_VERSION = 1
INTERRUPTED = "[error: interrupted — mm stopped before this tool call finished]"

_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]*")
_TEMP_SUFFIX = ".json.tmp"


class SessionError(Exception):
    """A session that cannot be opened; str() is one line naming the file and the reason."""


@dataclass(frozen=True)
class SessionInfo:
    """What the sessions list shows, without keeping every history in memory."""

    id: str
    created: str
    updated: str
    title: str  # the first user message, on one line, shortened; "" when there is none
    message_count: int
    cwd: str
    model: str | None


@dataclass
class Session:
    """One conversation. `messages` is the history exactly as sent to the model."""

    folder: Path
    id: str
    cwd: str
    model: str | None
    provider: str | None
    base_url: str | None
    created: str
    updated: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    version: int = SESSION_VERSION

    @classmethod
    def new(
        cls,
        folder: Path,
        *,
        cwd: str | Path,
        model: str | None,
        provider: str | None,
        base_url: str | None,
    ) -> Session:
        """A session in memory only: a person who starts mm and quits leaves no empty file."""
        now = datetime.now(UTC)
        session_id = f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"  # sorts by time
        stamp = _iso(now)
        return cls(
            folder=Path(folder),
            id=session_id,
            cwd=str(cwd),
            model=model,
            provider=provider,
            base_url=base_url,
            created=stamp,
            updated=stamp,
        )

    @property
    def path(self) -> Path:
        return self.folder / f"{self.id}.json"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "version": self.version,
            "created": self.created,
            "updated": self.updated,
            "cwd": self.cwd,
            "model": self.model,
            "provider": self.provider,
            "base_url": self.base_url,
            "messages": self.messages,
            "turns": self.turns,
            "errors": self.errors,
        }

    def save(self) -> None:
        """Replace the file in one step, so that a reader or a crash sees the old or the new state."""
        self.updated = _iso(datetime.now(UTC))
        data = self.to_dict()
        payload = _payload(data)
        # The last guard for the api key: whatever way it got into the history, not into a file.
        if in_json(payload):
            payload = _payload(redact_data(data))
        _make_folder(self.folder)
        temp = self.folder / f".{self.id}.{os.getpid()}{_TEMP_SUFFIX}"
        # A leftover of an earlier process that had this pid, or a link someone put there: the
        # new file is created afresh and never written through a link.
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        try:
            # 0o600: tool output in the history may hold whatever the tools read.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(temp, flags, 0o600)
            with open(fd, "wb") as out:
                out.write(payload)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        _fsync_folder(self.folder)
        _remove_stale_temps(self.folder)

    def set_messages(self, messages: list[dict[str, Any]]) -> None:
        """Replace the history (a new message, /compact) and save it."""
        self.messages = list(messages)
        self.save()

    def add_turn(
        self,
        *,
        counters: Mapping[str, Any] | Any,
        usage: Mapping[str, Any] | None,
        elapsed: float,
        stop_reason: str,
    ) -> None:
        """Record a finished turn and save. `counters` may be the events' Counters dataclass."""
        if dataclasses.is_dataclass(counters) and not isinstance(counters, type):
            counters = dataclasses.asdict(counters)
        self.turns.append(
            {
                "time": _iso(datetime.now(UTC)),
                "counters": dict(counters),
                "usage": dict(usage or {}),
                "elapsed": elapsed,
                "stop_reason": stop_reason,
            }
        )
        self.save()

    def add_error(self, where: str, message: str) -> None:
        """Record an error and save: errors are what a person reads after something went wrong."""
        self.errors.append({"time": _iso(datetime.now(UTC)), "where": where, "message": message})
        self.save()

    @classmethod
    def load(cls, folder: Path, session_id: str) -> Session:
        """Reopen a session. A damaged file raises SessionError and is left as it is."""
        folder = Path(folder)
        if not _ID.fullmatch(session_id):
            raise SessionError(f"mm: {session_id!r} is not a session id")
        data = _read(folder / f"{session_id}.json")
        session = cls(
            folder=folder,
            id=session_id,
            cwd=data["cwd"],
            model=data["model"],
            provider=data["provider"],
            base_url=data["base_url"],
            created=data["created"],
            updated=data["updated"],
            messages=data["messages"],
            turns=data["turns"],
            errors=data["errors"],
        )
        session.messages = answer_interrupted_tool_calls(session.messages)
        return session

    @classmethod
    def latest(cls, folder: Path) -> Session | None:
        """The session updated last (`--resume` without an id), or None when there is none.

        A damaged file written after it is not passed over in silence: the person most likely
        meant that one, so its SessionError is raised, with how to open another."""
        folder = Path(folder)
        infos = list_sessions(folder)
        newest = _mtime(folder / f"{infos[0].id}.json") if infos else None
        readable = {info.id for info in infos}
        for path in sorted(_session_paths(folder), key=_mtime, reverse=True):
            if newest is not None and _mtime(path) <= newest:
                break
            if path.stem in readable:
                continue
            try:
                _read(path)
            except SessionError as exc:
                raise SessionError(
                    f"{exc} — it is the newest session file; --resume ID opens another"
                ) from None
        return cls.load(folder, infos[0].id) if infos else None

    @staticmethod
    def list_sessions(folder: Path) -> list[SessionInfo]:
        return list_sessions(folder)


def list_sessions(folder: Path) -> list[SessionInfo]:
    """Every readable session, newest first. Damaged files are left out, not fatal here."""
    infos = []
    for path in _session_paths(Path(folder)):
        try:
            data = _read(path)
        except SessionError:
            continue
        infos.append(
            SessionInfo(
                id=path.stem,
                created=data["created"],
                updated=data["updated"],
                title=_title(data["messages"]),
                message_count=len(data["messages"]),
                cwd=data["cwd"],
                model=data["model"],
            )
        )
    infos.sort(key=lambda info: (info.updated, info.id), reverse=True)
    return infos


def answer_interrupted_tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every tool call a result, so a history cut short by a kill is still one a server takes.

    OpenAI-compatible servers reject an assistant message whose tool calls are not each followed
    by a tool message; the missing ones get a result that says what happened.
    """
    repaired: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        repaired.append(message)
        i += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        answered = set()
        while i < len(messages) and messages[i].get("role") == "tool":
            answered.add(messages[i].get("tool_call_id"))
            repaired.append(messages[i])
            i += 1
        for call in calls:
            call_id = call.get("id") if isinstance(call, dict) else None
            if call_id is not None and call_id not in answered:
                repaired.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
    return repaired


def _read(path: Path) -> dict[str, Any]:
    """The checked contents of a session file, or SessionError with one line saying what is wrong."""
    _check_inside(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SessionError(f"mm: {path}: no such session") from None
    except OSError as exc:
        raise SessionError(f"mm: {path}: cannot read: {exc.strerror or exc}") from None
    bad = f"mm: {path}: not a valid session file"
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise SessionError(f"{bad}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        where = f"{exc.msg}, line {exc.lineno} column {exc.colno}"
        raise SessionError(f"{bad}: cut short or not JSON ({where})") from None
    if not isinstance(data, dict):
        raise SessionError(f"{bad}: not a JSON object")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SessionError(f"{bad}: no version number")
    if version > SESSION_VERSION:
        raise SessionError(
            f"mm: {path}: written by a newer mm (session format {version}; "
            f"this mm reads format {SESSION_VERSION}); upgrade mm to open it"
        )
    expected: dict[str, type | tuple[type, ...]] = {
        "created": str,
        "updated": str,
        "cwd": str,
        "model": (str, type(None)),
        "provider": (str, type(None)),
        "base_url": (str, type(None)),
        "messages": list,
        "turns": list,
        "errors": list,
    }
    for key, kind in expected.items():
        if key not in data:
            raise SessionError(f'{bad}: "{key}" is missing')
        if not isinstance(data[key], kind):
            raise SessionError(f'{bad}: "{key}" has the wrong type')
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in data["messages"]):
        raise SessionError(f'{bad}: "messages" holds something that is not a message')
    return data


def _payload(data: dict[str, Any]) -> bytes:
    try:
        return json.dumps(data, ensure_ascii=False, indent=1).encode()
    except UnicodeEncodeError:  # a lone surrogate from a model: only \u escapes carry it
        return json.dumps(data, indent=1).encode()


def _session_paths(folder: Path) -> list[Path]:
    """The files of `folder` named like a session (`<id>.json`); none when it is no folder."""
    try:
        return [p for p in folder.glob("*.json") if _ID.fullmatch(p.stem)]
    except OSError:
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _check_inside(path: Path) -> None:
    """A session file is a file of its folder: a symbolic link that leads out of the folder
    (to a private file, or to another project's session) or round in a loop is refused."""
    if not path.is_symlink():
        return
    try:
        target = os.path.realpath(path, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SessionError(f"mm: {path}: refused: a symbolic link loop") from None
        raise SessionError(f"mm: {path}: refused: a symbolic link to nothing") from None
    folder = os.path.realpath(path.parent)
    if os.path.dirname(target) != folder:
        raise SessionError(
            f"mm: {path}: refused: a symbolic link out of the session folder (to {target})"
        )


def _make_folder(folder: Path) -> None:
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


def _title(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        text = " ".join(str(content or "").split())
        return text if len(text) <= 80 else text[:79] + "…"
    return ""


def _iso(moment: datetime) -> str:
    """ISO 8601 UTC to the millisecond, fixed width so that text order is time order."""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable: without it a power cut can bring the old file back."""
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


def _remove_stale_temps(folder: Path) -> None:
    """Delete temporary files left by killed processes; those of live processes are in use."""
    for temp in folder.glob(f".*{_TEMP_SUFFIX}"):
        pid = temp.name[: -len(_TEMP_SUFFIX)].rpartition(".")[2]
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
