"""Session journals: the format, round trips, appends that cost what they add, torn last lines,
SIGKILL at random moments, format-1 files converted, listing, damaged files, repairs."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.env import clean_env

from mm_tui.core.events import Counters, TurnEnded, Usage
from mm_tui.core.journal_records import ErrorRecord, ToolRecord, TurnRecord
from mm_tui.engine import session as session_module
from mm_tui.engine.journal import flush_all
from mm_tui.engine.recorder import SessionRecorder
from mm_tui.engine.session import INTERRUPTED, SESSION_VERSION, Session, SessionError
from mm_tui.engine.session_listing import latest_in, list_sessions

ROOT = Path(__file__).resolve().parents[2]


def new(folder: Path, **kwargs) -> Session:
    fields = {"cwd": "/work/p", "model": "qwen", "provider": "Ollama", "base_url": "http://h/v1"}
    return Session.new(folder, **{**fields, **kwargs})


def temps(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


def lines(session: Session) -> list[dict]:
    flush_all()
    return [json.loads(line) for line in session.path.read_text(encoding="utf-8").splitlines()]


def reload(session: Session) -> Session:
    flush_all()
    return Session.load(session.folder, session.id)


def tool_call(call_id: str, name: str = "bash") -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": '{"command": "ls"}'},
    }


# --- new, save, load -----------------------------------------------------------------------------


def test_new_writes_nothing_until_the_first_save(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "sessions"
    session = new(folder)
    assert not folder.exists()
    session.save()
    flush_all()
    assert session.path == folder / f"{session.id}.jsonl"
    assert session.path.is_file()
    assert session.meta_path == folder / f"{session.id}.meta.json"
    assert session.meta_path.is_file()
    assert temps(folder) == []


def test_the_id_sorts_by_time() -> None:
    session = new(Path("x"))
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", session.id)
    started = datetime.strptime(session.id[:15], "%Y%m%d-%H%M%S")
    assert started.isoformat() == session.created[:19]


def test_the_journal_format(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.add_message({"role": "user", "content": "hi"})
    session.add_message(
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        tool=ToolRecord(status="error", elapsed=1.5, title="bash  ls", display=None),
    )
    session.add_turn(counters={"commands": 1}, usage={}, elapsed=2.0, stop_reason="end_turn")
    header, user, result, turn = lines(session)
    assert header == {
        "type": "session",
        "version": SESSION_VERSION,
        "id": session.id,
        "created": session.created,
        "cwd": "/work/p",
        "model": "qwen",
        "provider": "Ollama",
        "base_url": "http://h/v1",
    }
    assert SESSION_VERSION == 2
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", header["created"])
    assert user == {"type": "message", "message": {"role": "user", "content": "hi"}}
    assert result["tool"] == {"status": "error", "elapsed": 1.5, "title": "bash  ls"}
    assert turn["type"] == "turn" and turn["stop_reason"] == "end_turn"
    meta = json.loads(session.meta_path.read_text(encoding="utf-8"))
    assert meta["title"] == "hi" and meta["message_count"] == 2
    assert meta["updated"] >= meta["created"] == session.created
    assert "api" not in session.path.read_text().lower()


NOW = "2026-01-02T03:04:05.678Z"
# Every kind of record as mm writes it, byte for byte and key by key: a journal written by
# this mm and one written by an earlier one must be the same file.
JOURNAL = """\
{"type": "session", "version": 2, "id": "20260102-030405-abcdef", "created": "2026-01-02T03:04:05.678Z", "cwd": "/p", "model": "m", "provider": null, "base_url": "http://h/v1"}
{"type": "message", "message": {"role": "system", "content": "s"}}
{"type": "message", "message": {"role": "user", "content": "ü"}}
{"type": "message", "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}}], "reasoning_content": "r"}, "thought": "first ls"}
{"type": "message", "message": {"role": "tool", "tool_call_id": "a", "content": "x"}, "tool": {"status": "ok", "elapsed": 0.25, "title": "bash  ls", "diff": "d"}}
{"type": "message", "message": {"role": "tool", "tool_call_id": "b", "content": "y"}, "tool": {"status": "error", "elapsed": 0, "display": ""}}
{"type": "message", "message": {"role": "assistant", "content": "done"}}
{"type": "error", "time": "2026-01-02T03:04:05.678Z", "where": "provider", "message": "HTTP 500"}
{"type": "turn", "time": "2026-01-02T03:04:05.678Z", "counters": {"commands": 1, "file_ops": 0, "skills": 0, "lsp_calls": 0, "mcp_calls": 0}, "usage": {"prompt_tokens": 3, "completion_tokens": 4}, "elapsed": 1.5, "stop_reason": "end_turn", "context_used": 10, "context_window": 100, "context_estimated": true}
{"type": "turn", "time": "2026-01-02T03:04:05.678Z", "counters": {"commands": 2}, "usage": {}, "elapsed": 0.5, "stop_reason": "cancelled"}
{"type": "shortened", "time": "2026-01-02T03:04:05.678Z", "index": 3, "message": {"role": "tool", "tool_call_id": "a", "content": "…"}, "cut": 1}
{"type": "compaction", "time": "2026-01-02T03:04:05.678Z", "summary": "sum", "replaced": 6, "auto": true, "tokens_before": 100, "tokens_after": 10, "messages": [{"role": "system", "content": "s sum"}]}
{"type": "compaction", "time": "2026-01-02T03:04:05.678Z", "summary": "again", "replaced": 1, "auto": false, "messages": [{"role": "system", "content": "s again"}]}
{"type": "history", "time": "2026-01-02T03:04:05.678Z", "messages": [{"role": "user", "content": "u"}]}
"""  # noqa: E501


def test_the_journal_is_written_as_it_always_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_module, "now", lambda: NOW)
    session = Session(
        tmp_path, "20260102-030405-abcdef", cwd="/p", model="m", provider=None,
        base_url="http://h/v1", created=NOW,
    )  # fmt: skip
    session.messages.append({"role": "system", "content": "s"})  # recorded at the next change
    session.add_message({"role": "user", "content": "ü"})
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("a")]}
    session.add_message({**call, "reasoning_content": "r"}, thought="first ls")
    session.add_message(
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        tool=ToolRecord(status="ok", elapsed=0.25, title="bash  ls", display=None, diff="d"),
    )
    session.add_message(
        {"role": "tool", "tool_call_id": "b", "content": "y"},
        tool=ToolRecord(status="error", elapsed=0, title=None, display=""),
    )
    session.add_message({"role": "assistant", "content": "done"}, thought="")
    session.add_error("provider", "HTTP 500")
    ended = TurnEnded(
        turn=1, counters=Counters(commands=1), elapsed=1.5, usage=Usage(3, 4),
        stop_reason="end_turn", context_used=10, context_window=100, context_estimated=True,
    )  # fmt: skip
    SessionRecorder(session).turn(lambda event: None, ended)
    session.add_turn(counters={"commands": 2}, usage={}, elapsed=0.5, stop_reason="cancelled")
    session.shorten(3, {"role": "tool", "tool_call_id": "a", "content": "…"}, 1)
    system = {"role": "system", "content": "s sum"}
    session.compact("sum", [system], auto=True, tokens_before=100, tokens_after=10)
    session.compact("again", [{"role": "system", "content": "s again"}])
    session.set_messages([{"role": "user", "content": "u"}])
    flush_all()
    assert session.path.read_text(encoding="utf-8") == JOURNAL


def test_a_reloaded_session_has_the_time_it_was_saved_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clock ticks between a record's time and its save (a loaded machine): loading finds
    the newest record's time, and so must the session that saved it."""
    ticks = iter(range(10_000))
    monkeypatch.setattr(session_module, "now", lambda: f"2099-01-01T00:00:{next(ticks):06d}Z")
    session = new(tmp_path, cwd=tmp_path, base_url=None)
    session.add_message({"role": "user", "content": "hello"})
    session.add_error("provider", "HTTP 500")
    assert reload(session).updated == session.updated


def test_round_trip(tmp_path: Path) -> None:
    session = new(tmp_path, cwd=tmp_path, base_url=None)
    messages = [
        {"role": "system", "content": "you are mm"},
        {"role": "user", "content": "list the files ünïcödé 🙂"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "two files", "reasoning_content": "easy"},
    ]
    for message in messages:
        tool = ToolRecord(status="ok", elapsed=0.25, title="bash  ls")
        tool = tool if "tool_call_id" in message else None
        session.add_message(message, tool=tool)
    session.add_turn(
        counters={"commands": 1, "file_ops": 0, "skills": 0, "lsp_calls": 0},
        usage={"prompt_tokens": 10, "completion_tokens": 5},
        elapsed=1.25,
        stop_reason="answer",
    )
    session.add_error("provider", "HTTP 500 after the first token")
    loaded = reload(session)
    assert loaded.to_dict() == session.to_dict()
    assert loaded.messages == messages
    assert loaded.tool_results == {"c1": ToolRecord(status="ok", elapsed=0.25, title="bash  ls")}
    (turn,) = loaded.turns
    assert turn == TurnRecord(
        time=turn.time,
        counters={"commands": 1, "file_ops": 0, "skills": 0, "lsp_calls": 0},
        usage={"prompt_tokens": 10, "completion_tokens": 5},
        elapsed=1.25,
        stop_reason="answer",
    )
    (error,) = loaded.errors
    assert error == ErrorRecord(
        time=error.time, where="provider", message="HTTP 500 after the first token"
    )
    assert loaded.to_dict()["errors"] == [
        {"time": error.time, "where": "provider", "message": "HTTP 500 after the first token"}
    ]
    assert [r["type"] for r in loaded.records] == ["session"] + ["message"] * 5 + ["turn", "error"]
    assert loaded.warnings == [] and not loaded.repaired


def test_add_turn_takes_the_counters_dataclass(tmp_path: Path) -> None:
    @dataclass(frozen=True)
    class Counters:
        commands: int = 2
        file_ops: int = 1

    session = new(tmp_path)
    session.add_turn(counters=Counters(), usage=None, elapsed=0.5, stop_reason="answer")
    assert reload(session).turns[0].counters == {"commands": 2, "file_ops": 1}


def test_messages_appended_directly_are_recorded_in_order(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.messages.append({"role": "system", "content": "s"})
    session.add_message({"role": "user", "content": "u"})
    session.messages.append({"role": "assistant", "content": "a"})
    session.save()
    assert [r["message"]["content"] for r in lines(session)[1:]] == ["s", "u", "a"]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(codec=None, exclude_categories=())))
