"""Sessions: one journal per session, `<id>.jsonl`, and a small `<id>.meta.json` beside it.

The journal is the truth. Its first line is the session's header; every later line is a record
of what happened, in order, never rewritten:

    {"type": "session", "version": 2, "id", "created", "cwd", "model", "provider", "base_url"}
    {"type": "message", "message": {...}}          one message of the history, as sent
    {"type": "message", "message": {role: assistant}, "thought": "..."}
                                                    an answer, and the reasoning before it
    {"type": "message", "message": {role: tool}, "tool": {"status", "elapsed", "title",
        "display"?, "diff"?}}                       a tool's result, and what the window showed
    {"type": "turn", "time", "counters", "usage", "elapsed", "stop_reason"}
    {"type": "error", "time", "where", "message"}
    {"type": "compaction", "time", "summary", "replaced", "auto", "messages": [...]}
    {"type": "shortened", "time", "index", "message", "cut"}   a history message shortened to fit
    {"type": "history", "time", "messages": [...]}             the history replaced as a whole

Replaying the records gives the history mm sends (`messages`) and the whole of what happened
(`records`), which the window redraws. A compaction or a shortening changes the history mm sends,
never the records before it: what was summarised or cut stays in the journal and on screen.

The metadata file (times, title, counts) is what the sessions list reads, so listing does not read
whole journals; it is replaced atomically, and a missing or damaged one is rebuilt from the journal.

Saving costs what the new records cost: `save` hands them to the journal's writer thread
(`journal.py`) and returns. A session file of format 1 (one JSON document, rewritten at every
save) is converted to a journal the first time it is opened, and kept beside it as `<id>.v1.json`.

The api key has no field here: a session file holds nothing that cannot be shown.

One process writes a journal at a time (its descriptor holds a lock, `journal.py`). A session
resumed while another mm has it open goes on in a fork: a copy of it as it stood at the end of
its last finished turn, under a new id, written whole at its first save, its header naming the
session it came from, and a warning saying so (`warnings`); the other mm keeps the original. ACP's `session/load` refuses instead (`fork=False`):
the editor's id must stay the session it names.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

from mm_tui.core.conversation import INTERRUPTED
from mm_tui.core.redact import Redactor, clean_url
from mm_tui.core.text import one_line
from mm_tui.engine.journal import (
    Journal,
    JournalBusy,
    JournalDamaged,
    open_for_append,
    read_records,
    release_descriptor,
    replace_file,
)

SESSION_VERSION = 2  # the journal; format 1 was one JSON file, converted when opened

_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]*")
JOURNAL_SUFFIX = ".jsonl"
META_SUFFIX = ".meta.json"
OLD_SUFFIX = ".json"
CONVERTED_SUFFIX = ".v1.json"


class SessionError(Exception):
    """A session that cannot be opened; str() is one line naming the file and the reason."""


class SessionBusy(SessionError):
    """A session another mm process writes, opened with `fork=False`."""


@dataclasses.dataclass(frozen=True)
class SessionInfo:
    """What the sessions list shows, without keeping every history in memory."""

    id: str
    created: str
    updated: str
    title: str  # the first user message, on one line, shortened; "" when there is none
    message_count: int
    cwd: str
    model: str | None


class Session:
    """One conversation. `messages` is the history exactly as mm sends it to the model;
    `records` is the journal in memory: everything that happened, in order."""

    def __init__(
        self,
        folder: Path,
        id: str,  # noqa: A002
        *,
        cwd: str,
        model: str | None,
        provider: str | None,
        base_url: str | None,
        created: str,
        updated: str | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.id = id
        self.cwd = cwd
        self.model = model
        self.provider = provider
        self.base_url = base_url
        self.created = created
        self.updated = updated or created
        self.version = SESSION_VERSION
        self.forked_from: str | None = None  # the session this one is a copy of
        self.messages: list[dict[str, Any]] = []
        self.turns: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.tool_results: dict[str, dict[str, Any]] = {}  # call id -> what the window showed
        self.records: list[dict[str, Any]] = [self._header()]
        self.warnings: list[str] = []  # what loading noticed (a torn last line), for the person
        self.repaired = False  # loading gave interrupted tool calls their results
        self._seen = 0  # messages of `messages` that have a record
        self._written = 0  # records handed to the journal
        self._journal: Journal | None = None
        self._reopen_at: int | None = None  # a loaded journal: append after this many bytes
        # the journal's locked descriptor, taken when it was resumed, until the journal opens
        self._claim: tuple[int, tuple[int, int]] | None = None
        # What is kept out of the file: the environment's keys until an engine gives its own.
        self.redactor = Redactor()
        self._titled = False

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
        return cls(
            folder,
            _new_id(now),
            cwd=str(cwd),
            model=model,
            provider=provider,
            base_url=base_url,
            created=_iso(now),
        )

    def _header(self) -> dict[str, Any]:
        header = {
            "type": "session",
            "version": SESSION_VERSION,
            "id": self.id,
            "created": self.created,
            "cwd": self.cwd,
            "model": self.model,
            "provider": self.provider,
            "base_url": clean_url(self.base_url),
        }
        if self.forked_from is not None:
            header["forked_from"] = self.forked_from
        return header

    @property
    def path(self) -> Path:
        return self.folder / f"{self.id}{JOURNAL_SUFFIX}"

    @property
    def meta_path(self) -> Path:
        return self.folder / f"{self.id}{META_SUFFIX}"

    # -- recording -------------------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Messages the engine appended to `messages` directly get their records."""
        while self._seen < len(self.messages):
            self.records.append({"type": "message", "message": self.messages[self._seen]})
            self._seen += 1

    def add_message(
        self,
        message: dict[str, Any],
        *,
        tool: Mapping[str, Any] | None = None,
        thought: str | None = None,
    ) -> None:
        """Append a message to the history; `tool`: a result's status, time and title, so that a
        resumed window shows the call as it ended (the message alone cannot say); `thought`: an
        answer's reasoning, kept beside the message and never sent back to the model (a server
        may refuse it there), so that a reopened session shows it again."""
        self._catch_up()
        self.messages.append(message)
        self._seen += 1
        record: dict[str, Any] = {"type": "message", "message": message}
        if thought:
            record["thought"] = thought
        if tool is not None:
            record["tool"] = {k: v for k, v in tool.items() if v is not None}
            self.tool_results[str(message.get("tool_call_id"))] = record["tool"]
        self.records.append(record)

    def set_messages(self, messages: list[dict[str, Any]]) -> None:
        """Replace the history as a whole and save."""
        self._catch_up()
        self.messages = list(messages)
        self._seen = len(self.messages)
        self.records.append({"type": "history", "time": _now(), "messages": self.messages})
        self.save()

    def compact(
        self,
        summary: str,
        messages: list[dict[str, Any]],
        *,
        auto: bool = False,
        tokens: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """The history becomes `messages` (a summary of it); the messages it replaces stay in
        the journal. Returns the record, which the window shows."""
        self._catch_up()
        record = {
            "type": "compaction",
            "time": _now(),
            "summary": summary,
            "replaced": len(self.messages),
            "auto": auto,
            **(tokens or {}),
            "messages": list(messages),
        }
        self.messages = list(messages)
        self._seen = len(self.messages)
        self.records.append(record)
        self.save()
        return record

    def shorten(self, index: int, message: dict[str, Any], cut: int) -> None:
        """The history's message at `index` is sent shortened from now on (`cut` characters
        fewer); the journal keeps the whole one."""
        self._catch_up()
        self.messages[index] = message
        self.records.append(
            {"type": "shortened", "time": _now(), "index": index, "message": message, "cut": cut}
        )

    def add_turn(
        self,
        *,
        counters: Mapping[str, Any] | Any,
        usage: Mapping[str, Any] | None,
        elapsed: float,
        stop_reason: str,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a finished turn and save. `counters` may be the events' Counters dataclass."""
        if dataclasses.is_dataclass(counters) and not isinstance(counters, type):
            counted = dataclasses.asdict(counters)
        else:
            counted = dict(counters)  # type: ignore[arg-type]  # a mapping, the only other kind
        turn = {
            "time": _now(),
            "counters": counted,
            "usage": dict(usage or {}),
            "elapsed": elapsed,
            "stop_reason": stop_reason,
            **(extra or {}),
        }
        self._catch_up()
        self.turns.append(turn)
        self.records.append({"type": "turn", **turn})
        self.save()

    def add_error(self, where: str, message: str) -> None:
        """Record an error and save: errors are what a person reads after something went wrong."""
        error = {"time": _now(), "where": where, "message": message}
        self._catch_up()
        self.errors.append(error)
        self.records.append({"type": "error", **error})
        self.save()

    # -- writing ---------------------------------------------------------------------------------

    def save(self, *, touch: bool = True) -> None:
        """Hand the new records to the journal's writer and return. Raises OSError when the
        session folder cannot be written, or when an earlier write failed (then the next save
        starts the journal afresh with the whole session, so nothing is lost once it can).
        `touch=False`: the session's time stays (a conversion is no change)."""
        self._catch_up()
        journal = self._journal
        if journal is not None:
            failure = journal.take_failure()
            if failure is not None:
                self._journal, self._written, self._reopen_at = None, 0, None
                raise failure
        if self._written == len(self.records):
            return
        if touch:
            # The newest record's own time when it has one: what loading finds again (the
            # newest of the meta's time and the records'), with no clock tick in between.
            times = [r["time"] for r in self.records[self._written :] if "time" in r]
            self.updated = max(times) if times else _now()
        created = False
        if self._journal is None and self._reopen_at is not None:
            claimed, self._claim = self._claim, None
            try:
                self._journal = Journal.reopen(self.path, self.meta_path, self._reopen_at, claimed)
            except JournalBusy:  # loaded without a claim, and another mm took it since
                self._fork()
        if self._journal is None:
            self._journal = Journal.create(self.path, self.meta_path)
            self._written, created = 0, True
        new = self.records[self._written :]
        self._written = len(self.records)
        meta = None
        if created or any(_changes_meta(r) for r in new):
            meta = self.meta()
        self._reopen_at = None
        self._journal.redactor = self.redactor
        self._journal.append(new, meta)

    def sync(self) -> Future[None] | None:
        """Everything saved so far reaches the disk (fsync) when the future is done; None when
        nothing was ever written."""
        return self._journal.sync() if self._journal is not None else None

    def close(self) -> Future[None] | None:
        """Save, sync and close the journal (the session is left, or mm exits)."""
        try:
            self.save()
        except OSError:
            pass
        self._release_claim()
        journal, self._journal = self._journal, None
        if journal is None:
            return None
        if self._written:
            self._reopen_at = None  # a later save (unusual) starts afresh with everything
            self._written = 0
        return journal.close()

    def to_dict(self) -> dict[str, Any]:
        """The session as one document (what format 1 held): for tests and for export."""
        return {
            **{k: v for k, v in self._header().items() if k != "type"},
            "updated": self.updated,
            "messages": self.messages,
            "turns": self.turns,
            "errors": self.errors,
        }

    def meta(self) -> dict[str, Any]:
        """The metadata file's content. Its title is redacted before it is shortened (a key cut
        in two at the 80th character would no longer be found whole), and the journal writes
        the whole of it through the redactor."""
        title = _title(self.records, self.redactor.text)
        return {
            "id": self.id,
            "version": SESSION_VERSION,
            "created": self.created,
            "updated": self.updated,
            "cwd": self.cwd,
            "model": self.model,
            "provider": self.provider,
            "base_url": clean_url(self.base_url),
            "title": title,
            "message_count": sum(
                len(_messages_of(r)) for r in self.records if r["type"] != "compaction"
            ),
        }

    # -- reading ---------------------------------------------------------------------------------

    @classmethod
    def load(
        cls, folder: Path, session_id: str, *, claim: bool = False, fork: bool = True
    ) -> Session:
        """Reopen a session. A damaged journal raises SessionError and is left as it is; a torn
        last line is skipped, with a warning in `warnings`.

        `claim`: the session is to be continued, so its journal is locked for this process
        before it is read (nothing another mm writes can come between the reading and the
        lock). When another mm holds it, the session goes on in a fork, said in `warnings`, or
        with `fork` False SessionError says so."""
        folder = Path(folder)
        if not _ID.fullmatch(session_id):
            raise SessionError(f"mm: {session_id!r} is not a session id")
        path = folder / f"{session_id}{JOURNAL_SUFFIX}"
        old = folder / f"{session_id}{OLD_SUFFIX}"
        if not _exists(path) and _exists(old):
            return _convert(folder, session_id, old)
        claimed, busy = None, False
        if claim:
            try:
                claimed = open_for_append(path)
            except JournalBusy:
                busy = True
                if not fork:
                    raise SessionBusy(
                        f"mm: session {session_id} is open in another mm process, which writes "
                        "it; close it there, or open it in a terminal (`mm --resume "
                        f"{session_id}`), which goes on in a copy"
                    ) from None
            except OSError:
                pass  # a file mm cannot write: reading says why, or the first save does
        try:
            records, whole, torn = _read_journal(path)
            if busy:  # the turn the other mm is in is its own: the copy starts before it
                records, torn = _settled(records), 0
            session = _replay(folder, session_id, records)
        except BaseException:
            if claimed is not None:
                release_descriptor(*claimed)
            raise
        session._reopen_at = whole
        session._claim = claimed
        session._written = len(session.records)
        if torn:
            session.warnings.append(
                f"the last line of {path} was cut short ({torn} bytes: mm was stopped while "
                "writing it) and is skipped; everything before it is here"
            )
        repaired = answer_interrupted_tool_calls(session.messages)
        if repaired != session.messages:
            session.repaired = True
            if repaired[: len(session.messages)] == session.messages:
                session.messages = repaired  # the answers are new records of the next save
            else:
                session.messages = repaired
                session._seen = len(repaired)
                session.records.append({"type": "history", "time": _now(), "messages": repaired})
        if busy:
            session._fork()
        return session

    def _fork(self) -> None:
        """Go on as a copy of this session under a new id, written whole at the next save:
        another mm writes the original. Said in `warnings`."""
        self._release_claim()
        original = self.id
        self.forked_from = original
        self.id = _new_id(datetime.now(UTC))
        self.records[0] = self._header()
        self._journal, self._written, self._reopen_at = None, 0, None
        self.warnings.append(
            f"session {original} is open in another mm process, which writes it: this one goes "
            f"on in a copy of it, session {self.id}"
        )

    def _release_claim(self) -> None:
        """Unlock a journal claimed for a resume that is left before writing it."""
        claimed, self._claim = self._claim, None
        if claimed is not None:
            release_descriptor(*claimed)

    @classmethod
    def latest(cls, folder: Path) -> Session | None:
        """The session written last that holds a request (`--resume` without an id), or None
        when there is none. A session left empty (mm opened and closed without a request) is
        passed over: resuming it would hide the work of the one before; when all are empty,
        the newest.

        A damaged newest file is not passed over in silence: the person most likely meant that
        one, so its SessionError is raised, with how to open another."""
        folder = Path(folder)
        paths = sorted(_session_paths(folder).values(), key=_mtime, reverse=True)
        if not paths:
            return None
        newest: Session | None = None
        for index, path in enumerate(paths):
            try:
                session = cls.load(folder, _id_of(path))
            except SessionError as exc:
                if index == 0:
                    raise SessionError(
                        f"{exc} — it is the newest session file; --resume ID opens another"
                    ) from None
                continue
            if any(m.get("role") == "user" for m in session.messages):
                return session
            newest = newest or session
        return newest

    @staticmethod
    def list_sessions(folder: Path) -> list[SessionInfo]:
        return list_sessions(folder)

    def move_to(self, folder: Path) -> None:
        """Go on in `folder`: the next save writes the whole session there, as a new journal;
        the file it was read from is left as it was (an old session folder is only read)."""
        self._release_claim()
        self.folder = Path(folder)
        self._journal, self._written, self._reopen_at = None, 0, None


def find_session(folders: Sequence[Path], session_id: str, *, fork: bool = True) -> Session:
    """`--resume ID` over the session folders, the first first: a session found in a later one
    (the project's old `.mm/sessions`) moves to the first (`move_to`). Raises SessionError.
    The session is to be continued: its journal is claimed (`Session.load`), and one another
    mm writes goes on in a fork (with `fork` False: SessionError)."""
    for index, folder in enumerate(folders):
        folder = Path(folder)
        if _ID.fullmatch(session_id) and session_id in _session_paths(folder):
            session = Session.load(folder, session_id, claim=not index, fork=fork)
            if index:
                session.move_to(folders[0])
            return session
    return Session.load(folders[0], session_id)  # its error: no such session


def latest_session(folders: Sequence[Path]) -> Session | None:
    """`--resume`: the newest session of the first folder that has any (moved to the first
    folder when found in a later one); None when none has."""
    for index, folder in enumerate(folders):
        session = Session.latest(folder)
        if session is not None:
            if index:
                session.move_to(folders[0])
            elif session.path.exists():  # read again, claimed: see `Session.load`
                session = Session.load(folder, session.id, claim=True)
            return session
    return None


def list_sessions_in(folders: Sequence[Path]) -> list[SessionInfo]:
    """Every readable session of the folders, newest first; an id in two folders is listed
    once, as the first folder has it (a moved session's newer copy)."""
    seen: dict[str, SessionInfo] = {}
    for folder in folders:
        for info in list_sessions(folder):
            seen.setdefault(info.id, info)
    return sorted(seen.values(), key=lambda info: (info.updated, info.id), reverse=True)


def list_sessions(folder: Path) -> list[SessionInfo]:
    """Every readable session, newest first, from the metadata files (a journal without a
    readable one is read whole). Damaged files are left out, not fatal here."""
    folder = Path(folder)
    infos = []
    for session_id, path in _session_paths(folder).items():
        try:
            if path.name.endswith(JOURNAL_SUFFIX):
                meta = _read_meta(folder / f"{session_id}{META_SUFFIX}")
                if meta is None:
                    meta = _replay(folder, session_id, _read_journal(path)[0]).meta()
            else:
                meta = _meta_of_old(_read_old(path))
        except SessionError:
            continue
        infos.append(
            SessionInfo(
                id=session_id,
                created=meta["created"],
                updated=meta["updated"],
                title=meta["title"],
                message_count=meta["message_count"],
                cwd=meta["cwd"],
                model=meta["model"],
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


# -- the journal's records -----------------------------------------------------------------------


def _replay(folder: Path, session_id: str, records: list[dict[str, Any]]) -> Session:
    """A session from its records; raises SessionError for records that do not make one."""
    path = folder / f"{session_id}{JOURNAL_SUFFIX}"
    bad = f"mm: {path}: not a valid session file"
    if not records or records[0].get("type") != "session":
        raise SessionError(f"{bad}: no session header on its first line")
    header = records[0]
    _check_version(path, header.get("version"), 2, SESSION_VERSION)
    expected: dict[str, type | tuple[type, ...]] = {
        "created": str,
        "cwd": str,
        "model": (str, type(None)),
        "provider": (str, type(None)),
        "base_url": (str, type(None)),
    }
    for key, kind in expected.items():
        if not isinstance(header.get(key), kind):
            raise SessionError(f'{bad}: "{key}" is missing or has the wrong type')
    session = Session(
        folder,
        session_id,
        cwd=header["cwd"],
        model=header["model"],
        provider=header["provider"],
        base_url=header["base_url"],
        created=header["created"],
    )
    session.records = records
    messages: list[dict[str, Any]] = []
    for number, record in enumerate(records[1:], start=2):
        kind = record["type"]
        if kind == "message":
            message = record.get("message")
            if not _is_message(message):
                raise SessionError(f"{bad}: record {number} holds something that is not a message")
            messages.append(message)
            if isinstance(record.get("tool"), dict):
                session.tool_results[str(message.get("tool_call_id"))] = record["tool"]
        elif kind in ("compaction", "history"):
            replacement = record.get("messages")
            if not isinstance(replacement, list) or not all(map(_is_message, replacement)):
                raise SessionError(f"{bad}: record {number} holds something that is not a history")
            messages = list(replacement)
        elif kind == "shortened":
            index, message = record.get("index"), record.get("message")
            if not isinstance(index, int) or not 0 <= index < len(messages):
                raise SessionError(f"{bad}: record {number} shortens a message that is not there")
            if not _is_message(message):
                raise SessionError(f"{bad}: record {number} holds something that is not a message")
            messages[index] = message
        elif kind == "turn":
            session.turns.append({k: v for k, v in record.items() if k != "type"})
        elif kind == "error":
            session.errors.append({k: v for k, v in record.items() if k != "type"})
        if isinstance(record.get("time"), str):
            session.updated = max(session.updated, record["time"])
        # Other types (a later mm's) are kept in `records` and written back as they are.
    session.messages = messages
    session._seen = len(messages)
    return session


def _check_version(path: Path, version: Any, lowest: int, highest: int) -> None:
    """A file of format `lowest` to `highest`; a later format is a newer mm's, said as such."""
    if not isinstance(version, int) or isinstance(version, bool) or version < lowest:
        raise SessionError(f"mm: {path}: not a valid session file: no version number")
    if version > highest:
        raise SessionError(
            f"mm: {path}: written by a newer mm (session format {version}; "
            f"this mm reads format {SESSION_VERSION}); upgrade mm to open it"
        )


def _is_message(message: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(message, dict) and isinstance(message.get("role"), str)


def _settled(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records up to the end of the last finished turn (to the first request when none
    has finished): what a session another process is writing holds for sure. What follows is
    that process's turn in flight, a request without its answer, calls without results."""
    for index in range(len(records) - 1, 0, -1):
        if records[index].get("type") == "turn":
            return records[: index + 1]
    for index, record in enumerate(records):
        if any(m.get("role") == "user" for m in _messages_of(record)):
            return records[:index]
    return records


def _new_id(now: datetime) -> str:
    """A session id: sorts by time; os.urandom, as secrets.token_hex is, without secrets' import
    (hmac)."""
    return f"{now:%Y%m%d-%H%M%S}-{os.urandom(3).hex()}"


def _changes_meta(record: dict[str, Any]) -> bool:
    """A record after which the metadata file is rewritten: anything but the assistant's and
    the tools' messages and the shortenings, which come by the thousand."""
    if record["type"] == "shortened":
        return False
    if record["type"] != "message":
        return True
    return record["message"].get("role") not in ("assistant", "tool")


def _read_bytes(path: Path) -> bytes:
    """A session file's bytes, or SessionError saying why not (a link out refused too)."""
    _check_inside(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise SessionError(f"mm: {path}: no such session") from None
    except OSError as exc:
        raise SessionError(f"mm: {path}: cannot read: {exc.strerror or exc}") from None


def _read_journal(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    raw = _read_bytes(path)
    try:
        return read_records(raw)
    except JournalDamaged as exc:
        raise SessionError(f"mm: {path}: not a valid session file: {exc}") from None


def _read_meta(path: Path) -> dict[str, Any] | None:
    """The metadata file, or None when it is missing or not what it should be."""
    try:
        _check_inside(path)
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, SessionError):
        return None
    kinds = {
        "created": str,
        "updated": str,
        "cwd": str,
        "title": str,
        "message_count": int,
        "model": (str, type(None)),
    }
    if not isinstance(data, dict) or not all(isinstance(data.get(k), t) for k, t in kinds.items()):
        return None
    return data


def _messages_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages a record adds to the history."""
    if record["type"] == "message":
        return [record["message"]]
    if record["type"] in ("history", "compaction"):
        return record["messages"]
    return []


def _title(records: list[dict[str, Any]], redact: Callable[[str], str] = str) -> str:
    for message in (m for r in records for m in _messages_of(r)):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        return one_line(redact(str(content or "")), 80)
    return ""


# -- format 1: one JSON document -------------------------------------------------------------------


def _read_old(path: Path) -> dict[str, Any]:
    """The checked contents of a format-1 session file, or SessionError."""
    raw = _read_bytes(path)
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
    _check_version(path, data.get("version"), 1, 1)
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
    if not all(_is_message(m) for m in data["messages"]):
        raise SessionError(f'{bad}: "messages" holds something that is not a message')
    return data


def _meta_of_old(data: dict[str, Any]) -> dict[str, Any]:
    return {
        **data,
        "title": _title([{"type": "message", "message": m} for m in data["messages"]]),
        "message_count": len(data["messages"]),
    }


def _old_records(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A format-1 file's contents as journal records. Its turns and errors were kept apart from
    the messages: each turn goes before the next question, each error before its turn's end.
    Its tool results carry no status; a result that reads as an error is shown as one, the only
    time the text decides (a format-1 file has nothing better)."""
    records: list[dict[str, Any]] = []
    later = sorted(
        [{"type": "turn", **t} for t in data["turns"] if isinstance(t, dict)]
        + [{"type": "error", **e} for e in data["errors"] if isinstance(e, dict)],
        key=lambda r: (str(r.get("time", "")), r["type"] == "turn"),
    )
    questions = 0
    for message in data["messages"]:
        if message.get("role") == "user":
            questions += 1
            while questions > 1 and later:  # the previous turn's errors and end
                record = later.pop(0)
                records.append(record)
                if record["type"] == "turn":
                    break
        record = {"type": "message", "message": message}
        if message.get("role") == "tool":
            content = str(message.get("content") or "")
            # Format 1 kept no status: the text is all there is to tell one from (new records
            # carry the real status, and nothing else reads it back from the text).
            status = "error" if content.startswith("[error") else "ok"
            if content.endswith("rejected by the user]"):
                status = "rejected"
            record["tool"] = {"status": status}
        records.append(record)
    records.extend(later)
    return records


def _convert(folder: Path, session_id: str, old: Path) -> Session:
    """Open a format-1 file: read it, write its journal, keep the old file as `<id>.v1.json`."""
    data = _read_old(old)
    fields = ("created", "cwd", "model", "provider", "base_url")
    header = {"type": "session", "version": SESSION_VERSION, "id": session_id}
    header.update({key: data[key] for key in fields})
    session = _replay(folder, session_id, [header, *_old_records(data)])
    session.updated = max(session.updated, data["updated"])
    try:
        session.save(touch=False)
        future = session.sync()
        if future is not None:
            future.result(30)
        failure = session._journal.take_failure() if session._journal else None
        if failure is not None:
            raise failure
        os.replace(old, folder / f"{session_id}{CONVERTED_SUFFIX}")
    except OSError as exc:
        # It still opens; the conversion is tried again at the next save or resume.
        session._journal, session._written, session._reopen_at = None, 0, None
        session.warnings.append(f"mm: {old}: could not be converted to a journal yet ({exc})")
    repaired = answer_interrupted_tool_calls(session.messages)
    if repaired != session.messages and repaired[: len(session.messages)] == session.messages:
        session.messages, session.repaired = repaired, True
    return session


# -- files -------------------------------------------------------------------------------------------


def _session_paths(folder: Path) -> dict[str, Path]:
    """The sessions of `folder` by id: `<id>.jsonl`, else a format-1 `<id>.json`."""
    found: dict[str, Path] = {}
    try:
        entries = list(folder.iterdir())
    except OSError:
        return found
    for path in entries:
        name = path.name
        if name.endswith(JOURNAL_SUFFIX):
            session_id = name[: -len(JOURNAL_SUFFIX)]
            if _ID.fullmatch(session_id):
                found[session_id] = path
        elif name.endswith(OLD_SUFFIX):
            session_id = name[: -len(OLD_SUFFIX)]
            if _ID.fullmatch(session_id):
                found.setdefault(session_id, path)
    return found


def _id_of(path: Path) -> str:
    name = path.name
    return name[: -len(JOURNAL_SUFFIX)] if name.endswith(JOURNAL_SUFFIX) else path.stem


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


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


def _now() -> str:
    return _iso(datetime.now(UTC))


def _iso(moment: datetime) -> str:
    """ISO 8601 UTC to the millisecond, fixed width so that text order is time order."""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


__all__ = [
    "INTERRUPTED",
    "SESSION_VERSION",
    "Session",
    "SessionBusy",
    "SessionError",
    "SessionInfo",
    "answer_interrupted_tool_calls",
    "find_session",
    "latest_session",
    "list_sessions",
    "list_sessions_in",
    "replace_file",
]
