"""The conversation as a session's journal keeps it, read once into types: what was asked, what
the agent answered (its reasoning, its text, each tool call with the result it got), each turn's
end, the errors, the compactions and the shortened outputs.

The journal's records are JSON written by this and earlier versions of mm (engine/session.py
writes them); `read_conversation` is the one place that reads their meaning, so that the
window's resume (window/transcript/store.py) and ACP's `session/load` (acp/replay.py) cannot
disagree. It pairs each call with its result by the call's place, not its id alone (small
servers count ids from 0 at each answer), gives a call without any result (mm was killed
first) the `INTERRUPTED` result as cancelled, and flattens a message's content parts once
(`flat_text`). A record of a kind it does not know (a later mm's) is skipped. The records'
kinds and fields are `journal_records.py`'s, read leniently: a bad field reads as empty, so
that a damaged record still shows what it can.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mm_tui.core.events import Counters, ToolStatus, TurnEnded, Usage, model_change_text
from mm_tui.core.frozen import frozen
from mm_tui.core.journal_records import (
    CompactionRecord,
    ErrorRecord,
    MessageRecord,
    ModelRecord,
    Record,
    ShortenedRecord,
    ToolRecord,
    TurnRecord,
    UndoRecord,
    read_record,
)

INTERRUPTED = "[error: interrupted — mm stopped before this tool call finished]"
"""The result of a call that mm stopped before it finished (killed, or the machine went down):
the model gets it when the session is loaded, and a front end shows the call as cancelled."""

STATUSES: tuple[ToolStatus, ...] = ("ok", "error", "rejected", "cancelled")
COUNTERS = ("commands", "file_ops", "skills", "lsp_calls", "mcp_calls")


def flat_text(content: Any) -> str:
    """A message's content as text: a string, or the text of its content parts, joined."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


@frozen
class CallResult:
    """How a call ended: `output` is what the model got; `shown` what the person saw (the
    tool's display when it gave one: ask_agent's `<agent> answered (N characters)`)."""

    status: ToolStatus
    output: str
    shown: str
    diff: str | None = None
    elapsed: float | None = None  # seconds, when the journal kept them
    title: str | None = None  # the call's line as it was shown, when the journal kept it
    from_text: bool = False  # the model wrote the call in its answer's text


UNFINISHED = CallResult(status="cancelled", output=INTERRUPTED, shown=INTERRUPTED)


@frozen
class Call:
    call_id: str
    name: str
    arguments: str  # as the model wrote them (JSON, or not)
    result: CallResult


@frozen
class UserSaid:
    text: str


@frozen
class AgentSaid:
    text: str
    thought: str  # the reasoning before it, kept beside the message (never sent back)
    calls: tuple[Call, ...] = ()


@frozen
class TurnDone:
    counters: Counters
    usage: Usage
    elapsed: float
    stop_reason: str
    context_used: int = 0
    context_window: int | None = None
    context_estimated: bool = False

    def ended(self, turn: int) -> TurnEnded:
        """The turn's end as it was emitted live (its recap is made the same way)."""
        return TurnEnded(
            turn=turn,
            counters=self.counters,
            elapsed=self.elapsed,
            usage=self.usage,
            stop_reason=self.stop_reason,  # type: ignore[arg-type] - as the engine wrote it
            context_used=self.context_used,
            context_window=self.context_window,
            context_estimated=self.context_estimated,
        )


@frozen
class ErrorSaid:
    message: str
    level: str  # "error" or "warning"


@frozen
class Compacted:
    summary: str
    replaced: int
    auto: bool
    tokens_before: int
    tokens_after: int


@frozen
class Shortened:
    """An old tool output cut to fit the window (the journal keeps it whole)."""

    cut: int  # characters


@frozen
class ModelSwitched:
    """`/model`: the requests after it went to `model`."""

    model: str
    previous: str | None

    @property
    def text(self) -> str:
        return model_change_text(self.model, self.previous)


@frozen
class Undone:
    """`/undo`: the project's files were put back; `text` says what it did."""

    text: str


Entry = UserSaid | AgentSaid | TurnDone | ErrorSaid | Compacted | Shortened | ModelSwitched | Undone