def test_any_text_survives_a_round_trip(tmp_path: Path, text: str) -> None:
    session = new(tmp_path)
    session.set_messages([{"role": "user", "content": text}])
    assert reload(session).messages[0]["content"] == text


def test_the_files_are_private(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.add_message({"role": "user", "content": "x"})
    session.save()
    flush_all()
    assert session.path.stat().st_mode & 0o077 == 0
    assert session.meta_path.stat().st_mode & 0o077 == 0


def test_a_value_json_cannot_hold_is_written_as_text(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.messages.append({"role": "user", "content": Path("/odd")})
    session.save()
    assert reload(session).messages == [{"role": "user", "content": "/odd"}]


# --- appends --------------------------------------------------------------------------------------


def test_a_save_appends_only_what_is_new(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.add_message({"role": "user", "content": "first"})
    session.save()
    flush_all()
    before = session.path.read_bytes()
    inode = session.path.stat().st_ino
    session.add_message({"role": "assistant", "content": "second"})
    session.save()
    session.save()  # nothing new: nothing written
    flush_all()
    after = session.path.read_bytes()
    assert after.startswith(before)
    assert after[len(before) :].count(b"\n") == 1
    assert session.path.stat().st_ino == inode  # appended in place, not rewritten


def test_a_reloaded_session_appends_to_its_journal(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.add_message({"role": "user", "content": "one"})
    session.save()
    loaded = reload(session)
    loaded.add_message({"role": "assistant", "content": "two"})
    loaded.save()
    assert [r["type"] for r in lines(session)] == ["session", "message", "message"]
    assert reload(session).messages[-1]["content"] == "two"


def test_sync_and_close_return_futures_that_finish(tmp_path: Path) -> None:
    session = new(tmp_path)
    assert session.sync() is None  # nothing written yet
    session.add_message({"role": "user", "content": "x"})
    session.save()
    future = session.sync()
    assert future is not None
    future.result(5)
    closing = session.close()
    assert closing is not None
    closing.result(5)
    assert Session.load(tmp_path, session.id).messages == [{"role": "user", "content": "x"}]


# --- torn last lines --------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", ["half a line", "no newline"])
def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path, cut: str) -> None:
    session = new(tmp_path)
    for i in range(3):
        session.add_message({"role": "user", "content": f"m{i}"})
    session.save()
    flush_all()
    raw = session.path.read_bytes()
    last = raw[:-1].rfind(b"\n") + 1
    torn = raw[: last + (len(raw) - last) // 2] if cut == "half a line" else raw[:-1]
    session.path.write_bytes(torn)
    loaded = Session.load(tmp_path, session.id)
    expected = ["m0", "m1"] if cut == "half a line" else ["m0", "m1"]
    assert [m["content"] for m in loaded.messages] == expected
    (warning,) = loaded.warnings
    assert warning == (
        f"the last line of {session.path} was cut short ({len(torn) - last} bytes: mm was "
        "stopped while writing it) and is skipped; everything before it is here"
    )
    assert session.path.read_bytes() == torn  # loading never writes
    # The next save cuts the torn tail off and appends after the last whole line.
    loaded.add_message({"role": "user", "content": "after"})
    loaded.save()
    again = reload(loaded)
    assert [m["content"] for m in again.messages] == ["m0", "m1", "after"]
    assert again.warnings == []


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from mm_tui.engine.session import Session

    session = Session.new(Path(sys.argv[1]), cwd="/p", model="m", provider="p", base_url=None)
    session.save()
    print(session.id, flush=True)
    i = 0
    while True:
        session.add_message({"role": "user", "content": f"{i}:" + "x" * 4000})
        session.add_turn(counters={"commands": i}, usage={}, elapsed=0.0, stop_reason="answer")
        if i % 7 == 0:
            session.sync().result()
            print(i, flush=True)  # synced: this state must survive any kill
        i += 1
    """
)


def test_sigkill_at_random_moments_leaves_a_loadable_journal(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    env = clean_env(tmp_path, PYTHONPATH=str(ROOT))
    rng = random.Random(1234)
    torn = 0
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(folder)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        session_id = proc.stdout.readline().strip()
        time.sleep(rng.uniform(0.0, 0.25))  # the scenario: a kill at a random moment
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        acknowledged = [int(line) for line in proc.stdout.read().split()]
        proc.stdout.close()
        if not (folder / f"{session_id}.jsonl").exists():
            assert not acknowledged  # killed before the first batch was renamed into place
            continue
        session = Session.load(folder, session_id)
        torn += bool(session.warnings)
        count = len(session.messages)
        assert len(session.turns) in (count, count - 1)  # a record is whole or absent
        assert count >= (acknowledged[-1] + 1 if acknowledged else 0)
        for i, message in enumerate(session.messages):
            assert message == {"role": "user", "content": f"{i}:" + "x" * 4000}
        for i, turn in enumerate(session.turns):
            assert turn.counters == {"commands": i}
        assert session_id in [info.id for info in list_sessions(folder)]
        session.add_message({"role": "user", "content": "resumed"})
        session.save()
        again = reload(session)
        assert again.messages == session.messages and again.warnings == []
        leftovers = temps(folder)
        assert all(t.name.startswith(f".{session_id}.") for t in leftovers)


def test_a_temp_file_of_a_live_process_is_left_alone(tmp_path: Path) -> None:
    """Another mm saving into the same folder right now must not lose its temporary file."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        theirs = tmp_path / f".20260101-000000-abcdef.jsonl.{live.pid}.tmp"
        theirs.write_text("{", encoding="utf-8")
        new(tmp_path).save()
        flush_all()
        assert theirs.exists()
    finally:
        live.kill()
        live.wait()
    new(tmp_path).save()
    flush_all()
    assert not theirs.exists()


def test_resuming_removes_the_temporary_file_a_killed_run_left(tmp_path: Path) -> None:
    """A run killed while it replaced the session's .meta.json left its temporary file (named by
    its pid); the run that resumes the session removes it, as a new session's run does. The
    fault test that kills mm at random moments found it left behind."""
    session = new(tmp_path)
    session.add_message({"role": "user", "content": "hi"})
    session.save()
    flush_all()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / f".{session.id}.meta.json.{dead.pid}.tmp"
    left.write_text("{", encoding="utf-8")
    resumed = reload(session)
    resumed.add_message({"role": "user", "content": "again"})
    resumed.save()
    flush_all()
    assert not left.exists()
    assert reload(resumed).messages[-1]["content"] == "again"


# --- compaction and shortening -------------------------------------------------------------------


def test_a_compaction_replaces_the_history_and_keeps_the_journal(tmp_path: Path) -> None:
    session = new(tmp_path)
    for role, text in [("system", "s"), ("user", "long work"), ("assistant", "done it")]:
        session.add_message({"role": role, "content": text})
    summary = [{"role": "system", "content": "s\n\nSummary: did the long work"}]
    record = session.compact("did the long work", summary, auto=True)
    assert record.replaced == 3 and record.auto is True
    session.add_message({"role": "user", "content": "next"})
    session.save()
    loaded = reload(session)
    assert loaded.messages == [*summary, {"role": "user", "content": "next"}]
    kept = [r["message"]["content"] for r in loaded.records if r["type"] == "message"]
    assert kept == ["s", "long work", "done it", "next"]  # nothing summarised is gone
    (compaction,) = [r for r in loaded.records if r["type"] == "compaction"]
    assert compaction["summary"] == "did the long work"


def test_a_shortened_message_is_sent_short_and_kept_whole(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.add_message({"role": "tool", "tool_call_id": "a", "content": "x" * 1000})
    session.shorten(0, {"role": "tool", "tool_call_id": "a", "content": "x…"}, cut=998)
    session.save()
    loaded = reload(session)
    assert loaded.messages == [{"role": "tool", "tool_call_id": "a", "content": "x…"}]
    assert loaded.records[1]["message"]["content"] == "x" * 1000


# --- format 1 ----------------------------------------------------------------------------------------


def old_file(folder: Path, session_id: str = "20250101-100000-abcdef") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.json"
    data = {
        "id": session_id,
        "version": 1,
        "created": "2025-01-01T10:00:00.000Z",
        "updated": "2025-01-01T10:05:00.000Z",
        "cwd": "/old",
        "model": "m",
        "provider": "p",
        "base_url": None,
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": None, "tool_calls": [tool_call("a"), tool_call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "fine"},
            {"role": "tool", "tool_call_id": "b", "content": "[error: no such file]"},
            {"role": "assistant", "content": "one answer"},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "two"},
        ],
        "turns": [
            {"time": "2025-01-01T10:01:00.000Z", "counters": {}, "usage": {}, "elapsed": 1.0,
             "stop_reason": "end_turn"},
            {"time": "2025-01-01T10:05:00.000Z", "counters": {}, "usage": {}, "elapsed": 2.0,
             "stop_reason": "end_turn"},
        ],
        "errors": [{"time": "2025-01-01T10:00:30.000Z", "where": "tool", "message": "boom"}],
    }  # fmt: skip
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def test_a_format_1_file_is_listed_and_converted_when_opened(tmp_path: Path) -> None:
    path = old_file(tmp_path)
    raw = path.read_bytes()
    (info,) = list_sessions(tmp_path)
    assert (info.id, info.title, info.message_count) == (path.stem, "first question", 8)
    assert path.read_bytes() == raw  # listing converts nothing
    session = Session.load(tmp_path, path.stem)
    assert not path.exists()
    assert (tmp_path / f"{path.stem}.v1.json").read_bytes() == raw  # kept, out of the list
    assert [m["content"] for m in session.messages][-2:] == ["second", "two"]
    assert session.tool_results["a"] == ToolRecord(status="ok")
    assert session.tool_results["b"] == ToolRecord(status="error")
    kinds = [r["type"] for r in session.records]
    # The first turn's error and end go before the second question.
    assert kinds == ["session", *["message"] * 6, "error", "turn", "message", "message", "turn"]
    again = Session.load(tmp_path, path.stem)
    assert again.to_dict() == session.to_dict()
    assert [i.id for i in list_sessions(tmp_path)] == [path.stem]


# --- latest and list -----------------------------------------------------------------------------


def make(folder: Path, title: str, updated: str) -> Session:
    session = new(folder)
    session.set_messages([{"role": "system", "content": "sys"}, {"role": "user", "content": title}])
    flush_all()
    # rewrite the time in the metadata file, as if saved at `updated`
    data = json.loads(session.meta_path.read_text(encoding="utf-8"))
    data["updated"] = session.updated = updated
    session.meta_path.write_text(json.dumps(data), encoding="utf-8")
    stamp = datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp()
    os.utime(session.path, (stamp, stamp))
    return session


def test_list_is_newest_first_with_titles(tmp_path: Path) -> None:
    a = make(tmp_path, "first thing", "2026-01-01T10:00:00.000Z")
    b = make(tmp_path, "second\nthing  with   space", "2026-01-03T10:00:00.000Z")
    c = make(tmp_path, "x" * 200, "2026-01-02T10:00:00.000Z")
    infos = list_sessions(tmp_path)
    assert [info.id for info in infos] == [b.id, c.id, a.id]
    assert infos[0].title == "second thing with space"
    assert infos[0].message_count == 2
    assert infos[0].updated == "2026-01-03T10:00:00.000Z"
    assert infos[0].model == "qwen" and infos[0].cwd == "/work/p"
    assert len(infos[1].title) == 80 and infos[1].title.endswith("…")


def test_title_of_content_parts_and_of_no_user_message(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.set_messages([{"role": "user", "content": [{"type": "text", "text": "parts here"}]}])
    t = new(tmp_path)
    t.set_messages([{"role": "system", "content": "sys"}])
    flush_all()
    titles = {info.id: info.title for info in list_sessions(tmp_path)}
    assert titles == {s.id: "parts here", t.id: ""}


def test_latest(tmp_path: Path) -> None:
    assert latest_in(tmp_path / "none") is None
    assert latest_in(tmp_path) is None
    make(tmp_path, "old", "2026-01-01T10:00:00.000Z")
    newest = make(tmp_path, "new", "2026-02-01T10:00:00.000Z")
    latest = latest_in(tmp_path)
    assert latest is not None and latest.id == newest.id
    assert latest.messages[1]["content"] == "new"


def test_list_and_latest_skip_damaged_files_and_temps(tmp_path: Path) -> None:
    good = make(tmp_path, "good", "2026-01-01T10:00:00.000Z")
    (tmp_path / "20260301-000000-aaaaaa.json").write_text('{"version": 1, "id"', encoding="utf-8")
    (tmp_path / "20260302-000000-bbbbbb.json").write_text("[]", encoding="utf-8")
    (tmp_path / f".{good.id}.99999999.json.tmp").write_text("{}", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    assert [info.id for info in list_sessions(tmp_path)] == [good.id]
    # Written after the good one: `--resume` would pass over the session the person meant.
    with pytest.raises(SessionError) as info:
        latest_in(tmp_path)
    message = str(info.value)
    assert message.startswith(f"mm: {tmp_path}/2026030")
    assert message.endswith(" — it is the newest session file; --resume ID opens another")
    # Damaged files older than the latest readable one are passed over.
    for path in tmp_path.glob("202603*.json"):
        os.utime(path, (0, 0))
    latest = latest_in(tmp_path)
    assert latest is not None and latest.id == good.id


def test_list_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    assert list_sessions(tmp_path / "missing") == []


# --- damaged files -------------------------------------------------------------------------------


def saved(folder: Path) -> Session:
    session = new(folder)
    for text in ("hello", "again"):
        session.add_message({"role": "user", "content": text})
    session.save()
    flush_all()
    return session


def damage_cases(raw: bytes) -> dict[str, tuple[bytes, str]]:
    header, first, second = raw.splitlines(keepends=True)
    data = json.loads(header)

    def with_header(**changes: object) -> bytes:
        return json.dumps({**data, **changes}).encode() + b"\n" + first + second

    return {
        "a line cut": (header + first[:10] + b"\n" + second, "line 2: not JSON ("),
        "empty": (b"", "no session header on its first line"),
        "not json": (b"hello there\nand more\n", "line 1: not JSON ("),
        "not utf-8": (header + b'{"a": "\xff"}\n' + second, "line 2: not UTF-8 text"),
        "not a record": (header + b"[1, 2]\n" + second, "line 2: not a journal record"),
        "no header": (first + second, "no session header on its first line"),
        "no version": (with_header(version=None), "no version number"),
        "future": (
            with_header(version=SESSION_VERSION + 1),
            f"written by a newer mm (session format {SESSION_VERSION + 1}",
        ),
        "wrong type": (with_header(cwd=3), '"cwd" is missing or has the wrong type'),
        "bad message": (
            header + b'{"type": "message", "message": "hello"}\n' + second,
            "record 2 holds something that is not a message",
        ),
        "no id": (with_header(id=None), '"id" is missing or has the wrong type'),
        "bad history": (
            header + b'{"type": "history", "messages": [{"role": "user"}, 3]}\n' + second,
            "record 2 holds something that is not a history",
        ),
        "bad shortening": (
            header + first + b'{"type": "shortened", "index": 1, "message": {"role": "user"}, '
            b'"cut": 1}\n' + second,
            "record 3 shortens a message that is not there",
        ),
        "bad turn": (
            header + first + b'{"type": "turn", "counters": {}, "usage": {}, "elapsed": "1s", '
            b'"stop_reason": "end_turn"}\n' + second,
            'record 3 ("turn"): "elapsed" is missing or has the wrong type',
        ),
    }


CASES = [
    "a line cut",
    "empty",
    "not json",
    "not utf-8",
    "not a record",
    "no header",
    "no version",
    "future",
    "wrong type",
    "bad message",
    "no id",
    "bad history",
    "bad shortening",
    "bad turn",
]


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_file_is_a_clear_error_and_is_left_alone(tmp_path: Path, case: str) -> None:
    session = saved(tmp_path)
    session.meta_path.unlink()  # the list reads the journal itself
    raw, reason = damage_cases(session.path.read_bytes())[case]
    session.path.write_bytes(raw)
    with pytest.raises(SessionError) as info:
        Session.load(tmp_path, session.id)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"mm: {session.path}: ")
    assert reason in message
    assert session.path.read_bytes() == raw  # a failed load never writes
    assert list_sessions(tmp_path) == []


def test_a_missing_session(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match=r"20260101-000000-abcdef\.jsonl: no such session$"):
        Session.load(tmp_path, "20260101-000000-abcdef")


@pytest.mark.parametrize("bad_id", ["../etc/passwd", ".hidden", "", "a/b", "x.json"])
def test_an_id_cannot_leave_the_folder(tmp_path: Path, bad_id: str) -> None:
    with pytest.raises(SessionError, match="is not a session id"):
        Session.load(tmp_path, bad_id)


# --- interrupted tool calls ----------------------------------------------------------------------


def load_history(folder: Path, messages: list[dict]) -> list[dict]:
    session = new(folder)
    session.set_messages(messages)
    return reload(session).messages


def test_missing_tool_results_are_added(tmp_path: Path) -> None:
    user = {"role": "user", "content": "go"}
    call = {"role": "assistant", "content": "", "tool_calls": [tool_call("a"), tool_call("b")]}
    done = {"role": "tool", "tool_call_id": "a", "content": "ok"}
    assert load_history(tmp_path, [user, call, done]) == [
        user,
        call,
        done,
        {"role": "tool", "tool_call_id": "b", "content": INTERRUPTED},
    ]


def test_no_results_at_all(tmp_path: Path) -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("a"), tool_call("b")]}
    assert load_history(tmp_path, [call]) == [
        call,
        {"role": "tool", "tool_call_id": "a", "content": INTERRUPTED},
        {"role": "tool", "tool_call_id": "b", "content": INTERRUPTED},
    ]


def test_results_go_right_after_their_call(tmp_path: Path) -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("a")]}
    later = {"role": "user", "content": "and then?"}
    assert load_history(tmp_path, [call, later]) == [
        call,
        {"role": "tool", "tool_call_id": "a", "content": INTERRUPTED},
        later,
    ]


