"""The records of a session's journal (engine/session_files.py tells its story), one frozen type
per kind, each field declared once with how it is checked: the session writes its records
through them (`to_json`), the engine's replay reads them strictly (`parse_record`: a record that
does not fit is refused, saying why) and the conversation reader leniently (`read_record`: a
bad field reads as empty), so that the three cannot disagree on what a record holds.

`to_json` gives a record as mm has always written it, key for key and in the same order, a
field that is None left out: a journal is the same file whichever mm wrote it. What this mm
does not know is kept: a later mm's keys in `extra`, a later mm's kind of record whole
(`LaterRecord`), to be written back as they were.

The OpenAI messages in the records stay dicts in the wire format: mm sends them back as they
came, and servers add fields of their own that must go back with them (`reasoning_content`),
which no type here could name.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, field
from typing import Any, ClassVar, TypeGuard, TypeVar, cast

from mm_tui.core.frozen import frozen

Message = dict[str, Any]
"""One message of the history, as the server takes it (see the module's docstring)."""

NOT_THERE = "shortens a message that is not there"
_SPEC = "journal"  # the key of a field's spec in its metadata


class RecordError(ValueError):
    """What is wrong with a record, in words that follow its place ("record 5 holds ...");
    a header's follow "not a valid session file:"."""


def is_message(value: Any) -> TypeGuard[Message]:
    return isinstance(value, dict) and isinstance(value.get("role"), str)


def _is_history(value: Any) -> bool:
    return isinstance(value, list) and all(map(is_message, value))


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@frozen
class _FieldSpec:
    """How a field is checked, read and written."""

    accepts: Callable[[Any], bool]
    empty: Callable[[], Any]  # what a bad required field reads as, read leniently
    wrong: str = ""  # what is said of a bad value; "" for the record's usual words
    nullable: bool = False  # null is a value, written as such; a missing one reads as null
    read: Callable[[Any, bool], Any] = lambda value, lenient: value  # the JSON -> the field
    write: Callable[[Any], Any] = lambda value: value  # the field -> the JSON


def _spec(accepts: Callable[[Any], bool], empty: Callable[[], Any], **how: Any) -> dict[str, Any]:
    """A field's `metadata`: how the JSON form reads and writes it."""
    return {_SPEC: _FieldSpec(accepts, empty, **how)}


TEXT = _spec(lambda v: isinstance(v, str), str)
TEXT_OR_NULL = _spec(lambda v: isinstance(v, str), lambda: None, nullable=True)
COUNT = _spec(_is_count, int)
NUMBER = _spec(_is_number, float)
FLAG = _spec(lambda v: isinstance(v, bool), bool)
OBJECT = _spec(lambda v: isinstance(v, dict), dict)
MESSAGE = _spec(is_message, dict, wrong="holds something that is not a message")
HISTORY = _spec(
    _is_history,
    tuple,
    wrong="holds something that is not a history",
    read=lambda value, lenient: tuple(value),
    write=list,
)
INDEX = _spec(_is_count, int, wrong=NOT_THERE)
TOOL = _spec(
    lambda v: isinstance(v, dict),
    lambda: None,
    read=lambda value, lenient: _parse(ToolRecord, value, lenient=lenient),
    write=lambda tool: tool.to_json(),
)


@frozen
class _Json:
    """The JSON form of the types below, made from their fields' declarations."""

    kind: ClassVar[str] = ""  # the record's "type"; "" for a part of a record
    wrong_field: ClassVar[str] = '("{kind}"): "{name}" is missing or has the wrong type'
    _: KW_ONLY
    extra: dict[str, Any] = field(default_factory=dict)  # keys this mm does not know

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.kind} if self.kind else {}
        for name, spec, _required in _fields(type(self)):
            value = getattr(self, name)
            if value is not None:
                data[name] = spec.write(value)
            elif spec.nullable:
                data[name] = None
        data.update(self.extra)
        return data


