"""core/processes.py: stopping a process group, grandchildren included."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from mm_tui.core.processes import kill_group, signal_group, signal_name, stop_group

# The child: starts a grandchild that ignores SIGTERM (it would outlive a polite stop), writes
# both pids, then sleeps. `term` says how the child itself takes SIGTERM.
CHILD = """
import os, signal, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
term = sys.argv[2]
if term == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
elif term == "note":
    def note(*_):
        open(sys.argv[1] + ".term", "w").close()
        os._exit(0)
    signal.signal(signal.SIGTERM, note)
time.sleep(0.3)  # the grandchild has set its handler
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {grandchild.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
"""


def alive(pid: int) -> bool:
    """Running: a zombie (dead, not yet reaped by whoever adopted it) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def start(tmp_path: Path, term: str) -> tuple[asyncio.subprocess.Process, int]:
    """The child, leading its own group, and its grandchild's pid once both run."""
    pids = tmp_path / "pids"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(pids), term, start_new_session=True
    )
    deadline = time.monotonic() + 20
    while not pids.exists():
        assert time.monotonic() < deadline, "the child never wrote its pids"
        await asyncio.sleep(0.02)
    child, grandchild = map(int, pids.read_text().split())
    assert child == process.pid
    return process, grandchild


@pytest.fixture
def cleanup():
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


async def test_stop_group_terms_then_kills_the_grandchild_left_behind(
    tmp_path: Path, cleanup: list[int]
) -> None:
    """The child exits on SIGTERM at once; its grandchild ignores SIGTERM and is only stopped
    by the SIGKILL that follows, sent to the group although the child is gone."""
    process, grandchild = await start(tmp_path, "note")
    cleanup.append(process.pid)
    await stop_group(process, 3600.0)  # an hour's grace: waited out, the test times out
    assert (tmp_path / "pids.term").exists()  # SIGTERM came first
    assert process.returncode == 0
    assert await gone(grandchild)


async def test_stop_group_kills_a_child_that_ignores_sigterm_after_the_grace(
    tmp_path: Path, cleanup: list[int]
) -> None:
    process, grandchild = await start(tmp_path, "ignore")
    cleanup.append(process.pid)
    started = time.monotonic()
    await stop_group(process, 0.3)
    assert time.monotonic() - started >= 0.3
    assert process.returncode == -signal.SIGKILL
    assert await gone(grandchild)


async def test_stop_group_cancelled_in_its_grace_still_kills(
    tmp_path: Path, cleanup: list[int]
) -> None:
    process, grandchild = await start(tmp_path, "ignore")
    cleanup.append(process.pid)
    task = asyncio.create_task(stop_group(process, 30.0))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.wait_for(process.wait(), 5) == -signal.SIGKILL
    assert await gone(grandchild)


async def test_kill_group_kills_at_once(tmp_path: Path, cleanup: list[int]) -> None:
    process, grandchild = await start(tmp_path, "ignore")
    cleanup.append(process.pid)
    kill_group(process)
    assert await asyncio.wait_for(process.wait(), 5) == -signal.SIGKILL
    assert await gone(grandchild)
    kill_group(process)  # again, the process reaped: no error


async def test_signal_group_of_a_group_that_is_gone_is_no_error() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "pass", start_new_session=True
    )
    await process.wait()
    signal_group(process.pid, signal.SIGKILL)
    signal_group(process.pid, 0)


def test_a_death_by_signal_is_named() -> None:
    assert signal_name(9) == "SIGKILL" and signal_name(15) == "SIGTERM"
    assert signal_name(200) == "signal 200"
