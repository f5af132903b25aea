"""The journal's record types: their JSON form key by key, what the strict reading refuses and
in which words, what the lenient one makes of the same, and what a later mm adds kept. Every
kind over the shared table: tests/engine/test_conversation.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mm_tui.core.journal_records import (
    CompactionRecord,
    Header,
    HistoryRecord,
    MessageRecord,
    RecordError,
    ShortenedRecord,
    ToolRecord,
    TurnRecord,
    parse_record,
    read_record,
)

USER = {"role": "user", "content": "hi"}


def test_a_forked_header_names_its_session_last() -> None:
    header = Header(
        version=2, id="b", created="t", cwd="/p", model=None, provider="p", base_url=None,
        forked_from="a",
    )  # fmt: skip
    assert json.dumps(header.to_json()) == (
        '{"type": "session", "version": 2, "id": "b", "created": "t", "cwd": "/p", '
        '"model": null, "provider": "p", "base_url": null, "forked_from": "a"}'
    )
    assert parse_record(header.to_json()) == header


def test_a_none_is_left_out_and_an_empty_text_is_kept() -> None:
    tool = ToolRecord(status="ok", elapsed=0.0, title=None, display="", diff=None)
    assert MessageRecord(message=USER, tool=tool).to_json() == {
        "type": "message",
        "message": USER,
        "tool": {"status": "ok", "elapsed": 0.0, "display": ""},
    }


def test_the_messages_are_the_records_own_and_stay_as_sent() -> None:
    answer = {"role": "assistant", "content": "x", "reasoning_content": "a server's own field"}
    history = [USER, answer]
    record = HistoryRecord(messages=tuple(history))
    written = record.to_json()["messages"]
    history.append(USER)  # the session's list goes on; the record's does not
    assert written == [USER, answer] and written[1] is answer


def test_what_a_later_mm_adds_to_a_record_is_kept_after_the_rest() -> None:
    raw = {"type": "turn", "time": "t", "counters": {}, "usage": {}, "elapsed": 1, "new": [1]}
    raw["stop_reason"] = "end_turn"
    record = parse_record(raw)
    assert isinstance(record, TurnRecord) and record.extra == {"new": [1]}
    assert list(record.to_json()) == [
        "type", "time", "counters", "usage", "elapsed", "stop_reason", "new",
    ]  # fmt: skip
    tool = parse_record({**MessageRecord(message=USER).to_json(), "tool": {"exit": 0}})
    assert isinstance(tool, MessageRecord) and tool.tool == ToolRecord(extra={"exit": 0})


def test_a_null_optional_field_reads_as_missing() -> None:
    record = parse_record({"type": "message", "message": USER, "thought": None, "tool": None})
    assert record == MessageRecord(message=USER)


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"type": "message"}, "holds something that is not a message"),
    ({"type": "message", "message": {"content": "no role"}}, "holds something that is not a message"),
    ({"type": "message", "message": USER, "thought": 3}, '("message"): "thought" is missing or has the wrong type'),
    ({"type": "message", "message": USER, "tool": {"elapsed": "1s"}}, '("message"): "tool" is missing or has the wrong type'),
    ({"type": "history", "messages": USER}, "holds something that is not a history"),
    ({"type": "compaction", "summary": "s", "replaced": 1, "auto": 1, "messages": []}, '("compaction"): "auto" is missing or has the wrong type'),
    ({"type": "compaction", "summary": "s", "replaced": 1, "auto": True}, "holds something that is not a history"),
    ({"type": "shortened", "index": True, "message": USER, "cut": 1}, "shortens a message that is not there"),
    ({"type": "shortened", "index": 0, "message": USER}, '("shortened"): "cut" is missing or has the wrong type'),
    ({"type": "turn", "counters": {}, "usage": [], "elapsed": 1, "stop_reason": "x"}, '("turn"): "usage" is missing or has the wrong type'),
    ({"type": "error", "time": 5, "where": "w", "message": "m"}, '("error"): "time" is missing or has the wrong type'),
    ({"type": "session", "version": 2, "id": "i", "created": "c", "cwd": "/", "model": 1}, '"model" is missing or has the wrong type'),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "reason"), REFUSED)
def test_a_record_that_does_not_fit_is_refused_saying_why(raw: dict, reason: str) -> None:
    with pytest.raises(RecordError) as info:
        parse_record(raw)
    assert str(info.value) == reason
    read_record(raw)  # the lenient reading takes it all the same


def test_the_lenient_reading_makes_a_bad_field_empty() -> None:
    assert read_record({"type": "turn", "elapsed": "1s", "counters": 3}) == TurnRecord(
        counters={}, usage={}, elapsed=0.0, stop_reason=""
    )
    assert read_record({"type": "shortened", "index": "2", "cut": 9.5}) == ShortenedRecord(
        index=0, message={}, cut=0
    )
    compaction = read_record({"type": "compaction", "summary": 3, "auto": True, "messages": 1})
    assert compaction == CompactionRecord(summary="", replaced=0, auto=True, messages=())
    tool = {"status": 1, "elapsed": 2, "title": ["t"]}
    assert read_record({"type": "message", "message": USER, "tool": tool}) == MessageRecord(
        message=USER, tool=ToolRecord(elapsed=2)
    )
    assert read_record({"type": "message", "message": "hi", "tool": "ok"}) == MessageRecord(
        message={}
    )
