"""The files of a session: their names, their format, and reading them.


The journal is the truth. Its first line is the session's header; every later line is a record
of what happened, in order, never rewritten: a message of the history as sent (an answer with
the reasoning before it, a tool's result with what the window showed of it), a turn's end, an
error, a compaction (the history replaced by a summary of it), a history message shortened to
fit, the history replaced as a whole. Their fields and their JSON form are the types of
`core/journal_records.py`, which this module's replay reads them through.

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

import errno
import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mm_tui.core.conversation import INTERRUPTED, flat_text
from mm_tui.core.frozen import frozen, mutable
from mm_tui.core.journal_records import (
    NOT_THERE,
    CompactionRecord,
    ErrorRecord,
    Header,
    HistoryRecord,
    MessageRecord,
    ModelRecord,
    RecordError,
    ShortenedRecord,
    ToolRecord,
    TurnRecord,
    messages_of,
    parse_record,
)
from mm_tui.core.text import one_line
from mm_tui.engine.journal_files import JournalDamaged, read_records

SESSION_VERSION = 2  # the journal; format 1 was one JSON file, converted when opened

SESSION_ID = (
    r"[0-9A-Za-z][0-9A-Za-z_-]*"  # compiled by `re` at its first use, not on the way to ready
)
JOURNAL_SUFFIX = ".jsonl"
META_SUFFIX = ".meta.json"
OLD_SUFFIX = ".json"
CONVERTED_SUFFIX = ".v1.json"


class SessionError(Exception):
    """A session that cannot be opened; str() is one line naming the file and the reason."""


class SessionBusy(SessionError):
    """A session another mm process writes, opened with `fork=False`."""


@frozen
class SessionInfo:
    """What the sessions list shows, without keeping every history in memory."""

    id: str
    created: str
    updated: str
    title: str  # the first user message, on one line, shortened; "" when there is none
    message_count: int
    cwd: str
    model: str | None


def new_id(now: datetime) -> str:
    """A session id: sorts by time; os.urandom, as secrets.token_hex is, without secrets' import
    (hmac)."""
    return f"{now:%Y%m%d-%H%M%S}-{os.urandom(3).hex()}"


def changes_meta(record: dict[str, Any]) -> bool:
    """A record after which the metadata file is rewritten: anything but the assistant's and
    the tools' messages and the shortenings, which come by the thousand."""
    if record["type"] == ShortenedRecord.kind:
        return False
    if record["type"] != MessageRecord.kind:
        return True
    return messages_of(record)[0].get("role") not in ("assistant", "tool")


def read_bytes(path: Path) -> bytes:
    """A session file's bytes, or SessionError saying why not (a link out refused too)."""
    check_inside(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise SessionError(f"mm: {path}: no such session") from None
    except OSError as exc:
        raise SessionError(f"mm: {path}: cannot read: {exc.strerror or exc}") from None


def read_journal(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    raw = read_bytes(path)
    try:
        return read_records(raw)
    except JournalDamaged as exc:
        raise SessionError(f"mm: {path}: not a valid session file: {exc}") from None


def read_meta(path: Path) -> dict[str, Any] | None:
    """The metadata file, or None when it is missing or not what it should be."""
    try:
        check_inside(path)
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


def title_of(records: list[dict[str, Any]], redact: Callable[[str], str] = str) -> str:
    for message in (m for r in records for m in messages_of(r)):
        if message.get("role") != "user":
            continue
        return one_line(redact(flat_text(message.get("content"))), 80)
    return ""


def check_version(path: Path, version: Any, lowest: int, highest: int) -> None:
    """A file of format `lowest` to `highest`; a later format is a newer mm's, said as such."""
    if not isinstance(version, int) or isinstance(version, bool) or version < lowest:
        raise SessionError(f"mm: {path}: not a valid session file: no version number")
    if version > highest:
        raise SessionError(
            f"mm: {path}: written by a newer mm (session format {version}; "
            f"this mm reads format {SESSION_VERSION}); upgrade mm to open it"
        )


def settled(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records up to the end of the last finished turn (to the first request when none
    has finished): what a session another process is writing holds for sure. What follows is
    that process's turn in flight, a request without its answer, calls without results."""
    for index in range(len(records) - 1, 0, -1):
        if records[index].get("type") == TurnRecord.kind:
            return records[: index + 1]
    for index, record in enumerate(records):
        if any(m.get("role") == "user" for m in messages_of(record)):
            return records[:index]
    return records


def session_paths(folder: Path) -> dict[str, Path]:
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
            if re.fullmatch(SESSION_ID, session_id):
                found[session_id] = path
        elif name.endswith(OLD_SUFFIX):
            session_id = name[: -len(OLD_SUFFIX)]
            if re.fullmatch(SESSION_ID, session_id):
                found.setdefault(session_id, path)
    return found


def id_of(path: Path) -> str:
    name = path.name
    return name[: -len(JOURNAL_SUFFIX)] if name.endswith(JOURNAL_SUFFIX) else path.stem


def exists(path: Path) -> bool:
    return os.path.lexists(path)


def mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def check_inside(path: Path) -> None:
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


def now() -> str:
    return iso(datetime.now(UTC))


def iso(moment: datetime) -> str:
    """ISO 8601 UTC to the millisecond, fixed width so that text order is time order."""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


@mutable
class History:
    """What a journal's records make: the history mm sends, what each result showed, the
    turns' ends, the errors, and the newest record's time."""

    messages: list[dict[str, Any]]
    tool_results: dict[str, ToolRecord]
    turns: list[TurnRecord]
    errors: list[ErrorRecord]
    updated: str
    model: str | None = None  # the last model `/model` switched to, if it ever did


def checked_header(path: Path, records: list[dict[str, Any]]) -> Header:
    """The journal's header; SessionError when there is none or it lacks a field."""
    bad = f"mm: {path}: not a valid session file"
    if not records or records[0].get("type") != Header.kind:
        raise SessionError(f"{bad}: no session header on its first line")
    check_version(path, records[0].get("version"), 2, SESSION_VERSION)
    try:
        header = parse_record(records[0])
    except RecordError as exc:
        raise SessionError(f"{bad}: {exc}") from None
    assert isinstance(header, Header)  # its type is "session"
    return header


def replay_history(path: Path, records: list[dict[str, Any]]) -> History:
    """The records after the header, replayed; SessionError for one that does not fit. Other
    types (a later mm's) are passed over: they stay in the records, written back as they are."""
    history = History([], {}, [], [], "")
    for number, record in enumerate(records[1:], start=2):
        _replay_one(f"mm: {path}: not a valid session file: record {number}", record, history)
        if isinstance(record.get("time"), str):
            history.updated = max(history.updated, record["time"])
    return history


def _replay_one(bad: str, raw: dict[str, Any], history: History) -> None:
    try:
        record = parse_record(raw)
    except RecordError as exc:
        raise SessionError(f"{bad} {exc}") from None
    match record:
        case MessageRecord(message=message, tool=tool):
            history.messages.append(message)
            if tool is not None:
                history.tool_results[str(message.get("tool_call_id"))] = tool
        case CompactionRecord(messages=messages) | HistoryRecord(messages=messages):
            history.messages = list(messages)
        case ShortenedRecord(index=index, message=message):
            if not 0 <= index < len(history.messages):
                raise SessionError(f"{bad} {NOT_THERE}")
            history.messages[index] = message
        case TurnRecord():
            history.turns.append(record)
        case ErrorRecord():
            history.errors.append(record)
        case ModelRecord(model=model):
            history.model = model
        case _:
            pass  # the header again, or a later mm's kind: kept in the records as it is
