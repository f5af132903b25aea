"""Helpers for the ask_agent and /ask tests: agent files pointing at scripted servers, a parent
engine on its own scripted server. (The looks at processes are in support/processes.py, the
isolated environment is the `work` fixture of tests/conftest.py.)

Everything is real: the child is `mm -acp` in a subprocess, both models are the scripted
OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from mm_tui.core.events import Decision, Event, PermissionRequested
from mm_tui.core.questions import Questions
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.turn import Engine
from support.engine import make_engine
from support.scripted_server import ScriptedServer

CHILD_MODEL = "child-model"
SUPPORT = Path(__file__).parent


def write_agent(path: Path, server: ScriptedServer, **keys: Any) -> Path:
    """An agent file for a child on `server`; `keys` are more settings (YAML spelling)."""
    data: dict[str, Any] = {"baseUrl": server.base_url, "model": CHILD_MODEL}
    data.update(keys)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def parent_engine(cwd: Path, server: ScriptedServer, **settings: Any) -> Engine:
    """This agent: a real engine on a scripted server (model `parent-model`), its tools
    declared by `settings`, its sessions beside the working folder."""
    client = OpenAIProvider(server.base_url, "parent-model", retries=0)
    return make_engine(cwd, client, sessions=cwd.parent / "parent-sessions", **settings)


class Recorder:
    """An engine's `emit`: keeps every event; answers permission requests with `decide`, to
    `questions` (an engine's, or a tool context's: `ctx_for` gives it this one)."""

    def __init__(
        self,
        decide: Callable[[PermissionRequested], Decision] | None = None,
        questions: Questions | None = None,
    ) -> None:
        self.events: list[Event] = []
        self.decide = decide
        self.questions = questions if questions is not None else Questions()
        self.seen: dict[type, asyncio.Event] = {}

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, PermissionRequested) and self.decide is not None:
            self.questions.answer(event.agent, event.call_id, self.decide(event))
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


def messages_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)
