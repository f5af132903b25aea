"""8. The model probe on the real server: `mm --doctor` finds what llama-cpp-python does with
tools (engine/model_probe.py), within the probe's bound, and keeps it: the next start asks the
model nothing for it and sends requests with tools non-streamed from the first."""

from __future__ import annotations

from pathlib import Path

from support.program import mm


def test_doctor_finds_that_streamed_tool_calls_are_lost(server, project: Path):
    result = mm(
        "--doctor", "--base-url", server.base_url, "--model", server.model_id,
        cwd=project, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[2].startswith("probe: done in "), result.stdout
    for line in (
        "chat: yes",
        "tools accepted: yes",
        "tool calls streamed: no",  # its empty 200 to a streamed tool call
        "how mm asks: tools, non-streamed",
    ):
        assert line in lines, result.stdout
    again = mm(
        "--base-url", server.base_url, "--model", server.model_id, "-p", "Say hello.",
        cwd=project, timeout=240,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "requests with tools go non-streamed" in again.stdout
