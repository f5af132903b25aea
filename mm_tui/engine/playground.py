"""The demo's playground: a small project in a throw-away folder, so that `mm --demo` never
writes into the person's own files. Kept apart from the demo model so that `mm --demo` creates
it without loading the engine before the first frame."""

from __future__ import annotations

import tempfile
from pathlib import Path

from mm_tui.core.paths import PLAYGROUND_PREFIX

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


PREFIX = PLAYGROUND_PREFIX
KEPT_FOR = 3 * 24 * 3600
"""Seconds an earlier playground is kept after it was made (or an entry at its top last
changed): a person may look at what the demo did; older ones go when the next is made, so they
do not pile up in the temp folder."""


def make_playground(parent: Path | None = None) -> Path:
    """A throw-away folder holding a small project, so a demo never writes into real files.
    Playgrounds of this user older than `KEPT_FOR` are removed first."""
    where = Path(parent if parent is not None else tempfile.gettempdir())
    _remove_old(where)
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=where))
    for name, content in PLAYGROUND.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return folder


def _remove_old(where: Path) -> None:
    """Remove the playgrounds in `where` that are this user's folders (not links) and have not
    changed for `KEPT_FOR`; what cannot be removed stays, unsaid."""
    import os
    import shutil
    import stat
    import time

    limit = time.time() - KEPT_FOR
    try:
        entries = list(os.scandir(where))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mtime < limit:
            shutil.rmtree(entry.path, ignore_errors=True)
