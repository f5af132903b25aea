"""The one reader of a journal's meaning (`core.conversation`) over the shared table of record
kinds, and the window's resume drawn from the same table."""

from __future__ import annotations

from support.journal_records import ENTRIES, RECORDS

from mm_tui.core.conversation import INTERRUPTED, flat_text, read_conversation
from mm_tui.window.transcript.store import (
    AnswerItem,
    CompactionItem,
    NoticeItem,
    RecapItem,
    ThoughtItem,
    ToolItem,
    Transcript,
    UserItem,
    transcript_from_records,
)


def test_every_kind_of_record_reads_as_its_entry() -> None:
    assert read_conversation(RECORDS) == ENTRIES


def test_content_parts_are_joined_as_written() -> None:
    assert flat_text([{"type": "text", "text": "a "}, {"text": "b"}, "odd", {"x": 1}]) == "a b"
    assert flat_text(None) == "" and flat_text(42) == "" and flat_text("as is") == "as is"


def test_the_window_draws_the_table_as_it_was_shown() -> None:
    items = transcript_from_records(Transcript(), RECORDS)
    kinds = [type(item).__name__ for item in items]
    assert kinds == [
        "UserItem",
        "ThoughtItem",
        "AnswerItem",
        "ToolItem",
        "ToolItem",
        "ToolItem",
        "ToolItem",
        "ToolItem",
        "ToolItem",
        "NoticeItem",
        "NoticeItem",
        "RecapItem",
        "CompactionItem",
        "NoticeItem",
        "UserItem",
        "AnswerItem",
        "RecapItem",
    ]
    tools = [item for item in items if type(item) is ToolItem]  # a compaction is one too
    assert [(t.call_id, t.status, t.output, t.elapsed) for t in tools] == [
        ("0", "ok", "a.py\n", 0.25),
        ("0", "error", "[error: bad arguments]", 0.0),
        ("e1", "ok", "edited a.py", 0.5),
        ("k1", "ok", "helper answered (16 characters)", 3.0),
        ("old", "ok", "fine", None),
        ("gone", "cancelled", INTERRUPTED, None),
    ]
    assert tools[0].title == "bash  ls" and tools[1].title == "bash  {bad"
    assert tools[2].diff == "--- a/a.py\n+++ b/a.py\n"
    user, thought, answer = items[0], items[1], items[2]
    assert isinstance(user, UserItem) and user.text == "fix it"
    assert isinstance(thought, ThoughtItem) and thought.folded
    assert isinstance(answer, AnswerItem)
    notices = [item for item in items if isinstance(item, NoticeItem)]
    assert [(n.level, n.text[:20]) for n in notices] == [
        ("error", "[error: server gone]"),
        ("warning", "[warning: disk]"),
        ("info", "shortened 2 tool out"),
    ]
    assert "1,500 characters" in notices[2].text
    recaps = [item for item in items if isinstance(item, RecapItem)]
    assert [r.stop_reason for r in recaps] == ["error", "end_turn"]
    assert any(isinstance(item, CompactionItem) for item in items)
