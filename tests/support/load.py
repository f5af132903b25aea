"""Busy loops on every core: the load a shared CI machine puts on the tests, on demand
(`make test-load`, and the tests of cancelling under load)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def busy_cores(per_core: int = 2) -> Iterator[None]:
    """`per_core` busy loops per core for as long as the block runs; they go with it."""
    hogs = [
        subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(per_core * (os.cpu_count() or 1))
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
