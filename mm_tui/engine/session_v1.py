"""Format 1 of a session: one JSON document, rewritten at every save. Such a file is converted
to a journal the first time it is opened (`Session.load`), and kept beside it as `<id>.v1.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mm_tui.core.journal_records import (
    ErrorRecord,
    MessageRecord,
    ToolRecord,
    TurnRecord,
    is_message,
)
from mm_tui.engine.session_files import SessionError, check_version, read_bytes, title_of


def read_old(path: Path) -> dict[str, Any]:
    """The checked contents of a format-1 session file, or SessionError."""
    raw = read_bytes(path)
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
    check_version(path, data.get("version"), 1, 1)
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
    if not all(is_message(m) for m in data["messages"]):
        raise SessionError(f'{bad}: "messages" holds something that is not a message')
    return data


def meta_of_old(data: dict[str, Any]) -> dict[str, Any]:
    return {
        **data,
        "title": title_of([MessageRecord(message=m).to_json() for m in data["messages"]]),
        "message_count": len(data["messages"]),
    }


def old_records(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A format-1 file's contents as journal records. Its turns and errors were kept apart from
    the messages: each turn goes before the next question, each error before its turn's end.
    Its tool results carry no status; a result that reads as an error is shown as one, the only
    time the text decides (a format-1 file has nothing better)."""
    records: list[dict[str, Any]] = []
    later = sorted(
        [{"type": TurnRecord.kind, **t} for t in data["turns"] if isinstance(t, dict)]
        + [{"type": ErrorRecord.kind, **e} for e in data["errors"] if isinstance(e, dict)],
        key=lambda r: (str(r.get("time", "")), r["type"] == TurnRecord.kind),
    )
    questions = 0
    for message in data["messages"]:
        if message.get("role") == "user":
            questions += 1
            while questions > 1 and later:  # the previous turn's errors and end
                record = later.pop(0)
                records.append(record)
                if record["type"] == TurnRecord.kind:
                    break
        tool = None
        if message.get("role") == "tool":
            content = str(message.get("content") or "")
            # Format 1 kept no status: the text is all there is to tell one from (new records
            # carry the real status, and nothing else reads it back from the text).
            status = "error" if content.startswith("[error") else "ok"
            if content.endswith("rejected by the user]"):
                status = "rejected"
            tool = ToolRecord(status=status)
        records.append(MessageRecord(message=message, tool=tool).to_json())
    records.extend(later)
    return records
