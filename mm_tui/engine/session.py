"""Sessions: one journal per session, `<id>.jsonl`, and a small `<id>.meta.json` beside it (the
format: `session_files.py`). `Session` is one conversation: `messages`, the history exactly as
mm sends it, and `records`, the journal in memory, everything that happened, in order; each
change is a record, handed to the journal's writer thread (`journal.py`) at `save`.

Finding sessions and listing them is `session_listing.py`; format 1 (one JSON document),
converted to a journal the first time it is opened, is `session_v1.py`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mm_tui.core.conversation import INTERRUPTED
from mm_tui.core.redact import Redactor, clean_url
from mm_tui.engine.journal import Journal
from mm_tui.engine.journal_files import replace_file
from mm_tui.engine.journal_lock import JournalBusy, open_for_append, release_descriptor
from mm_tui.engine.session_files import (
    CONVERTED_SUFFIX,
    JOURNAL_SUFFIX,
    META_SUFFIX,
    OLD_SUFFIX,
    SESSION_ID,
    SESSION_VERSION,
    SessionBusy,
    SessionError,
    SessionInfo,
    answer_interrupted_tool_calls,
    changes_meta,
    checked_header,
    exists,
    iso,
    messages_of,
    new_id,
    now,
    read_journal,
    replay_history,
    settled,
    title_of,
)
from mm_tui.engine.session_v1 import old_records, read_old


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
            new_id(now),
            cwd=str(cwd),
            model=model,
            provider=provider,
            base_url=base_url,
            created=iso(now),
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
        self.records.append({"type": "history", "time": now(), "messages": self.messages})
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
            "time": now(),
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
            {"type": "shortened", "time": now(), "index": index, "message": message, "cut": cut}
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
            "time": now(),
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
        error = {"time": now(), "where": where, "message": message}
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
            self.updated = max(times) if times else now()
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
        if created or any(changes_meta(r) for r in new):
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
        title = title_of(self.records, self.redactor.text)
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
                len(messages_of(r)) for r in self.records if r["type"] != "compaction"
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
        if not SESSION_ID.fullmatch(session_id):
            raise SessionError(f"mm: {session_id!r} is not a session id")
        path = folder / f"{session_id}{JOURNAL_SUFFIX}"
        old = folder / f"{session_id}{OLD_SUFFIX}"
        if not exists(path) and exists(old):
            return cls._converted(folder, session_id, old)
        claimed, busy = _claimed(path, session_id, fork) if claim else (None, False)
        try:
            records, whole, torn = read_journal(path)
            if busy:  # the turn the other mm is in is its own: the copy starts before it
                records, torn = settled(records), 0
            session = cls.replayed(folder, session_id, records)
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
        session._answer_interrupted()
        if busy:
            session._fork()
        return session

    def _answer_interrupted(self) -> None:
        """Calls a kill left without a result get `INTERRUPTED`, so a server takes the history
        (new records of the next save, or a history record when they go in the middle)."""
        repaired = answer_interrupted_tool_calls(self.messages)
        if repaired == self.messages:
            return
        self.repaired = True
        if repaired[: len(self.messages)] == self.messages:
            self.messages = repaired  # the answers are new records of the next save
        else:
            self.messages = repaired
            self._seen = len(repaired)
            self.records.append({"type": "history", "time": now(), "messages": repaired})

    def _fork(self) -> None:
        """Go on as a copy of this session under a new id, written whole at the next save:
        another mm writes the original. Said in `warnings`."""
        self._release_claim()
        original = self.id
        self.forked_from = original
        self.id = new_id(datetime.now(UTC))
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

    def move_to(self, folder: Path) -> None:
        """Go on in `folder`: the next save writes the whole session there, as a new journal;
        the file it was read from is left as it was (an old session folder is only read)."""
        self._release_claim()
        self.folder = Path(folder)
        self._journal, self._written, self._reopen_at = None, 0, None

    @classmethod
    def replayed(cls, folder: Path, session_id: str, records: list[dict[str, Any]]) -> Session:
        """A session from its records; raises SessionError for records that do not make one."""
        path = folder / f"{session_id}{JOURNAL_SUFFIX}"
        header = checked_header(path, records)
        session = cls(
            folder,
            session_id,
            cwd=header["cwd"],
            model=header["model"],
            provider=header["provider"],
            base_url=header["base_url"],
            created=header["created"],
        )
        history = replay_history(path, records)
        session.records = records
        session.messages = history.messages
        session.tool_results = history.tool_results
        session.turns, session.errors = history.turns, history.errors
        session.updated = max(session.updated, history.updated)
        session._seen = len(history.messages)
        return session

    @classmethod
    def _converted(cls, folder: Path, session_id: str, old: Path) -> Session:
        """Open a format-1 file: read it, write its journal, keep the old file as `<id>.v1.json`."""
        data = read_old(old)
        fields = ("created", "cwd", "model", "provider", "base_url")
        header = {"type": "session", "version": SESSION_VERSION, "id": session_id}
        header.update({key: data[key] for key in fields})
        session = cls.replayed(folder, session_id, [header, *old_records(data)])
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


def _claimed(
    path: Path, session_id: str, fork: bool
) -> tuple[tuple[int, tuple[int, int]] | None, bool]:
    """The journal opened and locked for this process, and whether another mm holds it (then
    SessionBusy without `fork`). A file mm cannot write is not claimed: reading says why, or
    the first save does."""
    try:
        return open_for_append(path), False
    except JournalBusy:
        if not fork:
            raise SessionBusy(
                f"mm: session {session_id} is open in another mm process, which writes "
                "it; close it there, or open it in a terminal (`mm --resume "
                f"{session_id}`), which goes on in a copy"
            ) from None
        return None, True
    except OSError:
        return None, False


__all__ = [
    "INTERRUPTED",
    "SESSION_VERSION",
    "Session",
    "SessionBusy",
    "SessionError",
    "SessionInfo",
    "answer_interrupted_tool_calls",
    "replace_file",
]
