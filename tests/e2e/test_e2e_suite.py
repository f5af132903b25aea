"""The task suite (suite/run.py, `make e2e-suite`) cannot rot unseen: two of its tasks on SmolLM2
under chatml-function-calling, through the suite's own command line, its own server and the real
`mm -p`. What the model makes of them is the suite's to measure, not this test's: it checks that
the tables come out and that their counts agree with each other and with the JSON results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).parent / "suite" / "run.py"
TASKS = ("secret_word", "write_file")
SUMMARY_ROW = re.compile(
    r"^\| SmolLM2-135M-Instruct \| chatml-function-calling \| (\d+) \| (\d+) \| (\d+) \| (\d+) "
    r"\| (\d+) \| ([^|]+) \|$",
    re.M,
)


@pytest.mark.timeout(600)
def test_the_suite_runs_two_tasks_and_its_counts_agree(tmp_path: Path):
    results = tmp_path / "results.json"
    args = ["--models", "smollm2", "--formats", "chatml-function-calling"]
    args += ["--tasks", ",".join(TASKS), "--task-seconds", "40", "--max-turns", "2"]
    args += ["--json", str(results)]
    done = subprocess.run(
        [sys.executable, str(RUN), *args],
        capture_output=True,
        text=True,
        timeout=540,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    (row,) = SUMMARY_ROW.findall(done.stdout)
    tasks, clean, calls, from_text, checked = map(int, row[:5])
    assert tasks == len(TASKS)
    assert 0 <= clean <= tasks and 0 <= checked <= tasks and 0 <= from_text <= calls
    stops = dict(part.rsplit(" ", 1) for part in row[5].strip().split(", "))
    assert sum(map(int, stops.values())) == tasks, row

    (run,) = json.loads(results.read_text(encoding="utf-8"))["runs"]
    per_task = run["results"]
    assert [r["task"] for r in per_task] == list(TASKS)
    assert sum(r["calls"] for r in per_task) == calls
    assert sum(r["from_text"] for r in per_task) == from_text
    assert sum(r["clean"] for r in per_task) == clean
    assert sum(r["checked"] for r in per_task) == checked
    assert all(len(r["tools"]) == r["calls"] for r in per_task)
    # The task-by-task table: a row per task, in order.
    rows = re.findall(r"^\| (\w+) \| (?:read|edit|run|rename|write) \|", done.stdout, re.M)
    assert rows == list(TASKS)
    # Every task's progress line, with the machine's load.
    assert done.stderr.count("(load ") == len(TASKS), done.stderr
