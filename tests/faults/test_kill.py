"""kill -9 of the real `mm -p` at 20 random moments of a busy turn.

The turn streams text, composes tool calls, runs commands and rewrites the session file many
times a second; a moment picked at random lands in each of those. Every time, the session file
loads, holds every complete exchange (each message is one the finished turn would hold, in
order, and every tool call has its result once loaded), `--resume` continues it, and no
temporary file is left behind once mm runs again."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.engine import make_engine
from support.env import clean_env
from support.program import MM, mm
from support.scripted_server import (
    SSE,
    Reply,
    ScriptedServer,
    finish_chunk,
    role_chunk,
    text_chunks,
    tool_call_chunks,
)
from support.session_helpers import sessions_of
from support.waiting import wait_until

from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.session import Session
from mm_tui.engine.session_listing import latest_in

ROUNDS = 4
KILLS = 20
SEED = int(os.environ.get("MM_KILL_SEED", "9"))


def busy_turn() -> list[SSE | Reply]:
    """Four rounds of streamed text and a streamed tool call (a command that takes a moment,
    then a file write), then a streamed answer."""
    out: list[SSE | Reply] = []
    for i in range(ROUNDS):
        command = f"sleep 0.05; echo round {i}"
        chunks = [
            role_chunk(),
            *text_chunks(f"Round {i}: running a command. ", split=3),
            *tool_call_chunks(f"c{i}", "bash", {"command": command}, split=6),
            finish_chunk("tool_calls"),
        ]
        out.append(SSE(chunks, delay=0.004))
    out.append(SSE([role_chunk(), *text_chunks("All rounds are done.", 2), finish_chunk()]))
    return out


def expected_history() -> list[dict]:
    """The messages after the system prompt of the finished turn."""
    out: list[dict] = [{"role": "user", "content": "work"}]
    for i in range(ROUNDS):
        command = json.dumps({"command": f"sleep 0.05; echo round {i}"})
        out.append(
            {
                "role": "assistant",
                "content": f"Round {i}: running a command. ",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": command},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"round {i}\n"})
    out.append({"role": "assistant", "content": "All rounds are done."})
    return out


def on(server: ScriptedServer) -> list[str]:
    return ["--base-url", server.base_url, "--model", "m"]


def check_loaded(folder: Path) -> Session:
    session = latest_in(folder)
    assert session is not None
    messages = session.messages
    assert messages[0]["role"] == "system"
    wanted = expected_history()
    kept = messages[1:]
    # Loading answers calls that were interrupted; everything else is a prefix of the whole turn.
    real = [m for m in kept if "interrupted" not in str(m.get("content"))]
    assert real == wanted[: len(real)], json.dumps(kept, indent=1)
    asked = {c["id"] for m in kept for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in kept if m["role"] == "tool"}
    assert asked == answered
    return session


async def resume_in_process(server: ScriptedServer, cwd: Path, session: Session) -> None:
    """What `--resume` does, without starting a process: the loaded session and one more turn."""
    provider = OpenAIProvider(server.base_url, "m", backoff=0.01)
    engine = make_engine(cwd, provider, session=session)
    server.script(Reply("resumed"))
    ended = await engine.run_turn("go on", lambda event: None)
    await engine.aclose()
    assert ended.stop_reason == "end_turn"
    sent = server.requests[-1].messages
    assert sent[-1] == {"role": "user", "content": "go on"}
    assert len(sent) == len(session.messages) - 1  # all of it went back, then the answer came


@pytest.mark.slow  # 20 runs of the real mm, killed, and 4 resumed: about 20 s
async def test_kill_9_at_random_moments_of_a_busy_turn(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    # The moment is a request of the turn and a time into it: a time alone would land ever
    # earlier in the turn as the machine gets busier (at a load of 6, every kill of a 0-0.8 s
    # draw fell in the first two rounds). Each of the turn's requests is drawn in turn.
    rounds = [n % (ROUNDS + 1) for n in range(KILLS)]
    rng.shuffle(rounds)
    moments: list[float] = []
    kept: set[int] = set()  # how many messages each killed run left: the moments differ
    for n in range(KILLS):
        cwd = tmp_path / f"run{n}"
        cwd.mkdir()
        folder = sessions_of(cwd)
        errors = tmp_path / f"stderr{n}.txt"
        with ScriptedServer(*busy_turn()) as server, errors.open("wb") as stderr:
            proc = subprocess.Popen(
                [*MM, *on(server), "-p", "work"],
                cwd=cwd,
                env=clean_env(cwd),
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
            try:
                try:
                    server.wait_for_requests(1 + rounds[n], timeout=60)
                except TimeoutError:  # say what mm was doing: its exit status and its words
                    raise AssertionError(
                        f"run {n}: no request {1 + rounds[n]}; mm {proc.poll()!r}: "
                        f"{errors.read_bytes()!r}"
                    ) from None
                # The journal's writer thread renames the first batch into place a moment after
                # the turn starts (on a busy machine, after the request): from then on there is
                # a session to keep. A kill before it finds nothing on disk, and loses nothing.
                wait_until(lambda: list(folder.glob("*.jsonl")), 30, step=0.01)  # noqa: B023 - waited for here
                moment = rng.uniform(0.0, 0.15)  # into that request's round
                moments.append(moment)
                time.sleep(moment)  # the scenario: a random moment of the turn
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        session = check_loaded(folder)
        kept.add(len(session.messages))
        with ScriptedServer() as server:  # a fresh script for the rest
            if n % 5 == 4:  # the real --resume, and no temporary file once mm has run again
                server.script(Reply("resumed for real"))
                result = mm(*on(server), "--resume", "-p", "go on", cwd=cwd)
                assert result.returncode == 0, result.stderr
                assert "resumed for real" in result.stdout
                resumed = Session.load(folder, session.id).messages
                assert resumed[-1]["content"] == "resumed for real"
            else:
                await resume_in_process(server, cwd, session)
        assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    # The moments spread over the whole turn, not only its start.
    assert set(rounds) == set(range(ROUNDS + 1)) and max(moments) > 0.1 and min(moments) < 0.05
    assert len(kept) >= 4, kept  # killed while streaming, running tools, and between