@frozen
class ToolRecord(_Json):
    """What a tool's result was beside the message: what the window showed of the call."""

    _: KW_ONLY
    status: str | None = field(default=None, metadata=TEXT)  # "ok", "error", "rejected"...
    elapsed: float | None = field(default=None, metadata=NUMBER)
    title: str | None = field(default=None, metadata=TEXT)
    display: str | None = field(default=None, metadata=TEXT)  # shown instead of the output
    diff: str | None = field(default=None, metadata=TEXT)
    from_text: bool | None = field(default=None, metadata=FLAG)  # the model wrote it as text


@frozen
class Header(_Json):
    """The journal's first line: the session it is, and where and with what it ran."""

    kind: ClassVar[str] = "session"
    wrong_field: ClassVar[str] = '"{name}" is missing or has the wrong type'
    _: KW_ONLY
    version: int = field(metadata=COUNT)
    id: str = field(metadata=TEXT)
    created: str = field(metadata=TEXT)
    cwd: str = field(metadata=TEXT)
    model: str | None = field(metadata=TEXT_OR_NULL)
    provider: str | None = field(metadata=TEXT_OR_NULL)
    base_url: str | None = field(metadata=TEXT_OR_NULL)
    forked_from: str | None = field(default=None, metadata=TEXT)  # the session this copies


@frozen
class MessageRecord(_Json):
    """A message of the history as sent, with what mm keeps beside it and never sends."""

    kind: ClassVar[str] = "message"
    _: KW_ONLY
    message: Message = field(metadata=MESSAGE)
    thought: str | None = field(default=None, metadata=TEXT)  # the reasoning before an answer
    tool: ToolRecord | None = field(default=None, metadata=TOOL)  # beside a tool's result


@frozen
class TurnRecord(_Json):
    """A turn's end, with what its recap showed."""

    kind: ClassVar[str] = "turn"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    counters: dict[str, Any] = field(metadata=OBJECT)
    usage: dict[str, Any] = field(metadata=OBJECT)
    elapsed: float = field(metadata=NUMBER)
    stop_reason: str = field(metadata=TEXT)
    # what the recap said of the context, while the window was known
    context_used: int | None = field(default=None, metadata=COUNT)
    context_window: int | None = field(default=None, metadata=COUNT)
    context_estimated: bool | None = field(default=None, metadata=FLAG)


@frozen
class ErrorRecord(_Json):
    """An error as the person was told it."""

    kind: ClassVar[str] = "error"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    where: str = field(metadata=TEXT)
    level: str | None = field(default=None, metadata=TEXT)  # "warning"; none is an error
    message: str = field(metadata=TEXT)


@frozen
class CompactionRecord(_Json):
    """The history replaced by `messages`, a summary of it; the records before stay."""

    kind: ClassVar[str] = "compaction"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    summary: str = field(metadata=TEXT)
    replaced: int = field(metadata=COUNT)  # the messages it replaced
    auto: bool = field(metadata=FLAG)
    tokens_before: int | None = field(default=None, metadata=COUNT)
    tokens_after: int | None = field(default=None, metadata=COUNT)
    messages: tuple[Message, ...] = field(metadata=HISTORY)


@frozen
class ShortenedRecord(_Json):
    """The history's message at `index` sent as `message` from now on, `cut` characters
    fewer; its own record keeps it whole."""

    kind: ClassVar[str] = "shortened"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    index: int = field(metadata=INDEX)
    message: Message = field(metadata=MESSAGE)
    cut: int = field(metadata=COUNT)


@frozen
class HistoryRecord(_Json):
    """The history replaced as a whole."""

    kind: ClassVar[str] = "history"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    messages: tuple[Message, ...] = field(metadata=HISTORY)


@frozen
class ModelRecord(_Json):
    """The session's model changed (`/model`): the requests after it go to `model`, and a
    resumed session goes on with the last one."""

    kind: ClassVar[str] = "model"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    model: str = field(metadata=TEXT)
    previous: str | None = field(metadata=TEXT_OR_NULL)


@frozen
class SnapshotRecord(_Json):
    """The project's files were recorded before turn `turn` (engine/undo/): `snapshot` names
    the manifest in mm's state folder, "" when it could not be taken."""

    kind: ClassVar[str] = "snapshot"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    turn: int = field(metadata=COUNT)
    snapshot: str = field(metadata=TEXT)


