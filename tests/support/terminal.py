"""The real `mm` in a real terminal: a detached tmux session, keys sent to it, its screen read
back with capture-pane:

    with mm_in_tmux(tmp_path, "burst", "--demo") as session:
        tmux("send-keys", "-t", session, "list the files", "Enter")
        screen = until_screen(session, "command(s)")
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from support.env import clean_env

MM_SCRIPT = Path(sys.executable).parent / "mm"  # the console script a person runs
# A tmux server of the tests' own (`-L`: its own socket), never the person's: their sessions are
# not listed, their options not read, and nothing here can kill them.
SERVER = f"mm-tests-{os.getpid()}"


def tmux(*args: str) -> subprocess.CompletedProcess[str]:
    command = ["tmux", "-L", SERVER, "-f", os.devnull, *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def kill_server() -> None:
    """The tests' tmux server goes, with any session a test left on it, and its socket: tmux
    leaves the socket of a server that exited when its last session closed."""
    tmux("kill-server")
    folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
    (folder / SERVER).unlink(missing_ok=True)


def screen_of(session: str, *, scrollback: bool = False, escapes: bool = False) -> str:
    """What the session's pane shows; with `scrollback`, the lines scrolled out of it too; with
    `escapes`, the colours as escape sequences."""
    args = ["capture-pane", "-t", session, "-p"]
    if scrollback:
        args += ["-S", "-"]
    if escapes:
        args.append("-e")
    return tmux(*args).stdout


def until_screen(
    session: str,
    condition: str | Callable[[str], bool],
    what: str = "",
    timeout: float = 30.0,
    *,
    scrollback: bool = False,
) -> str:
    """The screen once it holds `condition` (a text, or a test of the whole screen); fails
    with the last screen seen after `timeout` seconds."""
    test = (lambda screen: condition in screen) if isinstance(condition, str) else condition
    deadline = time.monotonic() + timeout
    while True:
        screen = screen_of(session, scrollback=scrollback)
        if test(screen):
            return screen
        if time.monotonic() >= deadline:
            wanted = what or repr(condition)
            raise AssertionError(f"{wanted} never showed; the screen was:\n{screen}")
        time.sleep(0.1)


def session_exists(session: str) -> bool:
    return tmux("has-session", "-t", session).returncode == 0


def env_prefix(env: Mapping[str, str]) -> str:
    """`env -i NAME=value...`: what follows it runs in exactly `env` (the tmux server's own
    environment, which may be an older run's or the developer's, is not inherited)."""
    return "env -i " + " ".join(shlex.quote(f"{name}={value}") for name, value in env.items())


@contextlib.contextmanager
def tmux_session(name: str, script: str, size: tuple[int, int] = (100, 30)) -> Iterator[str]:
    """A detached tmux session of `size` running the shell `script`; yields its name (which holds
    this process's id: runs side by side do not meet) and kills it at the end. The script goes
    through a file: the environment it sets can be longer than a tmux command may be."""
    session = f"mm-{name}-{os.getpid()}"
    fd, path = tempfile.mkstemp(prefix="mm-tmux-", suffix=".sh")
    with os.fdopen(fd, "w") as f:
        f.write(script + "\n")
    width, height = size
    try:
        command = f"sh {shlex.quote(path)}"
        for _ in range(3):
            started = tmux(
                "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), command
            )
            # The private server exits with its last session (the test before killed it): a
            # client that reached it as it exited is told so, and the next one starts a server.
            if "server exited unexpectedly" not in started.stderr:
                break
        assert started.returncode == 0, started.stderr
        yield session
    finally:
        tmux("kill-session", "-t", session)
        os.unlink(path)


def mm_script(
    folder: Path, *args: str, env: Mapping[str, str] | None = None, home: Path | None = None
) -> str:
    """The shell line that runs the real `mm ARGS` in `folder`, in `clean_env(home or folder)`
    with `env` on top."""
    argv = " ".join(shlex.quote(str(a)) for a in (MM_SCRIPT, *args))
    return (
        f"cd {shlex.quote(str(folder))} && exec {env_prefix(clean_env(home or folder, env))} {argv}"
    )


@contextlib.contextmanager
def mm_in_tmux(
    folder: Path, name: str, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """`mm ARGS` in a 100x30 terminal working in `folder` (HOME there too, `env` on top of the
    tests' environment), up to its first prompt; yields the tmux session's name."""
    with tmux_session(name, mm_script(folder, *args, env=env)) as session:
        until_screen(session, "Type a request")
        yield session