def test_a_repair_in_the_middle_holds_the_history_as_it_was_then(tmp_path: Path) -> None:
    """The history record of a repair is the history at the repair: a message added after it
    is a record of its own, and is not read twice at the next resume."""
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("a")]}
    session = new(tmp_path)
    session.set_messages([call, {"role": "user", "content": "and then?"}])
    session.add_message({"role": "user", "content": "set apart"})
    session.save()
    assert session.records[-2]["messages"][-1] == {"role": "user", "content": "and then?"}
    resumed = reload(session)
    assert resumed.records[-1]["type"] == "history"
    resumed.add_message({"role": "user", "content": "later"})
    resumed.save()
    contents = [m["content"] for m in reload(resumed).messages]
    assert contents == [None, INTERRUPTED, "and then?", "set apart", "later"]


def test_a_well_formed_history_is_unchanged(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    assert load_history(tmp_path, history) == history


def test_the_repair_is_written_only_by_the_next_save(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.set_messages([{"role": "assistant", "content": None, "tool_calls": [tool_call("a")]}])
    flush_all()
    before = session.path.read_bytes()
    loaded = Session.load(tmp_path, session.id)
    assert session.path.read_bytes() == before
    assert loaded.repaired
    loaded.save()
    again = reload(loaded)
    assert again.messages == loaded.messages and not again.repaired
    assert len(loaded.messages) == 2


def test_the_metadata_file_is_rewritten_only_when_what_it_shows_changes(tmp_path: Path) -> None:
    """The list's fields change with a question, a turn, an error; not with the thousands of
    answers and tool results of a turn (each rewrite is a file and a rename)."""
    session = new(tmp_path)
    session.add_message({"role": "user", "content": "go"})
    session.save()
    flush_all()
    inode = session.meta_path.stat().st_ino
    for i in range(5):
        session.add_message(
            {"role": "assistant", "content": None, "tool_calls": [tool_call(f"{i}")]}
        )
        session.save()
        session.add_message({"role": "tool", "tool_call_id": f"{i}", "content": "out"})
        session.save()
    flush_all()
    assert session.meta_path.stat().st_ino == inode
    session.add_turn(counters={}, usage={}, elapsed=1.0, stop_reason="end_turn")
    flush_all()
    assert session.meta_path.stat().st_ino != inode
    assert json.loads(session.meta_path.read_text())["message_count"] == 11


# --------------------------------------------------------------------------- two processes


def resuming(
    base: tuple[str, ...], session_id: str, request: str, cwd: Path, output: int
) -> subprocess.Popen[str]:
    """The real `mm --resume SESSION -p REQUEST`, started and left running: a second process
    that holds the session while it asks."""
    from support.program import MM

    return subprocess.Popen(
        [*MM, *base, "--resume", session_id, "-p", request],
        cwd=cwd,
        env=clean_env(cwd),
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=output,
        text=True,
    )


def test_a_session_another_mm_writes_is_continued_in_a_copy(tmp_path: Path) -> None:
    """Two real `mm -p --resume ID`: the first holds the session (its answer is kept waiting);
    the second goes on in a copy under a new id and says so, so neither journal mixes the
    other's records, and each reads back as the conversation its own process had."""
    from support.program import mm
    from support.scripted_server import Reply, ScriptedServer
    from support.session_helpers import sessions_of

    gate = threading.Event()

    def answer(request: Any) -> Reply:
        asked = request.messages[-1]["content"]
        if asked == "first":
            gate.wait(60)  # held until the second process has done its turn
        return Reply(f"answer to {asked}")

    folder = sessions_of(tmp_path)
    with ScriptedServer(on_empty=answer) as server:
        base = ("--base-url", server.base_url, "--model", "m")
        assert mm(*base, "-p", "hello", cwd=tmp_path).returncode == 0
        (path,) = folder.glob("*.jsonl")
        original = path.name.removesuffix(".jsonl")
        first = resuming(base, original, "first", tmp_path, subprocess.PIPE)
        try:
            server.wait_for_requests(2, timeout=60)  # the first is asking: it holds the session
            second = mm(*base, "--resume", original, "-p", "second", cwd=tmp_path)
        finally:
            gate.set()
            out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
        assert second.returncode == 0, second.stderr
    assert out.startswith("answer to first")
    assert second.stdout.startswith("answer to second")
    forks = [p for p in folder.glob("*.jsonl") if p.name != path.name]
    assert len(forks) == 1
    copy = forks[0].name.removesuffix(".jsonl")
    said = f"session {original} is open in another mm process, which writes it: this one goes "
    assert f"{said}on in a copy of it, session {copy}" in second.stderr
    talk = [(m["role"], m["content"]) for m in Session.load(folder, original).messages[1:]]
    assert talk == [
        ("user", "hello"),
        ("assistant", "answer to hello"),
        ("user", "first"),
        ("assistant", "answer to first"),
    ]
    forked = Session.load(folder, copy)
    assert forked.records[0]["forked_from"] == original
    assert [(m["role"], m["content"]) for m in forked.messages[1:]] == [
        ("user", "hello"),
        ("assistant", "answer to hello"),
        ("user", "second"),
        ("assistant", "answer to second"),
    ]


def test_the_lock_goes_with_a_killed_process(tmp_path: Path) -> None:
    """An mm killed while it holds a session leaves no lock behind: the next resume goes on in
    the session itself, not in a copy."""
    from support.program import mm
    from support.scripted_server import Reply, ScriptedServer, silence_after
    from support.session_helpers import sessions_of

    folder = sessions_of(tmp_path)
    with ScriptedServer(Reply("hi"), silence_after(0)) as server:
        base = ("--base-url", server.base_url, "--model", "m")
        assert mm(*base, "-p", "hello", cwd=tmp_path).returncode == 0
        (path,) = folder.glob("*.jsonl")
        original = path.name.removesuffix(".jsonl")
        held = resuming(base, original, "first", tmp_path, subprocess.DEVNULL)
        try:
            server.wait_for_requests(2, timeout=60)
        finally:
            held.kill()
            held.wait(30)
        server.script(Reply("back"))
        again = mm(*base, "--resume", original, "-p", "again", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
    assert "in a copy" not in again.stderr
    assert [p.name for p in folder.glob("*.jsonl")] == [path.name]
    assert Session.load(folder, original).messages[-1]["content"] == "back"
