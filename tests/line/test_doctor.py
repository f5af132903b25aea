"""`mm --doctor`: the probe run now against the scripted server, each finding on its line, plain
and escaped; exit 0 when the server answered, 2 with one line saying why when it did not; its
answer kept, so that the next start asks no probe request."""

from __future__ import annotations

from pathlib import Path

from support.program import mm
from support.scripted_server import ProbeBehaviour, Reply, ScriptedServer, closed_port_url

MODEL = "scripted-model"  # the one the server lists: a model it does not list is not kept


def test_doctor_prints_each_finding_and_keeps_them(tmp_path: Path) -> None:
    with ScriptedServer(
        Reply("hello"),
        serves="llama.cpp",
        context_window=4096,
        probe=ProbeBehaviour.llama_cpp_python(),
    ) as server:
        result = mm("--doctor", "--base-url", server.base_url, "--model", MODEL, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[:2] == [f"server: {server.base_url}", f"model: {MODEL}"]
        assert lines[2].startswith("probe: done in ") and lines[2].endswith(" s")
        for line in (
            "chat: yes",
            "tools accepted: yes",
            "tool calls streamed: no",
            "several calls in one reply: yes",
            "reasoning field: none",
            "<think> tags in the content: no",
            "context window: 4,096 tokens (llama.cpp /props)",
            "how mm asks: tools, non-streamed",
        ):
            assert line in lines
        assert any(line.startswith("tokens per second: ") for line in lines)
        assert server.requests == [] and server.pending == 1
        probed = len(server.probe_requests)
        assert probed == 3
        again = mm("--base-url", server.base_url, "--model", MODEL, "-p", "hi", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert len(server.probe_requests) == probed  # the kept answer, no probe request
        assert "non-streamed" in again.stdout
        assert not server.requests[0].stream


def test_doctor_probes_again_whatever_was_kept(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        for _ in range(2):
            result = mm("--doctor", "--base-url", server.base_url, "--model", "m", cwd=tmp_path)
            assert result.returncode == 0, result.stderr
        assert len(server.probe_requests) == 4


def test_doctor_escapes_what_the_server_named(tmp_path: Path) -> None:
    with ScriptedServer(models=("evil\x1b]0;owned\x07\x1b[2J",)) as server:
        result = mm("--doctor", "--base-url", server.base_url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "model: evil\\x1b]0;owned\\x07\\x1b[2J" in result.stdout


def test_doctor_says_why_when_the_server_does_not_answer(tmp_path: Path) -> None:
    result = mm("--doctor", "--base-url", closed_port_url(), "--model", "m", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("mm --doctor: ") and "connect" in line


def test_doctor_has_no_demo_model_to_probe(tmp_path: Path) -> None:
    result = mm("--doctor", "--demo", cwd=tmp_path)
    assert result.returncode == 2
    assert "no model server to probe" in result.stderr
