"""Busy loops on every core: the load a shared CI machine puts on the tests, on demand
(`make test-load`, and the tests of cancelling under load).

Work a program does at idle priority starves while they run: clangd indexes a project in
threads of the kernel's idle class, which get no time while every core is busy, so under them
its index never ends. A test marked `idle_priority` (it needs such work done: clangd's
cross-file answers) runs with the busy loops stopped (`paused`)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

_running: list[subprocess.Popen[bytes]] = []  # the busy loops of the block under way


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
    _running.extend(hogs)
    try:
        yield
    finally:
        for hog in hogs:
            _running.remove(hog)
            hog.kill()
            hog.wait()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The busy loops under way stopped for the block, and going again after it."""
    hogs = list(_running)
    for hog in hogs:
        hog.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for hog in hogs:
            if hog.poll() is None:
                hog.send_signal(signal.SIGCONT)
