"""Helpers for the ask_agent and /ask tests: agent files pointing at scripted servers, a parent
engine on its own scripted server, and looks at the processes a test left behind.

Everything is real: the child is `mm -acp` in a subprocess, both models are the scripted
OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from scripted_server import ScriptedServer

from mm_tui.config import Settings
from mm_tui.core.events import Decision, Event, PermissionRequested
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.session import Session
from mm_tui.engine.turn import Engine
from mm_tui.startup import tool_registry

CHILD_MODEL = "child-model"
TESTS = Path(__file__).parent


def isolate(monkeypatch: Any, tmp_path: Path) -> Path:
    """No personal configuration, no MM_ variable of the person running the tests; the
    children's logs in the test's folder. Returns the working folder."""
    for name in list(os.environ):
        if name.startswith("MM_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return work


def write_agent(path: Path, server: ScriptedServer, **keys: Any) -> Path:
    """An agent file for a child on `server`; `keys` are more settings (YAML spelling)."""
    data: dict[str, Any] = {"baseUrl": server.base_url, "model": CHILD_MODEL}
    data.update(keys)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def parent_engine(cwd: Path, server: ScriptedServer, **settings: Any) -> Engine:
    """This agent: a real engine on a scripted server, its tools declared by `settings`."""
    settings.setdefault("sessionsDir", str(cwd.parent / "parent-sessions"))
    s = Settings(**settings)
    client = OpenAIProvider(server.base_url, "parent-model", retries=0)
    session = Session.new(
        cwd.parent / "parent-sessions",
        cwd=str(cwd),
        model=client.model,
        provider=client.provider,
        base_url=client.base_url,
    )
    return Engine(s, client, cwd=cwd, session=session, registry=tool_registry(s, cwd))


class Recorder:
    """An engine's `emit`: keeps every event; answers permission requests with `decide`."""

    def __init__(self, decide: Callable[[PermissionRequested], Decision] | None = None) -> None:
        self.events: list[Event] = []
        self.decide = decide
        self.seen: dict[type, asyncio.Event] = {}

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, PermissionRequested) and self.decide is not None:
            event.future.set_result(self.decide(event))
        for kind, flag in self.seen.items():
            if isinstance(event, kind):
                flag.set()

    def of(self, kind: type, agent: Any = ...) -> list[Any]:
        return [
            e for e in self.events if isinstance(e, kind) and (agent is ... or e.agent == agent)
        ]

    async def wait_for(self, kind: type, timeout: float = 60) -> None:
        flag = self.seen.setdefault(kind, asyncio.Event())
        if self.of(kind):
            return
        await asyncio.wait_for(flag.wait(), timeout)


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"  # a zombie has exited
    except OSError:
        return False


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line holds `text` (an agent file's path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


async def gone(pid: int | None, timeout: float = 10) -> bool:
    """Wait until a process has exited."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while alive(pid):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def messages_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)
