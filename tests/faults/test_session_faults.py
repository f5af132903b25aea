"""Faults of the session folder and files, through the engine on the scripted server and the
real `mm` program:

10. a session folder that is read-only, is a file, is a link loop, or sits on a full disk: one
    warning, the turn goes on, nothing crashes, and nothing is lost once the folder is writable;
11. a session file that is truncated, not JSON, or from a future version: `--resume` refuses it
    with one clear line and leaves it as it is; a new session never takes its name.

The full disk and, for root (whom permissions do not stop), the read-only folder are real: a
small tmpfs mounted for the test. Where mounting is not allowed, the engine tests of those two
cases are skipped and the `mm -p` test stands in with RLIMIT_FSIZE (EFBIG instead of ENOSPC: the
same failure of write(2), which is what mm sees).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.engine import make_engine, of, turn
from support.fault_parts import next_prompt_works, session_loads
from support.program import mm
from support.scripted_server import Reply, ScriptedServer, call
from support.session_helpers import journal_files, sessions_of

from mm_tui.core.events import EngineError, ToolCallFinished
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import INTERRUPTED, SESSION_VERSION, Session

WARNING = "[warning: the session file cannot be written ("
WARNING_END = ") — the turn goes on, but this session will not be resumable]"
BIG_OUTPUT = "head -c 20000 /dev/zero | tr '\\0' x; echo"


pytestmark = pytest.mark.usefixtures("no_process_left")


# --- folders that cannot be written --------------------------------------------------------------


def _mount(path: Path, options: str) -> str | None:
    """Mount a tmpfs on `path`; None when done, else why not."""
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
    except OSError as exc:
        return str(exc)
    return None if done.returncode == 0 else done.stderr.strip() or f"exit {done.returncode}"


@contextlib.contextmanager
def unwritable(case: str, folder: Path, *, room: int = 0) -> Iterator[str]:
    """Make `folder` (the sessions folder) unwritable the way `case` says; yields how (for the
    test's own checks), and makes it writable again at the end."""
    if case == "a file":
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.write_text("not a folder\n")
        try:
            yield "file"
        finally:
            if folder.is_file():
                folder.unlink()
        return
    if case == "a link loop":
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.symlink_to(folder.name)
        try:
            yield "loop"
        finally:
            if folder.is_symlink():
                folder.unlink()
        return
    folder.mkdir(parents=True, exist_ok=True)
    if case == "read-only" and os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield "chmod"
        finally:
            folder.chmod(0o755)
        return
    options = "ro,size=64k" if case == "read-only" else "size=64k"
    problem = _mount(folder, options)
    if problem is not None:
        pytest.skip(f"cannot mount a tmpfs here ({problem})")
    try:
        if case == "full disk":
            fill(folder, room)
        yield "tmpfs"
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, room: int) -> None:
    """Fill the file system of `folder`, then give back `room` bytes."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    if room:
        os.truncate(filler, max(0, filler.stat().st_size - room))


def make_writable(case: str, folder: Path, how: str) -> None:
    """Undo the fault while the engine keeps running (the person frees some disk space...)."""
    if how == "tmpfs" and case == "full disk":
        (folder / "filler").unlink()
    elif how == "tmpfs":
        subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)
    elif how == "chmod":
        folder.chmod(0o755)
    else:  # a file or a link loop where the folder should be
        folder.unlink()


CASES = ["read-only", "a file", "a link loop", "full disk"]
REASONS = {
    "a file": "the session folder is a file, not a folder",
    "a link loop": "Too many levels of symbolic links",
    "full disk": "No space left on device",
}


@pytest.mark.parametrize("case", CASES)
async def test_an_unwritable_session_folder_costs_one_warning(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "sessions"
    script = [
        Reply("Let me look.", tool_calls=[call("bash", {"command": BIG_OUTPUT}, id="c1")]),
        Reply("All done."),
    ]
    # On the full disk the first saves fit (four pages of tmpfs: the journal, its records before
    # the tool ran, /undo's snapshot record among them), and the save after the 20 KB output does
    # not.
    with unwritable(case, folder, room=16384) as how, ScriptedServer(*script) as server:
        engine = make_engine(tmp_path, server, sessions=folder)
        events = await asyncio.wait_for(turn(engine, "go"), 20)
        warnings = [e for e in of(events, EngineError)]
        assert len(warnings) == 1, warnings
        (warning,) = warnings
        assert warning.where == "session"
        assert warning.message.startswith(WARNING) and warning.message.endswith(WARNING_END)
        if how == "chmod":
            assert "Permission denied" in warning.message
        elif case == "read-only":
            assert "Read-only file system" in warning.message
        else:
            assert REASONS[case] in warning.message
        # The turn went on: the tool ran, the model heard its result and answered.
        assert events[-1].stop_reason == "end_turn"
        assert of(events, ToolCallFinished)[0].output == "x" * 20000 + "\n"
        assert server.requests[1].messages[-1]["content"] == "x" * 20000 + "\n"
        if case == "full disk":
            # The last complete state is on disk (the call without its result, which a resume
            # would answer as interrupted); the failed save left no temporary file.
            on_disk = Session.load(folder, engine.session.id)
            assert [m["role"] for m in on_disk.messages] == ["system", "user", "assistant", "tool"]
            assert on_disk.messages[-1]["content"] == INTERRUPTED
        if how in ("tmpfs", "chmod") and case != "full disk":
            assert list(folder.iterdir()) == []
        if case == "full disk":
            # the writer thread's last attempt is over (it may still hold a journal it opened)
            flush_all()
            assert sorted(p.name for p in folder.iterdir()) == [
                f"{engine.session.id}.jsonl",
                f"{engine.session.id}.meta.json",
                "filler",
            ]
        # Once the folder can be written again, the next turn saves the whole history.
        make_writable(case, folder, how)
        await next_prompt_works(engine, server)
        saved = session_loads(folder, engine.session.id)
        assert [m["role"] for m in saved.messages] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]
        assert saved.messages[3]["content"] == "x" * 20000 + "\n"
        await engine.aclose()


def _limit_file_size() -> None:  # pragma: no cover - runs in the child before exec
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))


@pytest.mark.parametrize("case", CASES)
def test_mm_print_warns_and_exits_0(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "sessions"
    script = [Reply(tool_calls=[call("bash", {"command": "echo hi"}, id="c1")]), "All done."]
    env = {"MM_SESSIONS_DIR": str(folder)}
    with ScriptedServer(*script) as server:
        args = ["--base-url", server.base_url, "--model", "m", "-p", "go"]
        try:
            with unwritable(case, folder) as how:
                result = mm(*args, cwd=tmp_path, env=env)
        except pytest.skip.Exception:
            if case != "full disk":
                raise
            # No tmpfs here: a file-size limit makes every write of the session file fail.
            folder.mkdir(exist_ok=True)
            how = "rlimit"
            result = mm(*args, cwd=tmp_path, env=env, preexec_fn=_limit_file_size)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    warnings = [line for line in lines if line.startswith(WARNING)]
    assert len(warnings) == 1, result.stdout
    assert warnings[0].endswith(WARNING_END)
    if how == "rlimit":
        assert "File too large" in warnings[0]
    elif how == "chmod":
        assert "Permission denied" in warnings[0]
    else:
        assert REASONS.get(case, "Read-only file system") in warnings[0]
    assert "    hi" in lines
    assert "All done." in lines
    assert lines[-1].startswith("⚙ 1 command(s) · ")


# --- damaged session files ----------------------------------------------------------------------


def damaged(text: str, case: str) -> bytes:
    """A journal damaged as `case` says. A torn last line is no damage (a kill mid-write): it is
    skipped, and tested apart."""
    lines = text.splitlines(keepends=True)
    if case == "a damaged line":
        lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
        return "".join(lines).encode()
    if case == "not JSON":
        return b"this is not JSON at all\nnor this\n"
    header = json.loads(lines[0])
    header["version"] = SESSION_VERSION + 1
    lines[0] = json.dumps(header) + "\n"
    lines.append(json.dumps({"type": "a record of the future", "parts": [1]}) + "\n")
    return "".join(lines).encode()


REFUSALS = {
    "a damaged line": ": not a valid session file: line 3: not JSON (",
    "not JSON": ": not a valid session file: line 1: not JSON (",
    "future version": (
        f": written by a newer mm (session format {SESSION_VERSION + 1}; this mm reads format "
        f"{SESSION_VERSION}); upgrade mm to open it"
    ),
}


def a_saved_session(folder: Path) -> Session:
    session = Session.new(folder, cwd="/somewhere", model="m", provider="p", base_url="u")
    for role, content in [("system", "be brief"), ("user", "hello"), ("assistant", "hi")]:
        session.add_message({"role": role, "content": content})
    session.add_turn(
        counters={}, usage={"prompt_tokens": 1, "completion_tokens": 1}, elapsed=0.5,
        stop_reason="end_turn",
    )  # fmt: skip
    closed = session.close()  # as mm leaves it at exit: another mm may take it up
    assert closed is not None
    closed.result(10)
    return session


@pytest.mark.parametrize("case", list(REFUSALS))
def test_resume_refuses_a_damaged_file_and_leaves_it_alone(tmp_path: Path, case: str) -> None:
    folder = tmp_path / ".mm" / "sessions"
    session = a_saved_session(folder)
    raw = damaged(session.path.read_text(encoding="utf-8"), case)
    session.path.write_bytes(raw)
    os.utime(session.path, ns=(1_000_000_000, 1_000_000_000))
    with ScriptedServer("should not be asked") as server:
        result = mm(
            "--base-url", server.base_url, "--model", "m", "--resume", session.id, "-p", "go on",
            cwd=tmp_path,
        )  # fmt: skip
        assert server.requests == []
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()  # one line, no traceback
    assert line.startswith(f"mm: {session.path}: ")
    assert REFUSALS[case] in line
    assert session.path.read_bytes() == raw
    assert session.path.stat().st_mtime_ns == 1_000_000_000
    assert sorted(p.name for p in folder.iterdir()) == [session.path.name, session.meta_path.name]


def test_latest_and_new_sessions_leave_damaged_files_alone(tmp_path: Path) -> None:
    folder = sessions_of(tmp_path)
    good = a_saved_session(folder)
    os.utime(good.path, ns=(1_000_000_000, 1_000_000_000))
    kept: dict[Path, bytes] = {}
    for case in REFUSALS:
        session = a_saved_session(folder)
        kept[session.path] = damaged(session.path.read_text(encoding="utf-8"), case)
        session.path.write_bytes(kept[session.path])
    newest = max(kept, key=lambda p: p.stat().st_mtime_ns)
    with ScriptedServer() as server:
        base = ("--base-url", server.base_url, "--model", "m")
        # `--resume` means the newest session: damaged, it is refused, not passed over.
        result = mm(*base, "--resume", "-p", "go on", cwd=tmp_path)
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"mm: {newest}: ")
        assert line.endswith(" — it is the newest session file; --resume ID opens another")
        assert server.requests == []
        # The readable one still opens by its id.
        result = mm(*base, "--resume", good.id, "-p", "go on", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert [m["content"] for m in server.requests[-1].messages][-2:] == ["hi", "go on"]
        # A new session gets a name of its own.
        result = mm(*base, "-p", "something new", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    for path, raw in kept.items():
        assert path.read_bytes() == raw
    files = journal_files(folder)
    assert len(files) == len(kept) + 2
    (new,) = [p for p in files if p not in kept and p != good.path]
    assert session_loads(folder, new.name.removesuffix(".jsonl")).messages[1] == {
        "role": "user",
        "content": "something new",
    }
    assert session_loads(folder, good.id).messages[-1]["content"] == "ok"


def test_a_format_1_session_resumes_with_the_real_program(tmp_path: Path) -> None:
    """A session file written by an mm before the journal: `--resume` converts it, the model
    gets its history, and the next resume reads the journal."""
    folder = sessions_of(tmp_path)
    folder.mkdir(parents=True)
    session_id = "20250101-100000-abcdef"
    old = {
        "id": session_id, "version": 1, "created": "2025-01-01T10:00:00.000Z",
        "updated": "2025-01-01T10:05:00.000Z", "cwd": str(tmp_path), "model": "m",
        "provider": "p", "base_url": None,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "remember 42"},
            {"role": "assistant", "content": "noted"},
        ],
        "turns": [], "errors": [],
    }  # fmt: skip
    raw = json.dumps(old, indent=1).encode()
    (folder / f"{session_id}.json").write_bytes(raw)
    with ScriptedServer("it was 42", "still 42") as server:
        base = ("--base-url", server.base_url, "--model", "m")
        for question in ("what was it?", "and now?"):
            result = mm(*base, "--resume", session_id, "-p", question, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
        first, second = server.requests
    assert [m["content"] for m in first.messages] == [
        "be brief", "remember 42", "noted", "what was it?",
    ]  # fmt: skip
    assert [m["content"] for m in second.messages][-3:] == ["what was it?", "it was 42", "and now?"]
    assert (folder / f"{session_id}.v1.json").read_bytes() == raw
    assert not (folder / f"{session_id}.json").exists()
    assert session_loads(folder, session_id).messages[-1]["content"] == "still 42"
