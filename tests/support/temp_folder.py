"""The test run's own temp folder, in place of the machine's.

What the tests start makes things in "the temp folder" too: `mm --demo`, and mm with no model
server, make the demo's playground (`mm-demo-…`) there and keep it three days on purpose, for a
person to look at what the demo did. A run of the tests starts hundreds, so the temp folder is
one of the run's own: TMPDIR and Python's `tempfile` point at it for the whole run, and every
child inherits TMPDIR (env.py's `clean_env` starts from this process's environment). It lives
under pytest's own folder, which pytest cleans.

`playgrounds` lists the demo's folders of a temp folder: tests/conftest.py checks that the run
left none in the machine's. `MACHINES` is the machine's own, for the few tests that need a folder
another user can reach (the run's is under pytest's, which is root's alone when root runs it).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm_tui.core.paths import PLAYGROUND_PREFIX

MACHINES = Path(tempfile.gettempdir())
"""The machine's temp folder, as it was before the run's own took its place."""


@contextlib.contextmanager
def in_place_of_the_machines(folder: Path) -> Iterator[Path]:
    """TMPDIR and `tempfile`'s folder are `folder` until the block ends, for this process and the
    processes it starts; then what they were."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(folder))
        patch.setattr(tempfile, "tempdir", str(folder))
        yield folder


def playgrounds(folder: Path) -> set[str]:
    """The names of the demo's playgrounds in `folder` (none if it cannot be read)."""
    try:
        return {name for name in os.listdir(folder) if name.startswith(PLAYGROUND_PREFIX)}
    except OSError:
        return set()
