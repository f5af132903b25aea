"""Session files: round trip, atomic saves under SIGKILL, listing, damaged files, repairs."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mm_tui.engine import session as session_module
from mm_tui.engine.session import (
    INTERRUPTED,
    SESSION_VERSION,
    Session,
    SessionError,
    list_sessions,
)

ROOT = Path(__file__).resolve().parent.parent


def new(folder: Path, **kwargs) -> Session:
    fields = {"cwd": "/work/p", "model": "qwen", "provider": "Ollama", "base_url": "http://h/v1"}
    return Session.new(folder, **{**fields, **kwargs})


def temps(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


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
    assert session.path == folder / f"{session.id}.json"
    assert session.path.is_file()
    assert temps(folder) == []


def test_the_id_sorts_by_time() -> None:
    session = new(Path("x"))
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", session.id)
    started = datetime.strptime(session.id[:15], "%Y%m%d-%H%M%S")
    assert started.isoformat() == session.created[:19]


def test_the_file_format(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.set_messages([{"role": "user", "content": "hi"}])
    data = json.loads(session.path.read_text(encoding="utf-8"))
    assert set(data) == {
        "id",
        "version",
        "created",
        "updated",
        "cwd",
        "model",
        "provider",
        "base_url",
        "messages",
        "turns",
        "errors",
    }
    assert data["version"] == SESSION_VERSION == 1
    assert data["id"] == session.id
    assert (data["cwd"], data["model"], data["provider"], data["base_url"]) == (
        "/work/p",
        "qwen",
        "Ollama",
        "http://h/v1",
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", data["created"])
    assert data["updated"] >= data["created"]
    assert "api" not in json.dumps(data).lower()


def test_round_trip(tmp_path: Path) -> None:
    session = new(tmp_path, cwd=tmp_path, base_url=None)
    messages = [
        {"role": "system", "content": "you are mm"},
        {"role": "user", "content": "list the files ünïcödé 🙂"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "two files", "reasoning_content": "easy"},
    ]
    session.set_messages(messages)
    session.add_turn(
        counters={"commands": 1, "file_ops": 0, "skills": 0, "lsp_calls": 0},
        usage={"prompt_tokens": 10, "completion_tokens": 5},
        elapsed=1.25,
        stop_reason="answer",
    )
    session.add_error("provider", "HTTP 500 after the first token")
    loaded = Session.load(tmp_path, session.id)
    assert loaded == session
    assert loaded.messages == messages
    assert loaded.turns[0]["counters"]["commands"] == 1
    assert loaded.turns[0]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5}
    assert (loaded.turns[0]["elapsed"], loaded.turns[0]["stop_reason"]) == (1.25, "answer")
    assert loaded.errors[0]["where"] == "provider"
    assert loaded.errors[0]["message"] == "HTTP 500 after the first token"
    assert set(loaded.errors[0]) == {"time", "where", "message"}


def test_add_turn_takes_the_counters_dataclass(tmp_path: Path) -> None:
    @dataclass(frozen=True)
    class Counters:
        commands: int = 2
        file_ops: int = 1

    session = new(tmp_path)
    session.add_turn(counters=Counters(), usage=None, elapsed=0.5, stop_reason="answer")
    turn = Session.load(tmp_path, session.id).turns[0]
    assert turn["counters"] == {"commands": 2, "file_ops": 1}
    assert turn["usage"] == {}


def test_add_error_saves(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.add_error("bash", "boom")
    assert Session.load(tmp_path, session.id).errors[0]["message"] == "boom"


def test_save_updates_the_time(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.save()
    first = session.updated
    time.sleep(0.002)
    session.save()
    assert session.updated > first
    assert Session.load(tmp_path, session.id).created == session.created


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(codec=None, exclude_categories=())))
def test_any_text_survives_a_round_trip(tmp_path: Path, text: str) -> None:
    session = new(tmp_path)
    session.set_messages([{"role": "user", "content": text}])
    assert Session.load(tmp_path, session.id).messages[0]["content"] == text


def test_the_file_is_private(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.save()
    assert session.path.stat().st_mode & 0o077 == 0


# --- atomic saves --------------------------------------------------------------------------------


def test_a_failed_rename_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = new(tmp_path)
    session.set_messages([{"role": "user", "content": "one"}])
    before = session.path.read_bytes()

    def broken_replace(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session_module.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        session.set_messages([{"role": "user", "content": "two"}])
    assert session.path.read_bytes() == before
    assert temps(tmp_path) == []


def test_a_failed_fsync_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = new(tmp_path)

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(session_module.os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        session.save()
    assert not session.path.exists()
    assert temps(tmp_path) == []


def test_an_interrupted_save_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = new(tmp_path)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(session_module.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        session.save()
    assert temps(tmp_path) == []


def test_a_history_that_is_not_json_fails_before_touching_the_disk(tmp_path: Path) -> None:
    session = new(tmp_path)
    session.messages.append({"role": "user", "content": object()})
    with pytest.raises(TypeError):
        session.save()
    assert not session.path.exists()
    assert temps(tmp_path) == []


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
        session.messages.append({"role": "user", "content": f"{i}:" + "x" * 4000})
        session.add_turn(counters={"commands": i}, usage={}, elapsed=0.0, stop_reason="answer")
        print(i, flush=True)  # after save() returned: this state must survive any kill
        i += 1
    """
)


