"""From the JSON objects of a chat-completions answer to the chunks the turn loop reads.

An answer arrives as deltas: text and reasoning (under either of its two names, since servers
disagree), and tool calls in pieces that carry an index, an id, a name and some of the
arguments' text. Servers differ here too: pieces without an index, calls without ids, the whole
call in one piece, a name repeated in every piece, arguments sent as an object instead of its
JSON text, every call on index 0 (each with its own id). The assembler folds the pieces into
call slots, shows each change as it comes, keeps the finish reason and the usage figures, and
ends the answer with the `StreamEnd` that carries the whole calls in index order. A call
without a name is dropped, never guessed at.

Ids are the model's, and models repeat them: `call_ids.distinct_ids` gives each call of the
conversation its own, once the answer is whole.

A retried answer starts from the beginning, so the assembler also compares it with what earlier
tries showed (`Replay`): nothing is ever shown twice.

No I/O here: the HTTP client feeds it what the SSE decoder gives, and the tests feed it objects
(tests/engine/test_chunk_assembly.py). The text-only delta is the hot path and is kept short.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from mm_tui.core.events import Usage
from mm_tui.engine.model_stream import (
    ModelChunk,
    ModelError,
    ReasoningChunk,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)
from mm_tui.engine.server_errors import reported_error

__all__ = [
    "CallSlots",
    "ChunkAssembler",
    "Replay",
    "completion_chunks",
    "merge_tool_piece",
    "stream_end",
]


class Replay:
    """What a retried answer repeats of what the person has already seen.

    A stream cut while a tool call's arguments arrive is asked for again (half arguments are
    never run). The new answer starts from the beginning, so its text and reasoning are
    compared with what was shown: the part already shown is dropped, and only what is new goes
    on. If the new answer says something else (a model that samples), the rest of it is shown
    from where it departs, so nothing is ever shown twice."""

    def __init__(self, text: str, thought: str) -> None:
        self._shown = {TextChunk: text, ReasoningChunk: thought}
        self._at = {TextChunk: 0, ReasoningChunk: 0}

    def unseen(self, kind: type, piece: str) -> str:
        """The part of `piece` (of `kind`, text or reasoning) not shown yet."""
        shown, at = self._shown[kind], self._at[kind]
        if at >= len(shown):
            return piece
        overlap = shown[at : at + len(piece)]
        if piece.startswith(overlap):
            self._at[kind] = at + len(piece)
            return piece[len(overlap) :]
        same = 0
        while piece[same] == overlap[same]:
            same += 1
        self._at[kind] = len(shown)  # departed: from here on everything is new
        return piece[same:]


class _Call:
    """A tool call being assembled: its slot's id, name and arguments so far."""

    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = self.name = self.arguments = ""

    def merge_name(self, name: Any) -> bool:
        """Fold a piece's name in; True when the name changed."""
        if not name or name.__class__ is not str:
            return False
        current = self.name
        if not current or name.startswith(current):
            # First piece, or a server that repeats the whole (growing) name in every piece.
            self.name = name
            return name != current
        if not current.endswith(name):
            self.name = current + name
            return True
        return False


