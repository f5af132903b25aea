"""One task, run as a person runs mm unattended: the real `mm -p PROMPT --yolo` on the real
server, in the task's folder, bounded in time; then what mm recorded of the turn, read back from
its session journal (the raw JSON lines, so that the suite counts what was written):

- how the turn ended: the turn record's stop reason (`end_turn`, `max_turns`, an error's), or
  `timeout` when the bound ended mm first (its process group is killed), or `no turn` when mm
  wrote none;
- the calls: every tool call of the assistant's messages, and those mm read from the answer's
  text (the tool record's `from_text`, what front ends show as "read from the answer's text");
- the check of the task (tasks.py) on the folder and the answer's words.

The folder and the home are fixed paths, emptied for each task: the folder's name is in mm's
system prompt, so at temperature 0 the same name gives the same answers from run to run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from llama_server import command_environment
from support.env import clean_env

from suite.tasks import Outcome, Task

MM = [sys.executable, "-m", "mm_tui.cli"]
CLEAN_STOPS = ("end_turn", "max_turns")


class Server(Protocol):
    """What a task needs of the server: llama_server.LlamaServer, or a test's scripted one."""

    @property
    def base_url(self) -> str: ...

    model_id: str
    n_ctx: int


@dataclass(frozen=True)
class TaskResult:
    task: str
    kind: str
    stop: str  # the turn's stop reason, "timeout", or "no turn"
    clean: bool  # mm ended the turn itself, with end_turn or max_turns, every call answered
    calls: int
    from_text: int
    checked: bool
    seconds: float
    tools: tuple[str, ...]  # each call, in order: the tool and the start of its arguments
    answer: str  # the start of the answer's words, for the report

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__, tools=list(self.tools))


@dataclass(frozen=True)
class Journal:
    """What the session journal holds of the one turn."""

    stop: str
    messages: tuple[dict[str, Any], ...]
    from_text: int

    @property
    def calls(self) -> tuple[dict[str, Any], ...]:
        return tuple(
            call.get("function") or {}
            for m in self.messages
            if m.get("role") == "assistant"
            for call in m.get("tool_calls") or ()
        )

    @property
    def answered(self) -> bool:
        """Every call has its result."""
        ids = [c.get("id") for m in self.messages for c in m.get("tool_calls") or ()]
        results = [m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"]
        return sorted(map(str, ids)) == sorted(map(str, results))

    @property
    def answer(self) -> str:
        return "\n".join(
            m["content"]
            for m in self.messages
            if m.get("role") == "assistant" and isinstance(m.get("content"), str)
        )


def call_summary(call: dict[str, Any]) -> str:
    """A call in a few words: `bash {"command": "ls"}`, its arguments cut at 40 characters."""
    arguments = " ".join(str(call.get("arguments", "")).split())
    if len(arguments) > 40:
        arguments = arguments[:39] + "…"
    return f"{call.get('name')} {arguments}"


def read_journal(sessions: Path) -> Journal:
    """The turn as the newest journal of `sessions` holds it; an empty one when there is none."""
    files = sorted(sessions.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not files:
        return Journal("no turn", (), 0)
    stop, messages, from_text = "no turn", [], 0
    for line in files[-1].read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "message" and isinstance(record.get("message"), dict):
            messages.append(record["message"])
            from_text += (record.get("tool") or {}).get("from_text") is True
        elif kind == "turn":
            stop = str(record.get("stop_reason"))
    return Journal(stop, tuple(messages), from_text)


def prepare(task: Task, project: Path, home: Path) -> None:
    for folder in (project, home):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    for name, text in task.files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run_mm(args: list[str], cwd: Path, env: dict[str, str], seconds: float) -> bool:
    """`mm ARGS` in `cwd`; False when `seconds` passed first (its process group is killed)."""
    proc = subprocess.Popen(
        [*MM, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False
    finally:  # past the bound, or the suite itself stopped: mm's process group is killed
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def mm_environment(server: Server, home: Path, max_turns: int) -> dict[str, str]:
    """mm's environment for a task: a home of its own, its sessions in `home`/sessions,
    temperature 0, at most `max_turns` model round trips, the server's context window, and no
    TCP for the commands the model runs (no task needs it, and a small model asked for a
    version number may well try `npm install -g` of something)."""
    return clean_env(
        home,
        command_environment(server.n_ctx, {}),
        MM_TEMPERATURE="0",
        MM_MAX_TURNS=str(max_turns),
        MM_SESSIONS_DIR=str(home / "sessions"),
        MM_SANDBOX_NETWORK="false",
    )


def run_task(
    task: Task,
    server: Server,
    *,
    project: Path,
    home: Path,
    seconds: float,
    max_turns: int,
) -> TaskResult:
    """`task` once on `server`, within `seconds`. After a timeout the server may still be
    generating the answer mm left behind (llama-cpp-python finishes a non-streamed one)."""
    prepare(task, project, home)
    args = ["-p", task.prompt, "--base-url", server.base_url, "--model", server.model_id]
    began = time.monotonic()
    ended = run_mm([*args, "--yolo"], project, mm_environment(server, home, max_turns), seconds)
    elapsed = time.monotonic() - began
    journal = read_journal(home / "sessions")
    stop = journal.stop if ended else "timeout"
    calls = journal.calls
    outcome = Outcome(project, journal.answer, calls)
    return TaskResult(
        task=task.name,
        kind=task.kind,
        stop=stop,
        clean=ended and stop in CLEAN_STOPS and journal.answered,
        calls=len(calls),
        from_text=journal.from_text,
        checked=task.check(outcome),
        seconds=round(elapsed, 1),
        tools=tuple(call_summary(c) for c in calls),
        answer=" ".join(journal.answer.split())[:160],
    )