def read_conversation(records: Iterable[Mapping[str, Any]]) -> list[Entry]:
    """The journal's records as the conversation's entries, in order (see the module's
    docstring). The header and a history replaced as a whole ("history") say nothing here."""
    listed = [read_record(record) for record in records]
    results = _results(listed)
    entries: list[Entry] = []
    for number, record in enumerate(listed):
        entry = _entry(number, record, results)
        if entry is not None:
            entries.append(entry)
    return entries


def _entry(
    number: int, record: Record, results: Mapping[tuple[int, int], CallResult]
) -> Entry | None:
    match record:
        case MessageRecord():
            return _message(number, record, results)
        case TurnRecord():
            return _turn(record)
        case ErrorRecord(message=message, level=level):
            return ErrorSaid(message=message, level="warning" if level == "warning" else "error")
        case CompactionRecord():
            return Compacted(
                summary=record.summary,
                replaced=record.replaced,
                auto=record.auto,
                tokens_before=record.tokens_before or 0,
                tokens_after=record.tokens_after or 0,
            )
        case ShortenedRecord(cut=cut):
            return Shortened(cut=cut)
        case ModelRecord(model=model, previous=previous):
            return ModelSwitched(model=model, previous=previous)
        case UndoRecord(text=text):
            return Undone(text=text)
    return None


def _message(
    number: int, record: MessageRecord, results: Mapping[tuple[int, int], CallResult]
) -> Entry | None:
    message = record.message
    role = message.get("role")
    if role == "user":
        return UserSaid(text=flat_text(message.get("content")))
    if role != "assistant":
        return None  # a tool result belongs to its call; the system prompt shows nothing
    calls = []
    for index, call in _calls(message):
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        calls.append(
            Call(
                call_id=str(call.get("id")),
                name=str(function.get("name") or ""),
                arguments=str(function.get("arguments") or ""),
                result=results.get((number, index), UNFINISHED),
            )
        )
    return AgentSaid(
        text=flat_text(message.get("content")), thought=record.thought or "", calls=tuple(calls)
    )


def _calls(message: Mapping[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [(index, call) for index, call in enumerate(calls) if isinstance(call, dict)]


def _results(records: list[Record]) -> dict[tuple[int, int], CallResult]:
    """Each call's result, by (the record of the call, the call's place in it). The results
    of an answer's calls follow it: a result answers the first call of the latest answer that
    has its id and no result yet (an answer may repeat an id; a call mm was killed in the
    middle of never gets one, and the next answer's calls are what results answer then)."""
    waiting: dict[str, list[tuple[int, int]]] = {}
    found: dict[tuple[int, int], CallResult] = {}
    for number, record in enumerate(records):
        if not isinstance(record, MessageRecord):
            continue
        message = record.message
        if message.get("role") == "assistant":
            waiting = {}
            for index, call in _calls(message):
                waiting.setdefault(str(call.get("id")), []).append((number, index))
        elif message.get("role") == "tool":
            calls = waiting.get(str(message.get("tool_call_id")))
            if calls:
                found[calls.pop(0)] = _result(message, record.tool or ToolRecord())
    return found


def _result(message: Mapping[str, Any], kept: ToolRecord) -> CallResult:
    """A result as its record kept it: the status, time, title, display and diff mm wrote
    beside it (never guessed from the text)."""
    output = flat_text(message.get("content"))
    status = kept.status
    if status not in STATUSES:
        # No status: the answer mm gave, on loading, to a call a kill left without one.
        status = "cancelled" if output == INTERRUPTED else "ok"
    return CallResult(
        status=status,
        output=output,
        shown=output if kept.display is None else kept.display,
        diff=kept.diff,
        elapsed=None if kept.elapsed is None else float(kept.elapsed),
        title=kept.title or None,
        from_text=kept.from_text is True,
    )


def _turn(record: TurnRecord) -> TurnDone:
    counted, used = record.counters, record.usage
    return TurnDone(
        counters=Counters(**{k: _int(counted.get(k)) for k in COUNTERS}),
        usage=Usage(_int(used.get("prompt_tokens")), _int(used.get("completion_tokens"))),
        elapsed=float(record.elapsed),
        stop_reason=record.stop_reason or "end_turn",
        context_used=record.context_used or 0,
        context_window=record.context_window or None,
        context_estimated=record.context_estimated is True,
    )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
