"""The suite's tasks: each a small project folder, a prompt, and a check of the result on disk
or in the answer. They are as small as a coding task gets (read a file and answer, fix a typo,
run the tests, rename a symbol, write a file), so that a 135M model could conceivably do them;
what the suite measures is how far mm gets a small model, not how good the model is.

A check looks only at the outcome (`Outcome`): the files of the folder after the turn, the
answer's words and the calls made. A check that runs Python (the tests, an import) runs it in
the folder with the interpreter running the suite, bounded in time.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Outcome:
    """What a task left: its folder, the assistant's words over the turn, the calls made
    (each `{"name": ..., "arguments": "<JSON text>"}`)."""

    folder: Path
    answer: str
    calls: tuple[dict[str, Any], ...] = ()

    def read(self, name: str) -> str | None:
        path = self.folder / name
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def says(self, *words: str) -> bool:
        """Every one of `words` is in the answer (case ignored)."""
        answer = self.answer.lower()
        return all(word.lower() in answer for word in words)

    def ran(self, fragment: str) -> bool:
        """A bash call's command held `fragment`."""
        for call in self.calls:
            if call.get("name") != "bash":
                continue
            if fragment in str(call.get("arguments", "")):
                return True
        return False


Check = Callable[[Outcome], bool]


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # read, edit, run, rename, write
    prompt: str
    files: Mapping[str, str] = field(default_factory=dict)
    check: Check = lambda outcome: False


