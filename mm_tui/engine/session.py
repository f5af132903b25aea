"""Sessions: one journal per session, `<id>.jsonl`, and a small `<id>.meta.json` beside it (the
format: `session_files.py`). `Session` is one conversation: `messages`, the history exactly as
mm sends it, and `records`, the journal in memory, everything that happened, in order; each
change is a record, handed to the journal's writer thread (`journal.py`) at `save`. Finding
and listing sessions: `session_listing.py`; format 1, converted when opened: `session_v1.py`."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mm_tui.core.conversation import INTERRUPTED
from mm_tui.core.journal_records import (
    CompactionRecord,
    ErrorRecord,
    Header,
    HistoryRecord,
    MessageRecord,
    ModelRecord,
    ShortenedRecord,
    ToolRecord,
    TurnRecord,
    messages_of,
)
from mm_tui.core.redact import Redactor, clean_url
from mm_tui.engine import session_opening
from mm_tui.engine.journal import Journal
from mm_tui.engine.journal_files import replace_file
from mm_tui.engine.journal_lock import JournalBusy, release_descriptor
from mm_tui.engine.session_files import (
    JOURNAL_SUFFIX,
    META_SUFFIX,
    SESSION_VERSION,
    SessionBusy,
    SessionError,
    SessionInfo,
    answer_interrupted_tool_calls,
    changes_meta,
    iso,
    new_id,
    now,
    title_of,
)


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
        self.turns: list[TurnRecord] = []
        self.errors: list[ErrorRecord] = []
        self.tool_results: dict[str, ToolRecord] = {}  # call id -> what the window showed
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
        return Header(
            version=SESSION_VERSION,
            id=self.id,
            created=self.created,
            cwd=self.cwd,
            model=self.model,
            provider=self.provider,
            base_url=clean_url(self.base_url),
            forked_from=self.forked_from,
        ).to_json()

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
            self.records.append(MessageRecord(message=self.messages[self._seen]).to_json())
            self._seen += 1

    def save_record(self, record: Any) -> None:
        """Append `record` (a type of core/journal_records.py) after the messages before it,
        and save: what a record of another part of the engine goes through (/undo's)."""
        self._catch_up()
        self.records.append(record.to_json())
        self.save()

    def add_message(
        self,
        message: dict[str, Any],
        *,
        tool: ToolRecord | None = None,
        thought: str | None = None,
    ) -> None:
        """Append a message to the history; `tool`: a result's status, time and title (a resumed
        window shows the call as it ended); `thought`: an answer's reasoning, kept beside the
        message and never sent back to the model, so that a reopened session shows it."""
        self._catch_up()
        self.messages.append(message)
        self._seen += 1
        record = MessageRecord(message=message, thought=thought or None, tool=tool)
        if tool is not None:
            self.tool_results[str(message.get("tool_call_id"))] = tool
        self.records.append(record.to_json())

    def set_messages(self, messages: list[dict[str, Any]]) -> None:
        """Replace the history as a whole and save."""
        self._catch_up()
        self.messages = list(messages)
        self._seen = len(self.messages)
        self.save_record(HistoryRecord(time=now(), messages=tuple(self.messages)))

    def compact(
        self,
        summary: str,
        messages: list[dict[str, Any]],
        *,
        auto: bool = False,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
    ) -> CompactionRecord:
        """The history becomes `messages` (a summary of it); the messages it replaces stay in
        the journal. Returns the record."""
        self._catch_up()
        record = CompactionRecord(
            time=now(),
            summary=summary,
            replaced=len(self.messages),
            auto=auto,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            messages=tuple(messages),
        )
        self.messages = list(messages)
        self._seen = len(self.messages)
        self.save_record(record)
        return record

    def shorten(self, index: int, message: dict[str, Any], cut: int) -> None:
        """The history's message at `index` is sent shortened from now on (`cut` characters
        fewer); the journal keeps the whole one."""
        self._catch_up()
        self.messages[index] = message
        shortened = ShortenedRecord(time=now(), index=index, message=message, cut=cut)
        self.records.append(shortened.to_json())

    def add_turn(
        self,
        *,
        counters: Mapping[str, Any] | Any,
        usage: Mapping[str, Any] | None,
        elapsed: float,
        stop_reason: str,
        context_used: int | None = None,
        context_window: int | None = None,
        context_estimated: bool = False,
    ) -> None:
        """Record a finished turn and save. `counters` may be the events' Counters dataclass;
        the context's figures are what the recap showed (None while the window is unknown)."""
        counted: dict[str, Any]
        if dataclasses.is_dataclass(counters) and not isinstance(counters, type):
            counted = dataclasses.asdict(counters)
        else:
            counted = dict(counters)  # type: ignore[arg-type]  # a mapping, the only other kind
        turn = TurnRecord(
            time=now(),
            counters=counted,
            usage=dict(usage or {}),
            elapsed=elapsed,
            stop_reason=stop_reason,
            context_used=context_used,
            context_window=context_window,
            context_estimated=context_estimated or None,
        )
        self.turns.append(turn)
        self.save_record(turn)

    def add_error(self, where: str, message: str) -> None:
        """Record an error and save: errors are what a person reads after something went wrong."""
        error = ErrorRecord(time=now(), where=where, message=message)
        self.errors.append(error)
        self.save_record(error)

    def switch_model(self, model: str, previous: str | None) -> None:
        """`/model`: the requests go to `model` from now on, and a resume's too (`previous`:
        the client's model, which a resume on another server makes other than the header's)."""
        record = ModelRecord(time=now(), model=model, previous=previous)
        self.model = model
        self.save_record(record)

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
        with contextlib.suppress(OSError):
            self.save()
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
            "turns": [_without_type(turn) for turn in self.turns],
            "errors": [_without_type(error) for error in self.errors],
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
                len(messages_of(r)) for r in self.records if r["type"] != CompactionRecord.kind
            ),
        }

    # -- reading ---------------------------------------------------------------------------------

    @classmethod
    def load(
        cls, folder: Path, session_id: str, *, claim: bool = False, fork: bool = True
    ) -> Session:
        """Reopen a session (`session_opening.load` says how)."""
        return session_opening.load(cls, folder, session_id, claim=claim, fork=fork)

    @classmethod
    def replayed(cls, folder: Path, session_id: str, records: list[dict[str, Any]]) -> Session:
        """A session from its records; SessionError for records that do not make one."""
        return session_opening.replayed(cls, folder, session_id, records)

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


def _without_type(record: TurnRecord | ErrorRecord) -> dict[str, Any]:
    """A record without its type: a turn or an error as format 1 kept it."""
    return {k: v for k, v in record.to_json().items() if k != "type"}


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