def test_sigkill_at_random_moments_leaves_a_complete_state(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(1234)
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(folder)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        session_id = proc.stdout.readline().strip()
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        acknowledged = [int(line) for line in proc.stdout.read().split()]
        proc.stdout.close()

        session = Session.load(folder, session_id)
        count = len(session.messages)
        assert len(session.turns) == count  # one save holds both: a state, never half of one
        assert count >= (acknowledged[-1] + 1 if acknowledged else 0)
        for i, message in enumerate(session.messages):
            assert message == {"role": "user", "content": f"{i}:" + "x" * 4000}
            assert session.turns[i]["counters"] == {"commands": i}

        # a temporary file of the killed moment is ignored, and cleared by the next save
        leftovers = temps(folder)
        assert all(t.name == f".{session_id}.{proc.pid}.json.tmp" for t in leftovers)
        assert session_id in [info.id for info in list_sessions(folder)]
        session.save()
        assert temps(folder) == []
        assert Session.load(folder, session_id).messages == session.messages


def test_a_temp_file_of_a_live_process_is_left_alone(tmp_path: Path) -> None:
    """Another mm saving into the same folder right now must not lose its temporary file."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        theirs = tmp_path / f".20260101-000000-abcdef.{live.pid}.json.tmp"
        theirs.write_text("{", encoding="utf-8")
        new(tmp_path).save()
        assert theirs.exists()
    finally:
        live.kill()
        live.wait()
    new(tmp_path).save()
    assert not theirs.exists()


# --- latest and list -----------------------------------------------------------------------------


def make(folder: Path, title: str, updated: str) -> Session:
    session = new(folder)
    session.set_messages([{"role": "system", "content": "sys"}, {"role": "user", "content": title}])
    # rewrite the time in the file, as if saved at `updated`
    data = json.loads(session.path.read_text(encoding="utf-8"))
    data["updated"] = session.updated = updated
    session.path.write_text(json.dumps(data), encoding="utf-8")
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
    assert Session.list_sessions(tmp_path) == infos


def test_title_of_content_parts_and_of_no_user_message(tmp_path: Path) -> None:
    s = new(tmp_path)
    s.set_messages([{"role": "user", "content": [{"type": "text", "text": "parts here"}]}])
    t = new(tmp_path)
    t.set_messages([{"role": "system", "content": "sys"}])
    titles = {info.id: info.title for info in list_sessions(tmp_path)}
    assert titles == {s.id: "parts here", t.id: ""}


def test_latest(tmp_path: Path) -> None:
    assert Session.latest(tmp_path / "none") is None
    assert Session.latest(tmp_path) is None
    make(tmp_path, "old", "2026-01-01T10:00:00.000Z")
    newest = make(tmp_path, "new", "2026-02-01T10:00:00.000Z")
    latest = Session.latest(tmp_path)
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
        Session.latest(tmp_path)
    message = str(info.value)
    assert message.startswith(f"mm: {tmp_path}/2026030")
    assert message.endswith(" — it is the newest session file; --resume ID opens another")
    # Damaged files older than the latest readable one are passed over.
    for path in tmp_path.glob("202603*.json"):
        os.utime(path, (0, 0))
    latest = Session.latest(tmp_path)
    assert latest is not None and latest.id == good.id


def test_list_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    assert list_sessions(tmp_path / "missing") == []


# --- damaged files -------------------------------------------------------------------------------


def saved(folder: Path) -> Session:
    session = new(folder)
    session.set_messages([{"role": "user", "content": "hello"}])
    return session


def damage_cases(text: str) -> dict[str, tuple[bytes, str]]:
    data = json.loads(text)
    future = {**data, "version": SESSION_VERSION + 1}
    no_messages = {k: v for k, v in data.items() if k != "messages"}
    wrong = {**data, "turns": {}}
    bad_message = {**data, "messages": ["hello"]}
    return {
        "truncated": (text[: len(text) // 2].encode(), "cut short or not JSON"),
        "empty": (b"", "cut short or not JSON"),
        "not json": (b"hello there", "cut short or not JSON"),
        "not utf-8": (b'{"a": "\xff"}', "not UTF-8"),
        "not an object": (b"[1, 2]", "not a JSON object"),
        "no version": (json.dumps({**data, "version": None}).encode(), "no version number"),
        "future": (
            json.dumps(future).encode(),
            f"written by a newer mm (session format {SESSION_VERSION + 1}",
        ),
        "missing field": (json.dumps(no_messages).encode(), '"messages" is missing'),
        "wrong type": (json.dumps(wrong).encode(), '"turns" has the wrong type'),
        "bad message": (json.dumps(bad_message).encode(), '"messages" holds something'),
    }


@pytest.mark.parametrize(
    "case",
    [
        "truncated",
        "empty",
        "not json",
        "not utf-8",
        "not an object",
        "no version",
        "future",
        "missing field",
        "wrong type",
        "bad message",
    ],
)
def test_a_damaged_file_is_a_clear_error_and_is_left_alone(tmp_path: Path, case: str) -> None:
    session = saved(tmp_path)
    raw, reason = damage_cases(session.path.read_text(encoding="utf-8"))[case]
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
    with pytest.raises(SessionError, match=r"20260101-000000-abcdef\.json: no such session$"):
        Session.load(tmp_path, "20260101-000000-abcdef")


@pytest.mark.parametrize("bad_id", ["../etc/passwd", ".hidden", "", "a/b", "x.json"])
def test_an_id_cannot_leave_the_folder(tmp_path: Path, bad_id: str) -> None:
    with pytest.raises(SessionError, match="is not a session id"):
        Session.load(tmp_path, bad_id)


# --- interrupted tool calls ----------------------------------------------------------------------


def load_history(folder: Path, messages: list[dict]) -> list[dict]:
    session = new(folder)
    session.set_messages(messages)
    return Session.load(folder, session.id).messages


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
    before = session.path.read_bytes()
    loaded = Session.load(tmp_path, session.id)
    assert session.path.read_bytes() == before
    loaded.save()
    assert Session.load(tmp_path, session.id).messages == loaded.messages
    assert len(loaded.messages) == 2
