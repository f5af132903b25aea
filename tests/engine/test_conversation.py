"""Every reader of a journal over the shared table of record kinds: the one reader of its
meaning (`core.conversation`), the window's resume drawn from it, the engine's replay of the
history it sends, and the record types that both read through and the session writes with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.journal_records import ENTRIES, HEADER, RECORDS, SENT, SYSTEM

from mm_tui.core.conversation import INTERRUPTED, flat_text, read_conversation
from mm_tui.core.journal_records import (
    KINDS,
    ErrorRecord,
    LaterRecord,
    ToolRecord,
    TurnRecord,
    parse_record,
    read_record,
)
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import Session
from mm_tui.engine.session_files import replay_history
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
        "NoticeItem",  # the outputs shortened
        "NoticeItem",  # the model switched
        "NoticeItem",  # the files undone
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
        ("info", "model: bigger-model "),
        ("info", "undo: undone (1 turn"),
    ]
    assert notices[3].text == "model: bigger-model (was scripted-model)"
    assert "1,500 characters" in notices[2].text
    recaps = [item for item in items if isinstance(item, RecapItem)]
    assert [r.stop_reason for r in recaps] == ["error", "end_turn"]
    assert any(isinstance(item, CompactionItem) for item in items)


def test_the_engine_replays_the_table_into_the_history_it_sends() -> None:
    history = replay_history(Path("table.jsonl"), RECORDS)
    # the compaction's history, replaced as a whole, then two of its outputs shortened
    assert history.messages == [
        SYSTEM,
        SENT[0],
        {**SENT[1], "content": "a…"},
        {**SENT[2], "content": "[…"},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "You're welcome."},
    ]
    # by call id: of the two results of the id "0" (a small server's), the second is kept
    assert history.tool_results == {
        "0": ToolRecord(status="error", elapsed=0),
        "e1": ToolRecord(status="ok", elapsed=0.5, diff="--- a/a.py\n+++ b/a.py\n"),
        "k1": ToolRecord(status="ok", elapsed=3, display="helper answered (16 characters)"),
    }
    assert history.turns == [
        TurnRecord(
            counters={"commands": 3, "file_ops": 1},
            usage={"prompt_tokens": 120, "completion_tokens": 30},
            elapsed=4.5,
            stop_reason="error",
            context_used=1500,
            context_window=4096,
        ),
        TurnRecord(counters={}, usage={}, elapsed=0.5, stop_reason="end_turn"),
    ]
    assert history.errors == [
        ErrorRecord(where="provider", message="[error: server gone]"),
        ErrorRecord(where="session", level="warning", message="[warning: disk]"),
    ]
    assert history.updated == ""  # no record of the table has a time
    assert history.model == "bigger-model"  # a resumed session goes on with it


KNOWN = [record for record in RECORDS if record["type"] in KINDS]


@pytest.mark.parametrize("raw", KNOWN, ids=[f"{n}-{r['type']}" for n, r in enumerate(KNOWN)])
def test_each_record_of_the_table_is_its_type_and_back(raw: dict) -> None:
    record = parse_record(raw)
    assert type(record) is KINDS[raw["type"]]
    assert record.to_json() == raw
    assert read_record(raw) == record  # the lenient reading of a good record is the same


def test_a_later_mms_kind_of_record_is_kept_as_it_is() -> None:
    (later,) = [record for record in RECORDS if record["type"] not in KINDS]
    assert parse_record(later) == read_record(later) == LaterRecord(later)
    assert parse_record(later).to_json() == later


def test_the_table_is_written_back_as_it_was_read(tmp_path: Path) -> None:
    """A session resumed and written whole elsewhere (its folder moved) writes each record as
    it read it, a later mm's kind among them."""
    journal = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in RECORDS)
    (tmp_path / "table.jsonl").write_text(journal, encoding="utf-8")
    session = Session.load(tmp_path, HEADER["id"])
    assert session.warnings == [] and not session.repaired
    session.move_to(tmp_path / "moved")
    session.save()
    flush_all()
    assert (tmp_path / "moved" / "table.jsonl").read_text(encoding="utf-8") == journal
