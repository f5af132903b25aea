"""Running a test's program as an unprivileged user as well as root.

A boundary that holds for root may still fall for a plain user (no capability to lose, the
same uid as the processes it attacks), and the other way round, so the attack tests run both.
When the tests run as root (`make test` in CI does), `plain_user()` makes sure the user
`mmplain` exists, creating it with `useradd` when missing (a system user, no home folder, no
login shell), and `as_user` runs a command as that user with `setpriv`. Not root: the tests that
need it skip, and say why.

What that user needs: an interpreter it may run with mm's dependencies. The virtual
environment's python may lead into a folder only root may enter (a pyenv under /root); then the
system's python of the same version runs, with the project and the environment's packages on
its path (both world-readable: `interpreter` checks). Its folders (home, project, temp) are made
by `folder` under /tmp, owned by it: pytest's own folders are root's, closed to others.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

NAME = "mmplain"
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class User:
    """Who runs the program: `uid` None for this process's own user."""

    label: str
    uid: int | None = None
    gid: int | None = None
    python: str = sys.executable
    pythonpath: str = ""

    def argv(self, *command: str) -> list[str]:
        """`command` as this user (as it is for this process's own)."""
        if self.uid is None:
            return list(command)
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
            *command,
        ]

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """`env` with what this user's interpreter needs to import mm."""
        if not self.pythonpath:
            return env
        return {**env, "PYTHONPATH": self.pythonpath}

    def folder(self, name: str) -> Path:
        """A new folder under /tmp this user owns (removed by `cleanup`)."""
        path = Path(tempfile.mkdtemp(prefix=f"mm-{name}-", dir="/tmp"))
        path.chmod(0o755)
        if self.uid is not None:
            os.chown(path, self.uid, self.gid or 0)
        return path

    def own(self, path: Path) -> None:
        """Give `path` and everything below it to this user."""
        if self.uid is None:
            return
        for folder, dirs, files in os.walk(path):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.chown(name, self.uid, self.gid or 0, follow_symlinks=False)


def _world_usable(path: str) -> bool:
    """Whether anyone may run `path`: every folder on the way enterable, the file readable and
    runnable by others."""
    real = Path(os.path.realpath(path))
    for folder in real.parents:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
    mode = os.stat(real).st_mode
    return bool(mode & stat.S_IROTH and mode & stat.S_IXOTH)


def interpreter() -> tuple[str, str] | None:
    """(python, PYTHONPATH) that a plain user may run mm with; None when there is none."""
    packages = sysconfig.get_paths()["purelib"]
    if not all(_world_readable_folder(folder) for folder in (packages, str(ROOT))):
        return None
    if _world_usable(sys.executable):
        return sys.executable, ""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None or not _world_usable(system):
        return None
    return system, f"{ROOT}{os.pathsep}{packages}"


def _world_readable_folder(path: str) -> bool:
    """Whether anyone may list `path` and read what is in it: every folder on the way
    enterable (a clone under /root is not), the folder itself readable and enterable."""
    real = Path(os.path.realpath(path))
    if not all(os.stat(folder).st_mode & stat.S_IXOTH for folder in real.parents):
        return False
    mode = os.stat(real).st_mode
    return bool(mode & stat.S_IXOTH and mode & stat.S_IROTH)


def plain_user() -> User:
    """The unprivileged user, made when missing; skips the test when that cannot be."""
    if os.geteuid() != 0:
        pytest.skip(f"running as a plain user needs root (the tests run as uid {os.geteuid()})")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is missing: cannot run a process as another user")
    found = interpreter()
    if found is None:
        pytest.skip(
            "no python a plain user may run with mm's dependencies (the interpreter, the "
            f"packages or the project, {ROOT}, lie in a folder others may not enter)"
        )
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0 and "already exists" not in made.stderr:
            pytest.skip(f"cannot create the user {NAME}: {made.stderr.strip()}")
        entry = pwd.getpwnam(NAME)
    python, path = found
    return User("plain user", entry.pw_uid, entry.pw_gid, python, path)


def me() -> User:
    """This process's own user (root in CI)."""
    return User("root" if os.geteuid() == 0 else "this user")


def user(which: str) -> User:
    """`me` or `plain`, for a test parametrized on both."""
    return plain_user() if which == "plain" else me()
