"""The task suite's runner (tests/e2e/suite/) counts what mm recorded, without a model: the real
`mm -p` on the scripted server, whose answers are known, so that every count is known too. A call
written in the answer's text is counted as made and as recovered from the text; a turn the bound
cut short is a timeout, never a clean end; the tables add up."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.scripted_server import Reply, ScriptedServer, call, silence_after

sys.path.append(str(Path(__file__).resolve().parents[1] / "e2e"))

from suite.report import Run, report  # noqa: E402
from suite.runner import TaskResult, run_task  # noqa: E402
from suite.tasks import TASKS, by_name  # noqa: E402

pytestmark = pytest.mark.slow
BOUND = 120.0  # a bound that a turn of the scripted server never reaches


class Scripted:
    """The scripted server as the runner sees a model server."""

    def __init__(self, server: ScriptedServer) -> None:
        self.base_url = server.base_url
        self.model_id = "scripted"
        self.n_ctx = 2048


def run(task: str, server: ScriptedServer, tmp_path: Path, seconds: float = BOUND) -> TaskResult:
    (one,) = by_name(task)
    return run_task(
        one,
        Scripted(server),
        project=tmp_path / "project",
        home=tmp_path / "home",
        seconds=seconds,
        max_turns=4,
    )


def test_a_call_from_the_text_and_a_structured_one_are_counted(tmp_path: Path) -> None:
    written = '[TOOL_CALLS]write_file[ARGS]{"path": "hello.txt", "content": "hi there\\n"}'
    with ScriptedServer() as server:
        server.script(
            Reply(written),
            Reply(tool_calls=[call("read_file", {"path": "hello.txt"})]),
            Reply("I wrote hello.txt."),
        )
        result = run("write_file", server, tmp_path)
    assert (result.stop, result.clean, result.checked) == ("end_turn", True, True)
    assert (result.calls, result.from_text) == (2, 1)
    assert [t.split()[0] for t in result.tools] == ["write_file", "read_file"]
    assert result.answer == "I wrote hello.txt."


def test_an_answer_in_words_is_checked_against_the_task(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.script(Reply("The secret word is pineapple."), Reply("It is mango."))
        right = run("secret_word", server, tmp_path / "right")
        wrong = run("secret_word", server, tmp_path / "wrong")
    assert (right.stop, right.clean, right.calls, right.checked) == ("end_turn", True, 0, True)
    assert (wrong.stop, wrong.clean, wrong.calls, wrong.checked) == ("end_turn", True, 0, False)


def test_a_turn_past_the_bound_is_a_timeout(tmp_path: Path) -> None:
    """The server sends the headers and then nothing, for longer than any test runs: only the
    bound ends the turn (one not honoured hangs until pytest's timeout)."""
    with ScriptedServer() as server:
        server.script(silence_after(0), silence_after(0))
        result = run("fix_typo", server, tmp_path, seconds=5)
    assert (result.stop, result.clean, result.calls, result.checked) == ("timeout", False, 0, False)
    assert (tmp_path / "project" / "greet.py").read_text() == 'print("Helo, world!")\n'


def test_the_tables_add_up() -> None:
    results = (
        TaskResult("a", "read", "end_turn", True, 2, 1, True, 1.0, ("bash ls", "bash pwd"), "x|y"),
        TaskResult("b", "edit", "timeout", False, 0, 0, False, 9.0, (), ""),
        TaskResult("c", "run", "max_turns", True, 4, 0, False, 3.0, ("bash a",) * 4, "z"),
    )
    text = report([Run("M", "own (gemma)", results)])
    assert "| M | own (gemma) | 3 | 2 | 6 | 1 | 1 | end_turn 1, max_turns 1, timeout 1 |" in text
    assert "| a | read | end_turn | yes | 2 (1) | yes | 1 | bash ls; bash pwd | x\\|y |" in text
    assert "| c | run | max_turns | yes | 4 (0) | no | 3 | bash a; bash a; … 2 more | z |" in text


def test_the_suite_has_twenty_tasks_or_more_with_distinct_names() -> None:
    names = [task.name for task in TASKS]
    assert len(names) >= 20 and len(set(names)) == len(names)
    assert {task.kind for task in TASKS} == {"read", "edit", "run", "rename", "write"}
