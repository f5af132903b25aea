"""One table of journal records of every kind, as mm writes them (and as earlier versions did),
for every reader of a journal: `core.conversation` itself, the window's resume, ACP's
session/load. `ENTRIES` is what the conversation reader makes of `RECORDS`."""

from __future__ import annotations

from typing import Any

from mm_tui.core.conversation import (
    INTERRUPTED,
    AgentSaid,
    Call,
    CallResult,
    Compacted,
    Entry,
    ErrorSaid,
    ModelSwitched,
    Shortened,
    TurnDone,
    Undone,
    UserSaid,
)
from mm_tui.core.events import Counters, Usage

HEADER: dict[str, Any] = {
    "type": "session",
    "version": 2,
    "id": "table",
    "created": "2026-12-05T06:00:00Z",
    "cwd": "/project",
    "model": "scripted-model",
    "provider": "llama.cpp",
    "base_url": "http://127.0.0.1:8080/v1",
}


def message(message: dict[str, Any], **beside: Any) -> dict[str, Any]:
    return {"type": "message", "message": message, **beside}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


SYSTEM = {"role": "system", "content": "you are mm"}
# the history as sent after a compaction, whose old outputs are then shortened
SENT: list[dict[str, Any]] = [
    {"role": "assistant", "content": None, "tool_calls": [call("0", "bash", "{}")]},
    {"role": "tool", "tool_call_id": "0", "content": "a.py\n"},
    {"role": "tool", "tool_call_id": "0", "content": "[error: bad arguments]"},
]

RECORDS: list[dict[str, Any]] = [
    HEADER,
    message({"role": "system", "content": "you are mm"}),
    message({"role": "user", "content": [{"type": "text", "text": "fix "}, {"text": "it"}]}),
    message(
        {
            "role": "assistant",
            "content": "Looking.",
            # a small server counts ids from 0 at each answer: the same id twice
            "tool_calls": [call("0", "bash", '{"command": "ls"}'), call("0", "bash", "{bad")],
        },
        thought="list first",
    ),
    message(
        {"role": "tool", "tool_call_id": "0", "content": "a.py\n"},
        tool={"status": "ok", "elapsed": 0.25, "title": "bash  ls"},
    ),
    message(
        {"role": "tool", "tool_call_id": "0", "content": "[error: bad arguments]"},
        tool={"status": "error", "elapsed": 0},
    ),
    message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("e1", "edit_file", '{"path": "a.py"}'),
                call("k1", "ask_agent", '{"agent": "helper"}'),
                call("old", "bash", '{"command": "true"}'),
                call("gone", "bash", '{"command": "sleep 9"}'),
            ],
        }
    ),
    message(
        {"role": "tool", "tool_call_id": "e1", "content": "edited a.py"},
        tool={"status": "ok", "elapsed": 0.5, "diff": "--- a/a.py\n+++ b/a.py\n"},
    ),
    message(
        {"role": "tool", "tool_call_id": "k1", "content": "the whole answer"},
        tool={"status": "ok", "elapsed": 3, "display": "helper answered (16 characters)"},
    ),
    # an earlier mm's result: no status (done), and the answer to a call a kill left open
    message({"role": "tool", "tool_call_id": "old", "content": "fine"}),
    {"type": "error", "where": "provider", "message": "[error: server gone]"},
    {"type": "error", "where": "session", "level": "warning", "message": "[warning: disk]"},
    {
        "type": "turn",
        "counters": {"commands": 3, "file_ops": 1},
        "usage": {"prompt_tokens": 120, "completion_tokens": 30},
        "elapsed": 4.5,
        "stop_reason": "error",
        "context_used": 1500,
        "context_window": 4096,
    },
    {
        "type": "compaction",
        "summary": "We fixed a.py.",
        "replaced": 9,
        "auto": True,
        "tokens_before": 3900,
        "tokens_after": 200,
        "messages": [{"role": "system", "content": "you are mm\n\nSummary: We fixed a.py."}],
    },
    {"type": "history", "messages": [SYSTEM, *SENT]},
    {"type": "shortened", "index": 2, "cut": 1000, "message": {**SENT[1], "content": "a…"}},
    {"type": "shortened", "index": 3, "cut": 500, "message": {**SENT[2], "content": "[…"}},
    {"type": "something_later", "what": "a later mm's record"},
    {"type": "model", "model": "bigger-model", "previous": "scripted-model"},
    {"type": "snapshot", "turn": 2, "snapshot": "20261205-060000-0a1b2c3d"},
    {
        "type": "undo",
        "snapshot": "20261205-060000-0a1b2c3d",
        "before": "20261205-060100-4e5f6a7b",
        "turn": 2,
        "turns": 1,
        "redo": False,
        "text": "undo: undone (1 turn): 1 restored",
        "note": "[mm: the person ran /undo: restored a.py]",
    },
    message({"role": "user", "content": "thanks"}),
    message({"role": "assistant", "content": "You're welcome."}),
    {"type": "turn", "counters": {}, "usage": {}, "elapsed": 0.5, "stop_reason": "end_turn"},
]

ENTRIES: list[Entry] = [
    UserSaid(text="fix it"),
    AgentSaid(
        text="Looking.",
        thought="list first",
        calls=(
            Call(
                call_id="0",
                name="bash",
                arguments='{"command": "ls"}',
                result=CallResult(
                    status="ok", output="a.py\n", shown="a.py\n", elapsed=0.25, title="bash  ls"
                ),
            ),
            Call(
                call_id="0",
                name="bash",
                arguments="{bad",
                result=CallResult(
                    status="error",
                    output="[error: bad arguments]",
                    shown="[error: bad arguments]",
                    elapsed=0.0,
                ),
            ),
        ),
    ),
    AgentSaid(
        text="",
        thought="",
        calls=(
            Call(
                call_id="e1",
                name="edit_file",
                arguments='{"path": "a.py"}',
                result=CallResult(
                    status="ok",
                    output="edited a.py",
                    shown="edited a.py",
                    diff="--- a/a.py\n+++ b/a.py\n",
                    elapsed=0.5,
                ),
            ),
            Call(
                call_id="k1",
                name="ask_agent",
                arguments='{"agent": "helper"}',
                result=CallResult(
                    status="ok",
                    output="the whole answer",
                    shown="helper answered (16 characters)",
                    elapsed=3.0,
                ),
            ),
            Call(
                call_id="old",
                name="bash",
                arguments='{"command": "true"}',
                result=CallResult(status="ok", output="fine", shown="fine"),
            ),
            Call(
                call_id="gone",
                name="bash",
                arguments='{"command": "sleep 9"}',
                result=CallResult(status="cancelled", output=INTERRUPTED, shown=INTERRUPTED),
            ),
        ),
    ),
    ErrorSaid(message="[error: server gone]", level="error"),
    ErrorSaid(message="[warning: disk]", level="warning"),
    TurnDone(
        counters=Counters(commands=3, file_ops=1),
        usage=Usage(120, 30),
        elapsed=4.5,
        stop_reason="error",
        context_used=1500,
        context_window=4096,
    ),
    Compacted(
        summary="We fixed a.py.", replaced=9, auto=True, tokens_before=3900, tokens_after=200
    ),
    Shortened(cut=1000),
    Shortened(cut=500),
    ModelSwitched(model="bigger-model", previous="scripted-model"),
    Undone(text="undo: undone (1 turn): 1 restored"),
    UserSaid(text="thanks"),
    AgentSaid(text="You're welcome.", thought=""),
    TurnDone(counters=Counters(), usage=Usage(0, 0), elapsed=0.5, stop_reason="end_turn"),
]