@frozen
class UndoRecord(_Json):
    """`/undo`: the project's files were put back as `snapshot` recorded them (as before turn
    `turn`, `turns` turns undone), or, `redo`, as they were before the /undo just before;
    `before` names the snapshot of the files as they were, which a second /undo goes back to.
    `note` is what the model is told, with the next request."""

    kind: ClassVar[str] = "undo"
    _: KW_ONLY
    time: str | None = field(default=None, metadata=TEXT)
    snapshot: str = field(metadata=TEXT)
    before: str = field(metadata=TEXT)
    turn: int = field(metadata=COUNT)
    turns: int = field(metadata=COUNT)
    redo: bool = field(metadata=FLAG)
    text: str = field(metadata=TEXT)  # what the person was told
    note: str = field(metadata=TEXT)


@frozen
class LaterRecord:
    """A record of a kind this mm does not know (a later mm's): passed over, written back as
    it was."""

    raw: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.raw


Record = (
    Header
    | MessageRecord
    | TurnRecord
    | ErrorRecord
    | CompactionRecord
    | ShortenedRecord
    | HistoryRecord
    | ModelRecord
    | SnapshotRecord
    | UndoRecord
    | LaterRecord
)
KINDS: dict[str, type[_Json]] = {
    kind.kind: kind
    for kind in (
        Header,
        MessageRecord,
        TurnRecord,
        ErrorRecord,
        CompactionRecord,
        ShortenedRecord,
        HistoryRecord,
        ModelRecord,
        SnapshotRecord,
        UndoRecord,
    )
}


def parse_record(raw: Mapping[str, Any]) -> Record:
    """A record as the journal holds it, as its type; RecordError for one that does not fit."""
    return _record(raw, lenient=False)


def read_record(raw: Mapping[str, Any]) -> Record:
    """`parse_record` that never refuses: a bad or missing field reads as empty (None, "", 0,
    nothing), for a reader that shows what it can of a damaged journal."""
    return _record(raw, lenient=True)


def messages_of(record: Mapping[str, Any]) -> list[Message]:
    """The messages a record, as the journal holds it, adds to the history."""
    kind = record.get("type")
    if kind == MessageRecord.kind:
        return [record["message"]]
    if kind in (HistoryRecord.kind, CompactionRecord.kind):
        return record["messages"]
    return []


def _record(raw: Mapping[str, Any], *, lenient: bool) -> Record:
    kind = raw.get("type")
    made = KINDS.get(kind) if isinstance(kind, str) else None
    if made is None:
        return LaterRecord(dict(raw))
    return cast(Record, _parse(made, raw, lenient=lenient))


J = TypeVar("J", bound=_Json)


def _parse(made: type[J], raw: Mapping[str, Any], *, lenient: bool) -> J:
    values: dict[str, Any] = {}
    for name, spec, required in _fields(made):
        value = raw.get(name)
        if value is None and (spec.nullable or not required):
            if spec.nullable:
                values[name] = None
            continue  # an optional field: missing, or null
        try:
            if not spec.accepts(value):
                raise RecordError
            values[name] = spec.read(value, lenient)
        except RecordError:  # a bad value, or a bad part of one (a tool's)
            if not lenient:
                phrase = spec.wrong or made.wrong_field.format(kind=made.kind, name=name)
                raise RecordError(phrase) from None
            values[name] = spec.empty() if required else None
    known = _known(made)
    extra = {key: value for key, value in raw.items() if key not in known}
    return made(**values, extra=extra)


@functools.cache
def _fields(made: type) -> tuple[tuple[str, _FieldSpec, bool], ...]:
    """(name, spec, required) of each field of the JSON form, in order."""
    return tuple(
        (f.name, f.metadata[_SPEC], f.default is dataclasses.MISSING)
        for f in dataclasses.fields(made)
        if _SPEC in f.metadata
    )


@functools.cache
def _known(made: type) -> frozenset[str]:
    return frozenset(("type", *(name for name, _spec, _required in _fields(made))))