def python_ok(folder: Path, *args: str) -> bool:
    """`python ARGS` in `folder` exits 0 within a minute."""
    try:
        done = subprocess.run(
            [sys.executable, *args],
            cwd=folder,
            capture_output=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def python3_version() -> str:
    """The version `python3 --version` prints here ("3.11.7"), as the task's command would."""
    try:
        done = subprocess.run(["python3", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "python3 did not run"
    words = (done.stdout or done.stderr).split()
    return words[-1] if words else "python3 printed nothing"


def number_said(outcome: Outcome, number: int, word: str) -> bool:
    """The answer names `number`, in digits (as a whole number) or as a word."""
    return bool(re.search(rf"(?<![\d.]){number}(?![\d.])", outcome.answer)) or outcome.says(word)


def lines_of(text: str | None) -> list[str]:
    return [] if text is None else [line.strip() for line in text.splitlines() if line.strip()]


def json_port(text: str | None) -> object:
    try:
        return json.loads(text or "").get("port")
    except (ValueError, AttributeError):
        return None


# -- the projects --------------------------------------------------------------------------------

CALC = "def calc(x):\n    return x + 1\n"
CALC_MAIN = "from util import calc\n\nprint(calc(2))\n"
ADD_TESTS = (
    "import unittest\n\nfrom add import add\n\n\n"
    "class AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n"
)
MATH_TESTS = (
    "import unittest\n\nfrom ops import add, subtract\n\n\n"
    "class OpsTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(1, 1), 2)\n\n"
    "    def test_subtract(self):\n        self.assertEqual(subtract(5, 3), 2)\n"
)
APP = "import sys\n\n# TODO: read the name from the command line\nprint('hi')\n"

_PRINTS_HELLO = (
    "import subprocess, sys; "
    "out = subprocess.run([sys.executable, 'hello.py'], capture_output=True, text=True, "
    "timeout=30).stdout; assert out.strip() == 'Hello', out"
)


def _todo_line(outcome: Outcome) -> bool:
    return number_said(outcome, 3, "third")


TASKS: tuple[Task, ...] = (
    Task(
        "secret_word",
        "read",
        "What is the secret word in notes.txt?",
        {"notes.txt": "Shopping list.\nThe secret word is pineapple.\n"},
        lambda o: o.says("pineapple"),
    ),
    Task(
        "count_lines",
        "read",
        "How many lines does fruits.txt have?",
        {"fruits.txt": "apple\nbanana\ncherry\n"},
        lambda o: number_said(o, 3, "three"),
    ),
    Task(
        "package_version",
        "read",
        "What version is written in package.json?",
        {"package.json": '{\n  "name": "demo",\n  "version": "1.4.2"\n}\n'},
        lambda o: o.says("1.4.2"),
    ),
    Task(
        "which_file",
        "read",
        "Which file defines the function parse_date?",
        {
            "dates.py": "def parse_date(text):\n    return text.split('-')\n",
            "names.py": "def parse_name(text):\n    return text.title()\n",
            "main.py": "from dates import parse_date\n",
        },
        lambda o: o.says("dates.py"),
    ),
    Task(
        "todo_line",
        "read",
        "On which line of app.py is the TODO comment?",
        {"app.py": APP},
        _todo_line,
    ),
    Task(
        "list_files",
        "read",
        "List the files in this folder.",
        {"alpha.txt": "a\n", "beta.txt": "b\n", "gamma.txt": "c\n"},
        lambda o: o.says("alpha.txt", "beta.txt", "gamma.txt"),
    ),
    Task(
        "count_items",
        "read",
        "How many items are in todo.txt?",
        {"todo.txt": "- buy milk\n- call mum\n- water plants\n- pay rent\n"},
        lambda o: number_said(o, 4, "four"),
    ),
    Task(
        "fix_typo",
        "edit",
        "Fix the typo in greet.py.",
        {"greet.py": 'print("Helo, world!")\n'},
        lambda o: 'print("Hello, world!")' in (o.read("greet.py") or ""),
    ),
    Task(
        "fix_syntax",
        "edit",
        "Fix the syntax error in broken.py.",
        {"broken.py": 'print("ok"\n'},
        lambda o: python_ok(o.folder, "broken.py"),
    ),
    Task(
        "fix_bug",
        "edit",
        "The tests in test_add.py fail. Fix add.py so that they pass.",
        {"add.py": "def add(a, b):\n    return a - b\n", "test_add.py": ADD_TESTS},
        lambda o: (
            o.read("test_add.py") == ADD_TESTS and python_ok(o.folder, "-m", "unittest", "-q")
        ),
    ),
    Task(
        "change_port",
        "edit",
        "Change the port in config.json to 9000.",
        {"config.json": '{\n  "host": "localhost",\n  "port": 8000\n}\n'},
        lambda o: json_port(o.read("config.json")) == 9000,
    ),
    Task(
        "append_line",
        "edit",
        "Add the line cherry at the end of fruits.txt.",
        {"fruits.txt": "apple\nbanana\n"},
        lambda o: lines_of(o.read("fruits.txt")) == ["apple", "banana", "cherry"],
    ),
    Task(
        "remove_line",
        "edit",
        "Remove the line DEBUG = True from settings.py.",
        {"settings.py": "NAME = 'demo'\nDEBUG = True\nPORT = 8000\n"},
        lambda o: lines_of(o.read("settings.py")) == ["NAME = 'demo'", "PORT = 8000"],
    ),
    Task(
        "uppercase_word",
        "edit",
        "In message.txt, change the word hello to HELLO.",
        {"message.txt": "hello from the suite\n"},
        lambda o: lines_of(o.read("message.txt")) == ["HELLO from the suite"],
    ),
    Task(
        "add_function",
        "edit",
        "Add a function double(x) that returns x * 2 to math_utils.py.",
        {"math_utils.py": "def half(x):\n    return x / 2\n"},
        lambda o: python_ok(
            o.folder, "-c", "from math_utils import double, half; assert double(3) == 6"
        ),
    ),
    Task(
        "run_tests",
        "run",
        "Run the tests with python -m unittest and tell me how many passed.",
        {"add.py": "def add(a, b):\n    return a + b\n", "test_add.py": ADD_TESTS},
        lambda o: o.ran("unittest") and number_said(o, 2, "two"),
    ),
    Task(
        "failing_test",
        "run",
        "Run the tests with python -m unittest and tell me which test fails.",
        {
            "ops.py": "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return b - a\n",
            "test_ops.py": MATH_TESTS,
        },
        lambda o: o.ran("unittest") and o.says("test_subtract"),
    ),
    Task(
        "python_version",
        "run",
        "Run python3 --version and tell me what it prints.",
        {"readme.txt": "A folder for trying commands.\n"},
        lambda o: o.ran("--version") and o.says(python3_version()),
    ),
    Task(
        "rename_function",
        "rename",
        "Rename the function calc to compute, in util.py and in main.py.",
        {"util.py": CALC, "main.py": CALC_MAIN},
        lambda o: (
            "calc" not in (o.read("util.py") or "calc") + (o.read("main.py") or "calc")
            and python_ok(o.folder, "-c", "from util import compute; assert compute(2) == 3")
            and python_ok(o.folder, "main.py")
        ),
    ),
    Task(
        "rename_file",
        "rename",
        "Rename old_name.txt to new_name.txt.",
        {"old_name.txt": "keep me\n"},
        lambda o: o.read("old_name.txt") is None and o.read("new_name.txt") == "keep me\n",
    ),
    Task(
        "write_file",
        "write",
        "Create a file hello.txt containing the text: hi there",
        {"readme.txt": "An empty project.\n"},
        lambda o: lines_of(o.read("hello.txt")) == ["hi there"],
    ),
    Task(
        "write_markdown",
        "write",
        "Create a file docs/index.md whose first line is the heading # Docs",
        {"readme.txt": "A project without docs yet.\n"},
        lambda o: lines_of(o.read("docs/index.md"))[:1] == ["# Docs"],
    ),
    Task(
        "copy_file",
        "write",
        "Copy a.txt to b.txt.",
        {"a.txt": "one\ntwo\n"},
        lambda o: o.read("b.txt") == "one\ntwo\n" and o.read("a.txt") == "one\ntwo\n",
    ),
    Task(
        "write_script",
        "write",
        "Write a Python script hello.py that prints Hello.",
        {"readme.txt": "An empty project.\n"},
        lambda o: python_ok(o.folder, "-c", _PRINTS_HELLO),
    ),
)


def by_name(names: str | None) -> tuple[Task, ...]:
    """The tasks named (comma-separated), in the suite's order; all of them for None."""
    if not names:
        return TASKS
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {task.name: task for task in TASKS}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ValueError(f"no such task: {', '.join(unknown)} (tasks: {', '.join(known)})")
    return tuple(known[n] for n in wanted)
