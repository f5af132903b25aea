"""The demo's playground: a small project in a throw-away folder, so that `mm --demo` never
writes into the person's own files. Kept apart from the demo model so that `mm --demo` creates
it without loading the engine before the first frame."""

from __future__ import annotations

import tempfile
from pathlib import Path

PLAYGROUND = {
    "README.md": """\
# greeter

A tiny project to try mm on: `greet.py` says hello, `test_greet.py` checks it.
There is a typo in the greeting; ask mm to fix it, then to run the tests.
""",
    "greet.py": '''\
"""Greets people by name."""


def greet(name: str) -> str:
    return f"Helo, {name}!"


if __name__ == "__main__":
    print(greet("world"))
''',
    "test_greet.py": """\
import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_greets_by_name(self) -> None:
        self.assertEqual(greet("Ada"), "Hello, Ada!")


if __name__ == "__main__":
    unittest.main()
""",
    ".mm/skills/python-style.md": """\
---
description: How code is written in this project
---
# Python style

Type hints on public functions, f-strings, tests beside the code with unittest.
""",
}


def make_playground(parent: Path | None = None) -> Path:
    """A throw-away folder holding a small project, so a demo never writes into real files."""
    folder = Path(tempfile.mkdtemp(prefix="mm-demo-", dir=parent))
    for name, content in PLAYGROUND.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return folder
