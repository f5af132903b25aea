"""Stopping a child process and everything it started.

mm starts its own children (an asked agent; the commands start from a launcher process, which
stops them itself when asked: core/launcher.py) with `start_new_session=True`: each leads a
process group of its own, whose id is its pid, and the processes it starts join that group
unless they start a session of their own. One signal to the group reaches them all; a signal to
the child alone would leave its helpers running (a node worker, a job the shell left behind)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Protocol


def signal_name(signum: int) -> str:
    """`SIGKILL` for 9: how a child's death by a signal is said (`signal 77` for a number that
    names none)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to every process of group `pgid`; a group that is gone already, or whose
    processes are not ours to signal, is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class Running(Protocol):
    """A started child as `kill_group` needs it: an asyncio process mm started itself (an asked
    agent). Not a command's `LaunchedProcess`: its pid comes from the launcher, which mm does not
    trust, and it is stopped through the launcher (`LaunchedProcess.kill`, `stop`)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...


def kill_group(process: Running) -> None:
    """SIGKILL, at once, to the group `process` leads, even when it has exited (what it left
    behind goes too), and to the process itself while it runs (should it have left its group).
    Waits for nothing and calls nothing of the event loop, so it also serves when the loop that
    started the process is gone."""
    signal_group(process.pid, signal.SIGKILL)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGKILL)


class Child(Protocol):
    """A started child as `stop_group` needs it: an asyncio process mm started itself (not a
    `LaunchedProcess`, see `Running`)."""

    @property
    def pid(self) -> int: ...

    async def wait(self) -> int: ...


async def stop_group(process: Child, grace: float) -> None:
    """Stop the group `process` leads: SIGTERM to the group, up to `grace` seconds for the
    process to exit, then SIGKILL to the group, which also reaches what the process left behind
    when it did exit; returns once the process is reaped. Cancelled while it waits, it still
    sends the SIGKILL."""
    pgid = process.pid  # start_new_session: the process leads its own group
    signal_group(pgid, signal.SIGTERM)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), grace)
    finally:
        signal_group(pgid, signal.SIGKILL)
    await process.wait()