class CallSlots(dict[int, _Call]):
    """The calls of one answer being assembled, by slot (the order they end in), and `at`, the
    slot each stream index now fills. A slot is the call's index, unless the server sends a new
    call (a new id and a name) on an index already used: that call gets the next free slot, and
    the index's later pieces go to it."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        super().__init__()
        self.at: dict[int, int] = {}


def _slot(calls: CallSlots, index: int, call_id: Any, name: Any) -> int:
    """The slot of a piece on stream `index`. A piece that starts another call (a name, and an
    id other than the one of the call on its index) opens a new slot; a new id without a name is
    only a server that repeats ids oddly, and continues the call."""
    slot = calls.at.get(index)
    if slot is None:
        slot = index if index not in calls else max(calls) + 1
        calls.at[index] = slot
        return slot
    known = calls[slot].id if slot in calls else ""
    if call_id and known and call_id != known and name and name.__class__ is str:
        slot = calls.at[index] = max(calls) + 1
    return slot


def _implied_index(calls: dict[int, _Call], call_id: Any) -> int:
    """The slot of a piece without an index: a new id opens a new call, a known id goes to its
    call, and no id continues the last call."""
    if not call_id:
        return max(calls) if calls else 0
    for index, call in calls.items():
        if call.id == call_id:
            return index
    return max(calls) + 1 if calls else 0


def merge_tool_piece(calls: CallSlots, piece: Any) -> ToolCallChunk | None:
    """Fold one `delta.tool_calls[i]` piece into the calls being assembled; return the update to
    show, or None when the piece carried neither name nor arguments."""
    if piece.__class__ is not dict:
        return None
    index = piece.get("index")
    call_id = piece.get("id")
    fn = piece.get("function")
    name = fn.get("name") if fn.__class__ is dict else None
    if index.__class__ is int:
        index = _slot(calls, index, call_id, name)
    else:
        index = _implied_index(calls, call_id)
    call = calls.get(index)
    if call is None:
        call = calls[index] = _Call()
    if call_id and not call.id:
        call.id = str(call_id)
    if fn.__class__ is not dict:
        return None
    changed = call.merge_name(name)
    args = fn.get("arguments")
    if args:
        if args.__class__ is not str:
            args = json.dumps(args)  # a server that sends an object instead of its JSON text
        call.arguments += args
        changed = True
    if not changed:
        return None
    return ToolCallChunk(index, call.name, call.arguments)


def stream_end(
    finish: str | None, calls: dict[int, _Call], usage: Any, next_call_id: Callable[[], str]
) -> StreamEnd:
    """The end of an answer: its calls in index order, an id made up (`next_call_id`, unique
    over the session) for a call the server sent without one."""
    tool_calls = []
    for index in sorted(calls):
        call = calls[index]
        if not call.name:
            continue  # arguments without a name cannot be run; never guess one
        tool_calls.append(ToolCall(call.id or next_call_id(), call.name, call.arguments))
    return StreamEnd(finish, tuple(tool_calls), _usage(usage))


class ChunkAssembler:
    """One streamed answer, over every try of it.

    `add` takes the objects of one network read and gives the chunks to show. A try's state is
    public for the HTTP client, which decides from it whether a cut stream may be retried:
    `calls` (a call was being composed), `yielded` (the person saw part of this try), `finish`,
    and `failure`, the error the server reported inside the stream (the chunks before it are
    shown first, then the client raises it)."""

    __slots__ = ("_replay", "calls", "failure", "finish", "shown", "thought", "usage", "yielded")

    def __init__(self) -> None:
        self.shown: list[str] = []  # text shown, over every try
        self.thought: list[str] = []  # reasoning shown, over every try
        self._replay: Replay | None = None
        self.begin()

    def begin(self) -> None:
        """A new try. It answers from the beginning, so it is compared with what the earlier
        tries showed."""
        self.calls = CallSlots()  # slot -> the call being assembled
        self.finish: str | None = None
        self.usage: Any = None
        self.yielded = False
        self.failure: ModelError | None = None
        if self.shown or self.thought:
            self._replay = Replay("".join(self.shown), "".join(self.thought))

    @property
    def shown_any(self) -> bool:
        """Some of the answer was shown, in this try or an earlier one."""
        return bool(self.shown or self.thought)

    def add(self, objs: Iterable[dict[str, Any]]) -> list[ModelChunk]:
        """The chunks to show for these objects, in order; an error event stops them. Text
        that follows text (or thought that follows thought) among them is one chunk (`_Chunks`)."""
        out = _Chunks()
        show = self.shown.append
        replay = self._replay
        for obj in objs:
            try:
                choices = obj.get("choices")
                if choices:
                    choice = choices[0]
                    delta = choice.get("delta")
                    text = delta and delta.get("content")
                    if text and len(delta) == 1 and text.__class__ is str:
                        # The common case: a delta of text and nothing else.
                        if replay is not None:
                            # not `continue`: the chunk's finish_reason and usage still count
                            text = replay.unseen(TextChunk, text)
                        if text:
                            show(text)
                            if out.kind is TextChunk:  # `put`, without a call per event
                                out.parts.append(text)
                            else:
                                out.put(TextChunk, text)
                    elif delta:
                        self._delta(delta, out)
                    reason = choice.get("finish_reason")
                    if reason:
                        self.finish = reason
                elif "error" in obj:
                    yielded = self.yielded or bool(out)
                    self.failure = reported_error(json.dumps(obj).encode(), after_tokens=yielded)
                    break
                found = obj.get("usage")
                if found:
                    self.usage = found
            except (AttributeError, TypeError, KeyError, IndexError):
                continue  # a chunk of an unexpected shape: skipped
        if out:
            self.yielded = True
        return out.taken()

    def _delta(self, delta: dict[str, Any], out: _Chunks) -> None:
        """A delta that is more than text: reasoning, text beside it, tool-call pieces."""
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        for kind, text, sink in (
            (ReasoningChunk, reasoning, self.thought),
            (TextChunk, delta.get("content"), self.shown),
        ):
            if not text:
                continue
            text = _as_text(text)
            if self._replay is not None:
                text = self._replay.unseen(kind, text)
            if text:
                sink.append(text)
                out.put(kind, text)
        pieces = delta.get("tool_calls")
        if pieces:
            for piece in pieces:
                update = merge_tool_piece(self.calls, piece)
                if update is not None:
                    out.append(update)

    def end(self, next_call_id: Callable[[], str]) -> StreamEnd:
        """The `StreamEnd` of this try."""
        return stream_end(self.finish, self.calls, self.usage, next_call_id)


class _Chunks:
    """The chunks of one `add`, in order. Text that follows text (or thought that follows
    thought) becomes one chunk: each crosses to the screen as an event of its own, and the
    engine reads a trickling server in batches (`paced_reads.py`). A run's pieces are joined
    once it ends, so that each chunk is made whole and never changed."""

    __slots__ = ("done", "kind", "parts")

    def __init__(self) -> None:
        self.done: list[ModelChunk] = []
        self.kind: type[TextChunk | ReasoningChunk] = TextChunk  # of the run in `parts`
        self.parts: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.done or self.parts)

    def put(self, kind: type[TextChunk | ReasoningChunk], text: str) -> None:
        """`text`, of `kind`: joined to the run before it when that is of the same kind."""
        if kind is not self.kind:
            if self.parts:
                self._end_run()
            self.kind = kind
        self.parts.append(text)

    def append(self, chunk: ModelChunk) -> None:
        if self.parts:
            self._end_run()
        self.done.append(chunk)

    def taken(self) -> list[ModelChunk]:
        """Every chunk, the last run's included."""
        if self.parts:
            self._end_run()
        return self.done

    def _end_run(self) -> None:
        parts = self.parts
        self.done.append(self.kind(parts[0] if len(parts) == 1 else "".join(parts)))
        self.parts = []


