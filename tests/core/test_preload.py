"""core/preload.py: a module loaded in a thread while the loop's thread loads its package.

The race, made certain: the package's loader holds its lock and waits, before the package is in
`sys.modules`, until the preload thread asks for the package's lock too. Loading `pkg.sub.leaf`
by its whole name, the thread then holds the locks of `pkg.sub.leaf` and `pkg.sub` while it waits
for `pkg`, whose code loads `pkg.sub`: Python's deadlock error, in one thread or the other (as an
ACP `session/new` once failed: its model probe preloaded `httpcore._backends.anyio` while a
request built httpx's first client). Run in a child process: it changes Python's import locks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import importlib.machinery as machinery
import sys
import threading

import _frozen_importlib as bootstrap

from mm_tui.core.preload import preload

asked = threading.Event()  # the preload thread asked for the lock of `pkg`
acquire = bootstrap._ModuleLock.acquire


def noting_acquire(lock):
    if threading.current_thread().name == "preloader" and lock.name == "pkg":
        asked.set()
    return acquire(lock)


bootstrap._ModuleLock.acquire = noting_acquire


class WaitingLoader(machinery.SourceFileLoader):
    def create_module(self, spec):
        preload("preloader", "pkg.sub.leaf")
        if not asked.wait(60):
            raise SystemExit("the preload thread never asked for pkg")


class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "pkg":
            return None
        spec = machinery.PathFinder.find_spec(name, path)
        spec.loader = WaitingLoader(spec.loader.name, spec.loader.path)
        return spec


sys.meta_path.insert(0, Finder)
import pkg

for thread in threading.enumerate():
    if thread.name == "preloader":
        thread.join()
print("leaf loaded" if "pkg.sub.leaf" in sys.modules else "leaf missing")
"""


def test_a_module_preloaded_while_its_package_loads_on_the_loop(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("from . import sub\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "leaf.py").write_text("VALUE = 1\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=80,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert "DeadlockError" not in done.stderr
    assert (done.returncode, done.stdout.strip()) == (0, "leaf loaded"), done.stderr
