"""Real parts for the fault tests of tests/faults/: the engine on the scripted server over a real
socket, the real `mm` program in a subprocess, and looks at /proc for what is left running.

    with ScriptedServer(Reply(tool_calls=[call("bash", {"command": "ls"})]), "done") as server:
        engine = engine_on(server, tmp_path)
        events = await turn(engine, "go")
        ...
        await next_prompt_works(engine, server)
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_server import ScriptedServer
from session_helpers import journal_files

from mm_tui.config import Settings
from mm_tui.core.events import Event, PermissionRequested, TurnEnded
from mm_tui.engine.journal import flush_all
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.session import Session
from mm_tui.engine.turn import Engine
from mm_tui.startup import tool_registry

MM = [sys.executable, "-m", "mm_tui.cli"]
SECRET_VARIABLES = ("MM_API_KEY", "OPENAI_API_KEY")


# --- the engine on the scripted server ---------------------------------------------------------


def engine_on(
    server: ScriptedServer,
    cwd: Path,
    *,
    sessions: Path | None = None,
    api_key: str | None = None,
    **settings: Any,
) -> Engine:
    """An Engine talking to `server` through the real provider client (httpx, SSE)."""
    settings.setdefault("sessionsDir", str(sessions or cwd / ".mm" / "sessions"))
    if api_key is not None:
        settings["apiKey"] = api_key
    s = Settings(**settings)
    client = OpenAIProvider(server.base_url, "scripted-model", api_key=api_key, retries=0)
    session = Session.new(
        Path(s.sessions_dir),
        cwd=str(cwd),
        model=client.model,
        provider=client.provider,
        base_url=client.base_url,
    )
    return Engine(s, client, cwd=cwd, session=session, registry=tool_registry(s, cwd))


async def turn(
    engine: Engine, text: str, answer: Callable[[PermissionRequested], Any] | None = None
) -> list[Event]:
    events: list[Event] = []

    def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, PermissionRequested) and answer is not None:
            event.future.set_result(answer(event))

    await engine.run_turn(text, emit)
    return events


def of(events: list[Event], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


async def next_prompt_works(engine: Engine, server: ScriptedServer, text: str = "and now?") -> None:
    """mm is still usable: one more turn goes to the server and ends normally."""
    server.script("still here")
    events = await asyncio.wait_for(turn(engine, text), 20)
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.stop_reason == "end_turn", end
    assert server.requests[-1].messages[-1] == {"role": "user", "content": text}


def session_loads(engine_or_folder: Engine | Path, session_id: str | None = None) -> Session:
    """The session file loads, and every tool call in it has its result."""
    if isinstance(engine_or_folder, Engine):
        folder, session_id = engine_or_folder.session.folder, engine_or_folder.session.id
    else:
        folder = engine_or_folder
    assert session_id is not None
    flush_all()
    loaded = Session.load(folder, session_id)
    assert not loaded.repaired, "the saved history was not well formed"
    return loaded


# --- the real mm program -----------------------------------------------------------------------


def env_for(home: Path, **extra: str) -> dict[str, str]:
    """The environment of an `mm` subprocess: its own HOME, no MM_* or key from the machine."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("MM_") and k not in SECRET_VARIABLES
    }
    env["HOME"] = str(home)
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    env.update(extra)
    return env


def mm(
    *args: str,
    cwd: Path,
    home: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MM, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else env_for(home or cwd),
    )


def session_files(folder: Path) -> list[Path]:
    return journal_files(folder)


# --- processes ---------------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], pgrp [2])."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [part.decode(errors="replace") for part in f.read().split(b"\0") if part]
    except OSError:
        return []


def group_members(pgid: int) -> list[int]:
    """Live processes of a process group (zombies, which are dead already, are left out)."""
    members = []
    for pid in all_pids():
        fields = _stat(pid)
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(pid)
    return members


def children(pid: int) -> list[int]:
    """Live direct children of `pid`."""
    out = []
    for child in all_pids():
        fields = _stat(child)
        if fields and fields[0] != "Z" and int(fields[1]) == pid:
            out.append(child)
    return out


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def wait_until(check: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


async def await_until(check: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(step)


def tool_groups(pid: int | None = None) -> list[int]:
    """The process groups the bash tool started under `pid` (this process by default): each
    command runs in a session of its own, led by the shell, so a group's id is the shell's pid
    (after `bash -c` has exec'd its last command, the pid is that command's)."""
    parent = os.getpid() if pid is None else pid
    groups = []
    for child in children(parent):
        fields = _stat(child)
        if fields and int(fields[2]) == child:
            groups.append(child)
    return groups


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """Imported by a test module: after each test, no process it started is still running."""
    before = set(descendants(os.getpid()))
    yield
    left: list[int] = []

    def none_left() -> bool:
        left[:] = [p for p in descendants(os.getpid()) if p not in before]
        return not left

    assert wait_until(none_left, 5), [cmdline(pid) for pid in left]