def completion_chunks(data: dict[str, Any], next_call_id: Callable[[], str]) -> list[ModelChunk]:
    """A whole JSON completion (a non-streamed answer) as the chunks a stream would have given."""
    out: list[ModelChunk] = []
    calls = CallSlots()
    finish = None
    choices = data.get("choices") or []
    if choices and isinstance(choices[0], dict):
        choice = choices[0]
        finish = choice.get("finish_reason")
        message = choice.get("message") or choice.get("delta") or {}
        if isinstance(message, dict):
            reasoning = message.get("reasoning_content") or message.get("reasoning")
            if reasoning:
                out.append(ReasoningChunk(_as_text(reasoning)))
            if message.get("content"):
                out.append(TextChunk(_as_text(message["content"])))
            for i, tc in enumerate(message.get("tool_calls") or []):
                if isinstance(tc, dict):
                    update = merge_tool_piece(calls, {"index": i, **tc})
                    if update is not None:
                        out.append(update)
    out.append(stream_end(finish, calls, data.get("usage"), next_call_id))
    return out


def _as_text(value: Any) -> str:
    """Text from a server that sends content parts ([{"type": "text", "text": "..."}]) or a
    value that is not a string."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in value)
    return str(value)


def _usage(data: Any) -> Usage:
    """The usage figures, or zeros when the server sent none or sent them malformed."""
    if not isinstance(data, dict):
        return Usage()
    try:
        return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))
    except (TypeError, ValueError):
        return Usage()
