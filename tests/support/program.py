"""The real `mm` program in a subprocess, as a person runs it, in the environment of env.py."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from support.env import clean_env

MM = [sys.executable, "-m", "mm_tui.cli"]


def mm(
    *args: str,
    cwd: Path,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | bytes | None = None,
    timeout: float = 60,
    text: bool = True,
    stdin_fd: int | None = None,
    **run: Any,
) -> subprocess.CompletedProcess[Any]:
    """`mm ARGS...` in `cwd` to its end, its output captured. Its environment is `clean_env(home)`
    (`home` defaults to `cwd`) with the test's own variables `env` on top; `run` goes to
    subprocess.run (a `preexec_fn`...). Its stdin: the text `stdin` through a pipe, else the
    descriptor `stdin_fd` (a terminal, say), else nothing (/dev/null): `mm -p` reads what is
    piped to it."""
    if stdin is None:
        run["stdin"] = subprocess.DEVNULL if stdin_fd is None else stdin_fd
    return subprocess.run(
        [*MM, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=text,
        timeout=timeout,
        env=clean_env(home or cwd, env),
        **run,
    )
