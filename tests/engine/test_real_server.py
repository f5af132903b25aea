"""The real `mm` program against the scripted OpenAI-compatible server on 127.0.0.1: the same
code path as a real local server, a `kill -9` in the middle of a turn, `--resume`."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from support.env import clean_env
from support.program import MM, mm
from support.scripted_server import (
    Reply,
    ScriptedServer,
    call,
    drop_after,
    silence_after,
    text_chunks,
)
from support.session_helpers import journal_files, sessions_of
from support.session_helpers import saved as saved_session

from mm_tui.config import Settings
from mm_tui.engine.servers import Preset
from mm_tui.engine.session import Session
from mm_tui.startup import pick_model


def sessions(cwd: Path) -> list[dict]:
    folder = sessions_of(cwd)
    return [saved_session(folder, p.name.removesuffix(".jsonl")) for p in journal_files(folder)]


def test_print_against_a_server_runs_a_tool_and_answers(tmp_path: Path) -> None:
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": "echo hi from the tool"}, id="c1")]),
        Reply("The tool said hi."),
    ) as server:
        result = mm("--base-url", server.base_url, "--model", "m1", "-p", "say hi", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "🛠️  bash: echo hi from the tool" in result.stdout
        assert "    hi from the tool" in result.stdout
        assert "The tool said hi." in result.stdout
        assert result.stdout.splitlines()[-1].startswith("⚙ 1 command(s) · ")
        first, second = server.requests
        assert first["model"] == "m1" and first.stream
        assert "bash" in first.tool_names
        assert second.messages[-1] == {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "hi from the tool\n",
        }
    (saved,) = sessions(tmp_path)
    assert [m["role"] for m in saved["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert saved["turns"][0]["counters"]["commands"] == 1


def test_without_model_the_first_listed_one_is_taken(tmp_path: Path) -> None:
    with ScriptedServer("hello", models=("first-model", "second-model")) as server:
        result = mm("--base-url", server.base_url, "-p", "hi", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert server.requests[0]["model"] == "first-model"


def test_error_after_tokens_ends_the_turn_with_a_clear_message(tmp_path: Path) -> None:
    with ScriptedServer(
        drop_after(3, text_chunks("Hello world, this is cut short", split=4))
    ) as server:
        result = mm("--base-url", server.base_url, "--model", "m", "-p", "hi", cwd=tmp_path)
    assert result.returncode == 1
    assert "Hello world," in result.stdout
    assert "[error: " in result.stdout
    (saved,) = sessions(tmp_path)
    assert saved["errors"] and saved["errors"][0]["where"] == "provider"
    # What arrived before the failure is kept.
    assert saved["messages"][-1]["role"] == "assistant"
    assert saved["messages"][-1]["content"].startswith("Hello world,")


def test_unreachable_server_fails_with_one_line(tmp_path: Path) -> None:
    from support.scripted_server import closed_port_url

    result = mm("--base-url", closed_port_url(), "-p", "hi", cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_kill_9_in_the_middle_of_a_turn_leaves_a_session_that_resumes(tmp_path: Path) -> None:
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": "echo step one"}, id="c1")]),
        silence_after(2, text_chunks("I am in the middle of", split=4)),
    ) as server:
        proc = subprocess.Popen(
            [*MM, "--base-url", server.base_url, "--model", "m", "-p", "work"],
            cwd=tmp_path,
            env=clean_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        server.wait_for_requests(2, timeout=30)
        time.sleep(0.3)  # mm is reading the silent second answer
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        (saved,) = sessions(tmp_path)
        roles = [m["role"] for m in saved["messages"]]
        assert roles == ["system", "user", "assistant", "tool"]
        assert saved["messages"][3]["content"] == "step one\n"
        assert not list(sessions_of(tmp_path).glob(".*tmp"))
        # --resume continues it: the whole history goes back to the model.
        server.script(Reply("resumed fine"))
        result = mm(
            "--base-url", server.base_url, "--model", "m", "--resume", "-p", "go on", cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        assert "resumed fine" in result.stdout
        sent = server.requests[-1].messages
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    (resumed,) = sessions(tmp_path)
    assert resumed["id"] == saved["id"]


def test_resume_an_unknown_session(tmp_path: Path) -> None:
    result = mm("--demo", "--resume", "20200101-000000-abcdef", "-p", "x", cwd=tmp_path)
    assert result.returncode == 2
    assert "no such session" in result.stderr


async def test_detection_finds_a_preset_server(tmp_path: Path) -> None:
    with ScriptedServer("hi", models=("tiny",)) as server:
        presets = (
            Preset("Ollama", "http://127.0.0.1:9/v1"),  # nothing listens on the discard port
            Preset("llama.cpp", server.base_url),
        )
        picked = await pick_model(Settings(), presets=presets)
        client, notes = picked.client, picked.notes
        assert picked.answering is True  # detection has just heard it
        assert (client.provider, client.model, client.base_url) == (
            "llama.cpp",
            "tiny",
            server.base_url,
        )
        assert notes == []
        await client.aclose()


async def test_no_server_means_the_demo_model(tmp_path: Path) -> None:
    picked = await pick_model(Settings(), presets=(Preset("Ollama", "http://127.0.0.1:9/v1"),))
    client, notes = picked.client, picked.notes
    assert client.model == "demo"
    assert "no model server found" in notes[0]


def test_session_loads_after_the_run(tmp_path: Path) -> None:
    with ScriptedServer("fine") as server:
        mm("--base-url", server.base_url, "--model", "m", "-p", "hi", cwd=tmp_path)
    (saved,) = sessions(tmp_path)
    loaded = Session.load(sessions_of(tmp_path), saved["id"])
    assert loaded.messages[-1]["content"] == "fine"
